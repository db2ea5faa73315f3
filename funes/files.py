"""Writing a file so that a reader finds the old file (or none) or the whole new one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes | str, mode: int | None = 0o644, *, durable: bool = True) -> None:
    """Write ``data`` (a str as UTF-8) to ``path``: a temp file in the same folder,
    renamed over ``path``, so no reader ever sees half of it and a failed write
    leaves nothing behind.  A file replaced keeps its permissions; a new one gets
    ``mode`` (None: private to its owner, as :func:`tempfile.mkstemp` makes it).
    ``durable``: flushed to disk before the rename, so a crash cannot leave an
    empty file under the name (a cache that is rebuilt when lost need not pay
    for that)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        keep = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        keep = mode
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".funes-tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        if keep is not None:
            os.chmod(temporary, keep)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
