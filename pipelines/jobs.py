"""Jobs over the asset graph."""

from __future__ import annotations

import dagster as dg


# The per-session chain, materialised together: its intermediate values (turns,
# chunks, vectors) live in the run's memory.
INDEX_CHAIN = ["session_turns", "redacted_chunks", "chunk_embeddings", "memory_chunks"]

index_sessions = dg.define_asset_job(
    "index_sessions",
    selection=dg.AssetSelection.assets(*INDEX_CHAIN),
    executor_def=dg.in_process_executor,
    description="Index sessions: parse, redact, embed and store their chunks.",
)

maintain_memory = dg.define_asset_job(
    "maintain_memory",
    selection=dg.AssetSelection.assets("memory_maintenance"),
    executor_def=dg.in_process_executor,
)
