"""Receipts: what this host knows a remote holds of its memory, as of its last push.

After each push the ids of the local chunks the remote holds (pushed now or before, from
here or elsewhere) are written to ``$FUNES_HOME/state/hub/<endpoint>/<org>/<repo>/
receipts/<memory>.json``.  ``funes status`` compares the local memory with it to say what
this host has not pushed yet, without asking the Hub; a missing receipt also marks a
first push from this memory, which the wrong-memory guard watches.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.config import state_dir
from funes.hub.repo import URI_PREFIX, HubRemote
from funes.memory.location import MemoryLocation

if TYPE_CHECKING:
    from funes.memory.store import Memory


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

    @classmethod
    def load(cls, location: MemoryLocation, remote: HubRemote) -> Receipt | None:
        return _read(receipt_path(location, remote))

    def save(self, location: MemoryLocation, remote: HubRemote) -> None:
        path = receipt_path(location, remote)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"remote": self.remote, "endpoint": self.endpoint, "memory": self.memory, "commit": self.commit,
                "pushed_at": self.pushed_at, "ids": sorted(self.ids)}
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)


def receipts_for(location: MemoryLocation) -> list[Receipt]:
    """Every remote this memory was pushed to from this host."""
    root = state_dir() / "hub"
    found = (_read(path) for path in root.glob(f"**/receipts/{_memory_key(location)}.json")) if root.is_dir() else ()
    return sorted((r for r in found if r is not None and r.memory == location.uri), key=lambda r: r.remote)


def _read(path: Path) -> Receipt | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Receipt(remote=data["remote"], endpoint=data["endpoint"], memory=data["memory"],
                       commit=data["commit"], pushed_at=data["pushed_at"], ids=frozenset(data["ids"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def push_backlog(memory: Memory) -> list[dict[str, Any]]:
    """Per remote this memory was pushed to from here: the local chunks and sessions it
    does not hold yet (for a project memory, among that repository's sessions)."""
    from funes.hub.curation import SESSION_COLUMNS, Curation, ProjectSessions

    receipts = receipts_for(memory.location)
    if not receipts:
        return []
    rows = memory.scan(SESSION_COLUMNS)
    session_of = dict(zip(rows.column("id").to_pylist(), rows.column("session_id").to_pylist(), strict=True))
    backlog = []
    for receipt in receipts:
        remote = HubRemote(receipt.remote.removeprefix(URI_PREFIX), receipt.endpoint)
        project = Curation.load(remote).project
        eligible: Iterable[str] = session_of
        if project:
            eligible = [chunk for ids in ProjectSessions.from_rows(rows, project).chunks.values() for chunk in ids]
        missing = [chunk for chunk in eligible if chunk not in receipt.ids]
        backlog.append({"remote": receipt.remote, "endpoint": receipt.endpoint, "project": project,
                        "commit": receipt.commit, "pushed_at": receipt.pushed_at,
                        "unpushed_chunks": len(missing),
                        "unpushed_sessions": len({session_of[chunk] for chunk in missing})})
    return backlog
