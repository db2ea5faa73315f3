"""Chunks → vectors with the pinned model: per session, and the backlog."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import dagster as dg
import numpy as np

from funes.indexing import ParsedUnit, embed_backlog, vectors_for_new
from funes.pipelines.resources import EmbedderResource, MemoryResource

from funes.assets.ingest import SESSION_CHAIN


@dg.asset(**SESSION_CHAIN, io_manager_key="run_memory", kinds={"onnx"})
def chunk_embeddings(
    context: dg.AssetExecutionContext,
    redacted_chunks: dict[str, ParsedUnit | None],
    memory: MemoryResource,
    embedder: EmbedderResource,
) -> dict[str, np.ndarray]:
    """Vectors for the chunks the memory does not hold yet (chunk id → vector)."""
    chunks = [c for item in redacted_chunks.values() if item is not None for c in item.chunks]
    if not chunks:
        context.add_output_metadata({"embedded": 0})
        return {}
    vectors = vectors_for_new(memory.stored_ids(), embedder.embedder(), chunks)
    context.add_output_metadata({"embedded": len(vectors), "device": embedder.embedder().device})
    return vectors


class DenseBackfillConfig(dg.Config):
    budget_s: float = 600.0  # stop after this long; the next materialisation resumes


@dg.asset(group_name="index", deps=["memory_chunks"], pool="lance_writer", kinds={"onnx", "lance"})
def dense_backfill(context: dg.AssetExecutionContext, config: DenseBackfillConfig, memory: MemoryResource,
                   embedder: EmbedderResource) -> dg.MaterializeResult:
    """Vectors for rows stored lexical-only (a bulk first index), text first, in
    bounded, resumable steps: the backlog is the rows whose vector is still null."""
    with memory.writer() as writer:
        done = embed_backlog(writer, embedder.embedder(), budget_s=config.budget_s)
        pending = writer.pending_count()
    return dg.MaterializeResult(metadata={"embedded": done, "pending": pending})
