"""The Dagster code location (``workspace.yaml`` loads ``defs`` from here)."""

from __future__ import annotations

import dagster as dg

from funes.assets.embed import chunk_embeddings, dense_backfill
from funes.assets.ingest import redacted_chunks, session_turns
from funes.assets.maintenance import memory_maintenance
from funes.assets.publication import hub_publication, publication_schedule, publish_memory
from funes.assets.store import memory_chunks
from funes.pipelines.automation import hourly_sweep, transcript_sensor
from funes.pipelines.checks import embedding_model_pinned, no_unredacted_secrets
from funes.pipelines.jobs import index_sessions, maintain_memory
from funes.pipelines.resources import EmbedderResource, MemoryResource

defs = dg.Definitions(
    assets=[session_turns, redacted_chunks, chunk_embeddings, memory_chunks, dense_backfill, memory_maintenance,
            hub_publication],
    asset_checks=[no_unredacted_secrets, embedding_model_pinned],
    jobs=[index_sessions, maintain_memory, publish_memory],
    sensors=[transcript_sensor, dg.AutomationConditionSensorDefinition(
        "maintenance_automation", target=dg.AssetSelection.assets(memory_maintenance))],
    schedules=[hourly_sweep, publication_schedule],
    resources={
        "memory": MemoryResource(memory=dg.EnvVar("FUNES_MEMORY").get_value("local") or "local"),
        "embedder": EmbedderResource(device=dg.EnvVar("FUNES_DEVICE").get_value("auto") or "auto"),
        "run_memory": dg.mem_io_manager,
    },
    # Tiny runs on a laptop: one process per run (the multiprocess default costs
    # ~20 s per run on two cores).
    executor=dg.in_process_executor,
)
