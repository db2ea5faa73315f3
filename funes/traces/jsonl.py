"""Reading JSON Lines transcripts that agents are still writing.

Rules (shared/specs/agent-traces.md §2): decode UTF-8 with replacement, strip each
line, skip blanks, skip lines that are not JSON objects (each with a counted
warning naming file and line), tolerate a partial last line, and surface read
errors as :class:`TraceReadError` so the file is retried later instead of being
recorded as an empty session.  ``.jsonl.zst`` files (newer Codex) are
decompressed on the fly.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
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
                record = json.loads(text)
            except ValueError:
                message = "partial last line (still being written?)" if not complete else "not JSON"
                warnings.append(ParseWarning(source, index + 1, message))
                continue
            if not isinstance(record, dict):
                warnings.append(ParseWarning(source, index + 1, f"not a JSON object ({type(record).__name__})"))
                continue
            yield index, record
