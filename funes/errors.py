"""User-facing failures.

Every error a user can cause or fix (bad input, missing memory, busy writer…) is a
:class:`FunesError`.  The CLI prints ``funes: <message>`` on one line and exits with the
error's ``exit_code``; anything else is a bug and keeps its traceback.  Exit codes are
documented in docs/contract.md.
"""

from __future__ import annotations

import errno


class FunesError(Exception):
    """A failure the user can act on; ``str(error)`` is the one-line message."""

    exit_code = 1


class UsageError(FunesError):
    """A wrong flag, value or argument."""

    exit_code = 2


class MemoryMissingError(FunesError):
    """No memory (or an empty one) where one was expected."""

    exit_code = 3


class MemoryIncompatibleError(FunesError):
    """A memory built with another embedding model or a damaged table."""

    exit_code = 4


class MemoryDamagedError(FunesError):
    """A memory whose files cannot all be read (`funes repair` restores it)."""

    exit_code = 4


class WriterBusyError(FunesError):
    """Another process holds the memory's writer lock."""

    exit_code = 5


class RemoteError(FunesError):
    """A remote memory (Hub, object store) could not be reached or read."""

    exit_code = 6


class TraceReadError(FunesError):
    """A transcript could not be read (permission, vanished, locked database).

    Retryable: the unit is left unindexed so a later run tries again; it is never
    recorded as an empty session.
    """

    exit_code = 1


# How the disk refuses a write: by errno; by the text Lance's Rust errors carry (they
# reach Python without an errno); by SQLite's result code (an I/O error on a write:
# under a file size limit SQLite reports SQLITE_IOERR_*, not SQLITE_FULL).
_REFUSED_WRITES = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                   errno.EFBIG: "a file grew past the size the system allows"}
_REFUSED_TEXT = {"No space left on device": errno.ENOSPC, "database or disk is full": errno.ENOSPC,
                 "Disk quota exceeded": errno.EDQUOT, "File too large": errno.EFBIG}
_REFUSED_SQLITE = {"SQLITE_FULL": "the disk is full", "SQLITE_IOERR_WRITE": "the disk refused a write",
                   "SQLITE_IOERR_SHMSIZE": "the disk refused a write", "SQLITE_IOERR_TRUNCATE": "the disk refused a write",
                   "SQLITE_IOERR_FSYNC": "the disk refused a write"}


def refused_write(error: BaseException) -> str | None:
    """Why the file system refused a write, or None when ``error`` is something else."""
    code = getattr(error, "errno", None)
    if code in _REFUSED_WRITES:
        return _REFUSED_WRITES[code]
    sqlite_name = getattr(error, "sqlite_errorname", None)
    if sqlite_name in _REFUSED_SQLITE:
        return _REFUSED_SQLITE[sqlite_name]
    code = next((c for text, c in _REFUSED_TEXT.items() if text in str(error)), None)
    return _REFUSED_WRITES.get(code) if code is not None else None

def bounded_int(name: str, value: int, low: int, high: int) -> int:
    """``value`` when it is an integer from ``low`` to ``high``, else a usage error that says the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{name} must be an integer from {low:,} to {high:,}, got {shown(value)}")
    return value


def positive_number(name: str, value: float, unit: str) -> float:
    """``value`` when it is a finite number above 0 (NaN and infinities are not numbers of days)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name} must be a positive number of {unit}, got {shown(value)}")
    return value


def shown(value: object, limit: int = 60) -> str:
    """``value`` as an error message quotes it: repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(str(value)):,} characters)"
