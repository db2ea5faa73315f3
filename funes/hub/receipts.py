"""Receipts: what this host knows a remote holds of its memory, as of its last push.

After each push the ids of the local chunks the remote holds (pushed now or before, from
here or elsewhere) and the sessions they belong to are written to
``$FUNES_HOME/state/hub/<endpoint>/<org>/<repo>/receipts/<memory>.json``, with when the
push read this memory's tombstones and scrub records and whether an earlier commit of the
repo still holds rows a push from here removed.  ``funes status`` compares the local
memory with it to say what this host has not pushed yet, and what the remote still holds
that was forgotten or scrubbed here, without asking the Hub; a missing receipt also marks
a first push from this memory, which the wrong-memory guard watches.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from funes.config import state_dir
from funes.files import write_atomically
from funes.hub.repo import HubRemote
from funes.memory.location import MemoryLocation


def _memory_key(location: MemoryLocation) -> str:
    return hashlib.sha1(location.uri.encode()).hexdigest()[:16]


def receipt_path(location: MemoryLocation, remote: HubRemote) -> Path:
    return state_dir() / "hub" / remote.key / "receipts" / f"{_memory_key(location)}.json"


@dataclass(frozen=True)
class Receipt:
    remote: str  # hf://datasets/<org>/<repo>
    endpoint: str
    memory: str  # the local memory's uri
    commit: str  # the remote head after the push
    pushed_at: str  # ISO 8601, UTC
    ids: frozenset[str]  # local chunk ids the remote holds
    # Session keys (<harness>--<session_id>) of those chunks; None in a receipt written
    # before funes recorded them.
    sessions: frozenset[str] | None = None
    # When the push read the memory's tombstones and scrub records (Unix time): what was
    # forgotten or scrubbed later is not reflected on the remote yet.
    checked_at: float = 0.0
    # A push from here removed rows from the head and the repo's history was not squashed
    # since (by a push from here): earlier commits still hold them.
    history_holds_removed: bool = False

    @classmethod
    def load(cls, location: MemoryLocation, remote: HubRemote) -> Receipt | None:
        return _read(receipt_path(location, remote))

    def save(self, location: MemoryLocation, remote: HubRemote) -> None:
        data = {"remote": self.remote, "endpoint": self.endpoint, "memory": self.memory, "commit": self.commit,
                "pushed_at": self.pushed_at, "ids": sorted(self.ids), "sessions": sorted(self.sessions or ()),
                "checked_at": self.checked_at, "history_holds_removed": self.history_holds_removed}
        write_atomically(receipt_path(location, remote), json.dumps(data))


@dataclass(frozen=True)
class Removals:
    """What was removed from a memory here: tombstoned session keys and scrubbed chunk
    ids, each with when (Unix time).  Read from its coverage, never from a remote."""

    forgotten: dict[str, float]
    scrubbed: dict[str, float]

    @classmethod
    def of(cls, location: MemoryLocation) -> Removals:
        from funes.memory.coverage import Coverage

        if not location.coverage_path.exists():  # a memory that was only read keeps no coverage
            return cls({}, {})
        coverage = Coverage(location.coverage_path)
        try:
            return cls(coverage.forgotten_since(), coverage.scrubbed())
        finally:
            coverage.close()

    def left_on(self, receipt: Receipt) -> dict[str, Any]:
        """What the remote of ``receipt`` still holds of it, as far as this host knows."""
        if receipt.sessions is not None:
            forgotten = [key for key in self.forgotten if key in receipt.sessions]
        else:
            forgotten = [key for key, at in self.forgotten.items() if at > receipt.checked_at]
        scrubbed = [chunk for chunk, at in self.scrubbed.items() if at > receipt.checked_at and chunk in receipt.ids]
        return {"forgotten_sessions": len(forgotten), "scrubbed_chunks": len(scrubbed),
                "history_purged": not receipt.history_holds_removed,
                "holds_removed": bool(forgotten or scrubbed or receipt.history_holds_removed),
                "checked": "receipts"}


def receipts_for(location: MemoryLocation) -> list[Receipt]:
    """Every remote this memory was pushed to from this host."""
    root = state_dir() / "hub"
    found = (_read(path) for path in root.glob(f"**/receipts/{_memory_key(location)}.json")) if root.is_dir() else ()
    return sorted((r for r in found if r is not None and r.memory == location.uri), key=lambda r: r.remote)


def _read(path: Path) -> Receipt | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        sessions = data.get("sessions")
        checked_at = data.get("checked_at")
        if checked_at is None:  # an older receipt: the push's own time is close enough
            checked_at = datetime.fromisoformat(data["pushed_at"].replace("Z", "+00:00")).timestamp()
        return Receipt(remote=data["remote"], endpoint=data["endpoint"], memory=data["memory"],
                       commit=data["commit"], pushed_at=data["pushed_at"], ids=frozenset(data["ids"]),
                       sessions=None if sessions is None else frozenset(sessions), checked_at=float(checked_at),
                       history_holds_removed=bool(data.get("history_holds_removed", False)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
