"""Resources: the memory (Lance table + BM25 index), the embedding model and
where transcripts are found.

Lance writes its own files, so the memory is a resource the assets call, not an
IO manager; the values handed from stage to stage go through the chain store
(:mod:`funes.assets.chain_store`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from funes.discovery import discover, units_for_keys
from funes.embedding import DENSE_TIERS, IDENTITY, INT8_TIERS, Embedder, load_embedder
from funes.errors import MemoryMissingError
from funes.indexing import open_writer
from funes.memory.coverage import Coverage
from funes.memory.location import MemoryLocation, location_for
from funes.memory.reader import Memory, stored_ids
from funes.memory.writer import MemoryWriter
from funes.traces.model import SourceUnit

TRACE_ROOTS_ENV = "FUNES_TRACE_ROOTS"


class MemoryResource(dg.ConfigurableResource):
    """The memory to write: ``local`` ($FUNES_HOME/memory), a folder, or s3://…"""

    memory: str = "local"
    lock_wait_s: float = 60.0

    def location(self) -> MemoryLocation:
        return location_for(self.memory)

    @contextmanager
    def writer(self, *, allow_other_model: bool = False) -> Iterator[MemoryWriter]:
        with open_writer(self.location(), wait_s=self.lock_wait_s, allow_other_model=allow_other_model) as writer:
            yield writer

    def reader(self) -> Memory:
        return Memory.open(self.location())

    def stored_ids(self) -> set[str]:
        return stored_ids(self.location())

    def vector_policy(self) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
        """The tiers the memory embeds, those it embeds at int8 on CPU, and whether
        it embeds a tool result after its call (a memory not written yet gets the
        defaults, which it is created with)."""
        try:
            reader = self.reader()
        except MemoryMissingError:
            return DENSE_TIERS, INT8_TIERS, True
        return reader.dense_tiers, reader.int8_tiers, reader.results_read_calls


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


def trace_roots_from_env() -> list[str]:
    """``$FUNES_TRACE_ROOTS``: folders of transcripts, separated by ``os.pathsep``."""
    return [root for root in os.environ.get(TRACE_ROOTS_ENV, "").split(os.pathsep) if root]


class TracesResource(dg.ConfigurableResource):
    """Where a session partition's transcript is found: the agent homes on the
    machine running the step, then the ``roots`` (folders of transcripts, local or
    on storage every machine mounts, default ``$FUNES_TRACE_ROOTS``)."""

    roots: list[str] = []

    def all_units(self) -> list[SourceUnit]:
        """Every unit in the agent homes and under the roots (an unreadable one is
        left for the next look)."""
        units = discover(errors=[])
        for root in self.roots:
            if Path(root).exists():
                units += discover(Path(root), errors=[])
        return units

    def resolve(self, keys: Sequence[str], memory: MemoryLocation) -> tuple[dict[str, SourceUnit], list[str]]:
        """(the units behind ``keys``, what could not be read while looking): under
        the paths ``memory``'s coverage recorded, the agent homes, the roots."""
        coverage = Coverage(memory.coverage_path)
        try:
            paths = {key: state.path for key, state in coverage.states(keys).items()}
        finally:
            coverage.close()
        errors: list[str] = []
        units = units_for_keys(keys, paths=paths, roots=[Path(root) for root in self.roots], errors=errors)
        return units, errors

    def places(self) -> str:
        """Where :meth:`resolve` looks, for messages."""
        return "the agent homes of this machine" + "".join(f", {root}" for root in self.roots)
