"""Chunks and vectors → the Lance `chunks` table and its BM25 index."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
from typing import Optional

import dagster as dg
import numpy as np

from funes.assets.chain_store import CHAIN_VALUES, ChainStore
from funes.assets.metadata import stage_metadata
from funes.assets.resources import MemoryResource
from funes.indexing import SessionChunks, settle_store, store_stage

from funes.assets.ingest import SESSION_CHAIN


@dg.asset(**SESSION_CHAIN, pool="lance_writer", kinds={"lance"})
def memory_chunks(
    context: dg.AssetExecutionContext,
    redacted_chunks: dict[str, Optional[SessionChunks]],
    chunk_embeddings: dict[str, dict[str, np.ndarray]],
    memory: MemoryResource,
) -> None:
    """The sessions' chunks stored (merge on id: nothing stored twice) and made
    searchable, then the sessions recorded as indexed; the chain's values for
    these partitions are discarded (parsed turns are not yet redacted)."""
    sessions = [item for item in redacted_chunks.values() if item is not None]
    vectors = {cid: vector for per_session in chunk_embeddings.values() for cid, vector in per_session.items()}
    with memory.writer() as writer:
        store_stage(writer, sessions, vectors)
        settle_store(writer)
        version = writer.version
    for item in sessions:
        context.add_asset_metadata({**stage_metadata("memory_chunks", item.report), "table_version": version},
                                   partition_key=item.report.key)
    for key in context.partition_keys:
        if redacted_chunks.get(key) is None:
            context.add_asset_metadata({"unchanged": True, "table_version": version}, partition_key=key)
    ChainStore(memory.location()).discard(CHAIN_VALUES, context.partition_keys)
