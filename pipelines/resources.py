"""Resources: the memory (Lance table + BM25 index) and the embedding model.

Lance writes its own files, so it is a resource the assets call, not an IO
manager; intermediate values of one run (turns, chunks, vectors) stay in memory.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from funes.embedding import IDENTITY, Embedder, load_embedder
from funes.errors import MemoryMissingError
from funes.memory.location import MemoryLocation, location_for
from funes.memory.store import Memory, MemoryWriter


class MemoryResource(dg.ConfigurableResource):
    """The memory to write: ``local`` ($FUNES_HOME/memory), a folder, or s3://…"""

    memory: str = "local"
    lock_wait_s: float = 60.0

    def location(self) -> MemoryLocation:
        return location_for(self.memory)

    @contextmanager
    def writer(self, *, allow_other_model: bool = False) -> Iterator[MemoryWriter]:
        with MemoryWriter.open(self.location(), IDENTITY.to_metadata(), dim=IDENTITY.dim,
                               wait_s=self.lock_wait_s, allow_other_model=allow_other_model) as writer:
            yield writer

    def reader(self) -> Memory:
        return Memory.open(self.location())

    def stored_ids(self) -> set[str]:
        """Chunk ids already stored (none when the memory does not exist yet)."""
        try:
            reader = self.reader()
        except MemoryMissingError:
            return set()
        return set(reader.scan(["id"]).column("id").to_pylist())


@functools.cache
def _embedder(device: str) -> Embedder:
    return load_embedder(device)


class EmbedderResource(dg.ConfigurableResource):
    """The pinned embedding model; CUDA when present, else CPU (``auto``)."""

    device: str = "auto"

    def embedder(self) -> Embedder:
        return _embedder(self.device)

    def identity_metadata(self) -> dict[str, str]:
        return IDENTITY.to_metadata()
