"""Jobs over the asset graph."""

from __future__ import annotations

import dagster as dg


# The per-session chain, materialised together: its intermediate values (turns,
# chunks, vectors) go through the chain store on the memory's storage, so the
# executor is the code location's (funes.pipelines.definitions).
INDEX_CHAIN = ["session_turns", "redacted_chunks", "chunk_embeddings", "memory_chunks"]

index_sessions = dg.define_asset_job(
    "index_sessions",
    selection=dg.AssetSelection.assets(*INDEX_CHAIN),
    description="Index sessions: parse, redact, embed and store their chunks.",
)

maintain_memory = dg.define_asset_job(
    "maintain_memory",
    selection=dg.AssetSelection.assets("memory_maintenance"),
)

# Each known session's transcript signature as raw_traces' data version, so the
# UI shows which partitions of the chain a changed transcript made stale.
observe_traces = dg.define_asset_job("observe_traces", selection=dg.AssetSelection.assets("raw_traces"),
                                     description="Observe the transcripts behind the session partitions.")
