"""Reading JSON Lines transcripts that agents are still writing.

Rules every JSON Lines parser follows: decode UTF-8 with replacement, strip each
line, skip blanks, skip lines that are not JSON objects (each with a counted
warning naming file and line), tolerate a partial last line, and surface read
errors as :class:`TraceReadError` so the file is retried later instead of being
recorded as an empty session.  ``.jsonl.zst`` files are decompressed
on the fly.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from funes.errors import TraceReadError
from funes.traces.model import ParseWarning


def _open(path: Path) -> BinaryIO:
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller's context
    if path.name.endswith(".zst"):
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
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


def decode_json(text: str) -> Any:
    """``json.loads`` that raises only ValueError (also for nesting too deep to
    decode) and never returns lone surrogates (they become U+FFFD)."""
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc
    if "\\ud" in text or "\\uD" in text:  # only escaped surrogates can decode to lone ones
        try:
            value = _replace_lone_surrogates(value)
        except RecursionError as exc:
            raise ValueError("JSON nested too deeply") from exc
    return value


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
        index = -1
        while True:
            try:
                line = handle.readline()
            except OSError as exc:
                raise TraceReadError(f"cannot read {source}: {exc.strerror or exc}") from exc
            except Exception as exc:  # zstandard raises its own error type on corrupt frames
                raise TraceReadError(f"cannot read {source}: {exc}") from exc
            if not line:
                return
            index += 1
            complete = line.endswith(b"\n")
            text = line.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                record = decode_json(text)
            except ValueError:
                message = "partial last line (still being written?)" if not complete else "not JSON"
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


def first_record(path: Path) -> dict[str, Any] | None:
    """The file's first JSON object, or None (also when the file cannot be read):
    what discovery peeks at to name a session without parsing the whole file."""
    try:
        for _, record in read_records(path, []):
            return record
    except TraceReadError:
        return None
    return None
