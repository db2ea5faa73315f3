"""Opening a memory for reading, wherever it lives.

``local`` (or nothing), a folder, or ``s3://…`` open directly; a Hub memory
(``org/repo``, ``hf://datasets/…``) is first materialised into the local HF
cache, pinned to the repo's head commit, by :mod:`funes.hub.reader` (which says
when the head is resolved again)."""

from __future__ import annotations

from funes.memory.location import MemoryLocation, check_spec, location_for, looks_like_repo_id
from funes.memory.reader import Memory


def resolve(spec: str | None) -> MemoryLocation:
    if spec and (spec.startswith("hf://") or looks_like_repo_id(spec)):
        from funes.hub.reader import hub_location

        check_spec(spec)
        return hub_location(spec)
    return location_for(spec)


def open_memory(spec: str | None) -> Memory:
    return Memory.open(resolve(spec))
