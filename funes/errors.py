"""User-facing failures.

Every error a user can cause or fix (bad input, missing memory, busy writer…) is a
:class:`FunesError`.  The CLI prints ``funes: <message>`` on one line and exits with the
error's ``exit_code``; anything else is a bug and keeps its traceback.  Exit codes are
documented in docs/contract.md.
"""

from __future__ import annotations


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
