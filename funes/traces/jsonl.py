"""Reading JSON Lines transcripts that agents are still writing.

Rules every JSON Lines parser follows: decode UTF-8 with replacement, strip each
line, skip blanks, skip lines that are not JSON objects (each with a counted
warning naming file and line), tolerate a partial last line, and surface read
errors as :class:`TraceReadError` so the file is retried later instead of being
recorded as an empty session.  ``.jsonl.zst`` files are decompressed on the fly,
every frame of them; one whose last frame stops short is read to where it stops,
with a warning.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO

from funes.errors import TraceReadError
from funes.traces.model import ParseWarning


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of every zstd frame in ``raw``, in order.

    zstandard's ``stream_reader`` ends a frame cut short as if the file ended there,
    so a truncated file would read as complete; here :attr:`cut_short` says so once
    the input is exhausted inside a frame."""

    # Compressed bytes fed at a time: what one call decompresses is held at once, and
    # transcripts compress about tenfold.
    _CHUNK = 1 << 14

    def __init__(self, raw: BinaryIO):
        import zstandard

        self._raw, self._context = raw, zstandard.ZstdDecompressor()
        self._frame: Any = None
        self._out, self._at = b"", 0
        self.cut_short = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at == len(self._out):
            data = self._raw.read(self._CHUNK)
            if not data:
                self.cut_short = self._frame is not None and not self._frame.eof
                return 0
            out = []
            while data:  # a chunk can end one frame and start the next
                if self._frame is None or self._frame.eof:
                    self._frame = self._context.decompressobj()
                out.append(self._frame.decompress(data))
                data = self._frame.unused_data if self._frame.eof else b""
            self._out, self._at = b"".join(out), 0
        n = min(len(buffer), len(self._out) - self._at)
        buffer[:n] = memoryview(self._out)[self._at:self._at + n]
        self._at += n
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open(path: Path) -> BinaryIO:
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller's context
    if path.name.endswith(".zst"):
        return io.BufferedReader(_ZstdFrames(raw))
    return raw


# Agents written in JavaScript can cut a string inside a UTF-16 surrogate pair and
# still write valid JSON ("\\ud83d"); Python decodes that to a lone surrogate, which
# no UTF-8 encoder downstream (Arrow, Lance, the terminal) accepts.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# What converting a well-formed JSON value of an unexpected shape can raise: the
# parsers catch exactly these per record and turn them into warnings.
SHAPE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)


def _replace_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    return value


# The C scanner json.loads ends in, called directly: for a value without surrounding
# whitespace it returns what json.loads does, without loads' three Python-level calls
# and two whitespace matches (~2 us a record, a tenth of a short transcript line's parse).
_SCAN_VALUE = json.JSONDecoder().scan_once


def decode_json(text: str) -> Any:
    """``json.loads`` that raises only ValueError (also for nesting too deep to
    decode) and never returns lone surrogates (they become U+FFFD)."""
    try:
        try:
            value, end = _SCAN_VALUE(text, 0)
            if end != len(text):
                raise ValueError("trailing text")
        except (StopIteration, ValueError):
            # Whitespace around the value, or not JSON: json.loads decides, and
            # raises its own error (with position) for what it rejects.
            value = json.loads(text)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc
    if "\\u" in text and ("\\ud" in text or "\\uD" in text):  # only escaped surrogates decode to lone ones
        try:
            value = _replace_lone_surrogates(value)
        except RecursionError as exc:
            raise ValueError("JSON nested too deeply") from exc
    return value


@cache
def _rust_json() -> Callable[[bytes | str], Any]:
    # Imported on first use: pydantic_core (a dependency of mcp's, and of the MCP server's
    # argument checks) takes ~0.1 s to import, which only a parse should pay.
    from pydantic_core import from_json

    return from_json


def decode_json_fast(data: bytes | str) -> Any:
    """What :func:`decode_json` returns for ``data`` (bytes read as UTF-8, invalid sequences
    replaced), three times as fast on transcript events: pydantic_core's JSON parser (jiter)
    decodes what it accepts to the same values (same numbers, last duplicate key wins) and
    refuses, with ValueError or TypeError, exactly what decode_json must handle itself: lone
    surrogates, invalid UTF-8, nesting deeper than 200, and text that is not JSON."""
    try:
        return _rust_json()(data)
    except (ValueError, TypeError):
        return decode_json(data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data)


def read_records(path: Path, warnings: list[ParseWarning]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_index, record)`` for every line that holds a JSON object.

    ``line_index`` is the 0-based physical line number, stable when the file grows,
    which is what positional turn ids are built from.  Skipped lines append a
    :class:`ParseWarning` to ``warnings``.
    """
    source = str(path)
    try:
        handle = _open(path)
    except OSError as exc:
        raise TraceReadError(f"cannot read {source}: {exc.strerror or exc}") from exc
    with handle:
        index, complete = -1, True
        while True:
            try:
                line = handle.readline()
            except OSError as exc:
                raise TraceReadError(f"cannot read {source}: {exc.strerror or exc}") from exc
            except Exception as exc:  # zstandard raises its own error type on corrupt frames
                raise TraceReadError(f"cannot read {source}: {exc}") from exc
            if not line:
                if getattr(getattr(handle, "raw", None), "cut_short", False):
                    # Where the decompressed text stops: the partial line, or the one after.
                    warnings.append(ParseWarning(source, index + 1 + complete,
                                                 "compressed file cut short (still being written?)"))
                return
            index += 1
            complete = line.endswith(b"\n")
            text = line.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                record = decode_json(text)
            except ValueError:
                message = "partial last line (still being written?)" if not line.endswith(b"\n") else "not JSON"
                warnings.append(ParseWarning(source, index + 1, message))
                continue
            if not isinstance(record, dict):
                warnings.append(ParseWarning(source, index + 1, f"not a JSON object ({type(record).__name__})"))
                continue
            yield index, record


def each_record(path: Path, warnings: list[ParseWarning], handle: Callable[[int, dict[str, Any]], None]) -> None:
    """Call ``handle(line_index, record)`` for every JSON object in ``path``.

    A record whose fields have unexpected types makes ``handle`` fail half-way; that
    costs the record (a warning naming file and line), never the session.
    """
    for index, record in read_records(path, warnings):
        try:
            handle(index, record)
        except SHAPE_ERRORS as exc:
            warnings.append(
                ParseWarning(str(path), index + 1, f"unexpected record shape ({type(exc).__name__}: {exc})")
            )


def message_objects(path: Path, messages: Iterable[Any], warnings: list[ParseWarning]
                    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(index, where, message)`` for every object in a JSON document's messages
    array, ``where`` being ``messages[<index>]`` (what warnings about it name); an
    item that is no object costs a warning."""
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, dict):
            yield index, where, message
        else:
            warnings.append(ParseWarning(str(path), 0, f"{where}: not an object"))


def shape_warning(path: Path, where: str, exc: Exception) -> ParseWarning:
    """The warning for one item of a document that has an unexpected shape (one of
    SHAPE_ERRORS raised while converting it): it costs that item, not the session."""
    return ParseWarning(str(path), 0, f"{where}: unexpected shape ({type(exc).__name__}: {exc})")


def first_record(path: Path) -> dict[str, Any] | None:
    """The file's first JSON object, or None (also when the file cannot be read):
    what discovery peeks at to name a session without parsing the whole file."""
    try:
        for _, record in read_records(path, []):
            return record
    except TraceReadError:
        return None
    return None
# --- Whole-file JSON documents that agents rewrite in place ------------------------------

_JSON_WS = re.compile(r"[ \t\n\r]*")


def _salvage_items(text: str, start: int) -> list[Any]:
    """The complete items of the JSON array whose ``[`` ends at ``start``, up to
    where the text stops being valid JSON."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    at = _JSON_WS.match(text, start).end()  # type: ignore[union-attr]
    while at < len(text) and text[at] != "]":
        try:
            item, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            break
        items.append(item)
        at = _JSON_WS.match(text, at).end()  # type: ignore[union-attr]
        if at < len(text) and text[at] == ",":
            at = _JSON_WS.match(text, at + 1).end()  # type: ignore[union-attr]
        else:
            break
    return items


def load_json_file(path: Path, warnings: list[ParseWarning], items_key: str | None = None) -> Any:
    """The JSON document in ``path``, or None (with a warning) when it is not JSON.

    Agents that rewrite a whole file each turn without a rename can be read
    mid-write.  A truncated document still yields its complete leading items: a
    top-level array's, or those of the array under ``items_key`` of a top-level
    object (returned as ``{items_key: [...]}``), with a warning saying so.  A read
    error is a :class:`TraceReadError`, so the file is retried later.
    """
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceReadError(f"cannot read {source}: {exc.strerror or exc}") from exc
    text = raw.decode("utf-8", errors="replace")
    try:
        return decode_json(text)
    except ValueError as exc:
        reason = str(exc).split(":")[0]
        line = getattr(exc, "lineno", 0)
    head = _JSON_WS.match(text).end()  # type: ignore[union-attr]
    salvaged: Any = None
    if text.startswith("[", head):
        salvaged = _salvage_items(text, head + 1)
    elif items_key and text.startswith("{", head):
        match = re.search(r'"' + re.escape(items_key) + r'"\s*:\s*\[', text)
        if match:
            salvaged = {items_key: _salvage_items(text, match.end())}
    if salvaged is None:
        warnings.append(ParseWarning(source, line, f"not JSON ({reason})"))
        return None
    count = len(salvaged) if isinstance(salvaged, list) else len(salvaged[items_key])
    warnings.append(ParseWarning(source, line, f"truncated JSON (still being written?): kept {count} complete items"))
    return _replace_lone_surrogates(salvaged) if "\\ud" in text or "\\uD" in text else salvaged
