"""Chunks and vectors → the Lance `chunks` table and its BM25 index."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import dagster as dg
import numpy as np

from funes.indexing import ParsedUnit, commit_parsed
from funes.pipelines.resources import MemoryResource

from funes.assets.ingest import SESSION_CHAIN


@dg.asset(**SESSION_CHAIN, pool="lance_writer", kinds={"lance"})
def memory_chunks(
    context: dg.AssetExecutionContext,
    redacted_chunks: dict[str, ParsedUnit | None],
    chunk_embeddings: dict[str, np.ndarray],
    memory: MemoryResource,
) -> dg.MaterializeResult:
    """The sessions' chunks stored (merge on id: nothing stored twice) and made
    searchable, then the sessions recorded as indexed."""
    parsed = [item for item in redacted_chunks.values() if item is not None]
    with memory.writer() as writer:
        added, skipped = commit_parsed(writer, parsed, chunk_embeddings)
        version = writer.version
    return dg.MaterializeResult(metadata={
        "chunks_added": added,
        "chunks_already_stored": skipped,
        "sessions_indexed": len(parsed),
        "table_version": version,
    })
