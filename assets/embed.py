"""Chunks → vectors with the pinned model: per session, and the backlog."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
from typing import Optional

import dagster as dg
import numpy as np

from funes.assets.metadata import by_tier
from funes.assets.resources import EmbedderResource, MemoryResource
from funes.indexing import SessionChunks, embed_backlog, embed_stage, tiers_embedded

from funes.assets.ingest import SESSION_CHAIN


@dg.asset(**SESSION_CHAIN, kinds={"onnx"})
def chunk_embeddings(
    context: dg.AssetExecutionContext,
    redacted_chunks: dict[str, Optional[SessionChunks]],
    memory: MemoryResource,
    embedder: EmbedderResource,
) -> dict[str, dict[str, np.ndarray]]:
    """Per session, vectors for the chunks the memory does not hold yet (chunk id → vector)."""
    known, (tiers, int8_tiers, read_calls) = memory.stored_ids(), memory.vector_policy()
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, item in redacted_chunks.items():
        out[key] = (embed_stage([item], known, embedder.embedder(), tiers, int8_tiers, read_calls)
                    if item is not None and item.chunks else {})
        if item is not None:
            embedded = tiers_embedded(item.chunks, out[key].keys())
            context.add_asset_metadata({"embedded": sum(embedded.values()), "embedded_by_tier": by_tier(embedded)},
                                       partition_key=key)
    return out


class DenseBackfillConfig(dg.Config):
    budget_s: float = 600.0  # stop after this long; the next materialisation resumes


@dg.asset(group_name="index", deps=["memory_chunks"], pool="lance_writer", kinds={"onnx", "lance"})
def dense_backfill(context: dg.AssetExecutionContext, config: DenseBackfillConfig, memory: MemoryResource,
                   embedder: EmbedderResource) -> dg.MaterializeResult:
    """Vectors for rows stored lexical-only (a bulk first index), text first, in
    bounded, resumable steps: the backlog is the rows whose vector is still null,
    of the tiers the memory embeds."""
    from funes.indexing import IndexReport

    report = IndexReport()
    with memory.writer() as writer:
        embed_backlog(writer, embedder.embedder(), budget_s=config.budget_s, report=report)
        pending = writer.pending_count()
    return dg.MaterializeResult(metadata={"embedded": report.embedded, "embedded_by_tier": by_tier(report.backlog_by_tier),
                                          "pending": pending})
