"""The Dagster code location (``workspace.yaml`` loads ``defs`` from here)."""

from __future__ import annotations

import dagster as dg

from funes.assets.chain_store import ChainIOManager
from funes.assets.embed import chunk_embeddings, dense_backfill
from funes.assets.ingest import raw_traces, redacted_chunks, session_turns
from funes.assets.maintenance import memory_maintenance
from funes.assets.publication import hub_publication, publication_schedule, publish_memory
from funes.assets.release import publish_release, release_memory
from funes.assets.resources import EmbedderResource, MemoryResource, TracesResource, trace_roots_from_env
from funes.assets.store import memory_chunks
from funes.pipelines.automation import hourly_sweep, transcript_sensor
from funes.pipelines.checks import embedding_model_pinned, no_unredacted_secrets
from funes.pipelines.jobs import index_sessions, maintain_memory, observe_traces
from funes.pipelines.releases import release_sensor

MEMORY = dg.EnvVar("FUNES_MEMORY").get_value("local") or "local"


def _celery_executor() -> dg.ExecutorDefinition:
    """Steps as Celery tasks on the workers listening to ``$FUNES_CELERY_BROKER``
    (results on the same Redis); needs the ``distributed`` extra."""
    try:
        from dagster_celery import celery_executor
    except ImportError as exc:
        raise dg.DagsterInvariantViolationError(
            "FUNES_EXECUTOR=celery needs dagster-celery: pip install 'funes[distributed]'") from exc
    broker = {"env": "FUNES_CELERY_BROKER"}
    return celery_executor.configured({"broker": broker, "backend": broker}, name="celery")


# In-process by default: tiny runs on a laptop (the multiprocess executor starts a
# Python process, importing Dagster and funes, per step); FUNES_EXECUTOR=multiprocess
# runs each step in its own process, FUNES_EXECUTOR=celery on Celery workers, the
# chain's values passing through the chain store either way.
EXECUTORS = {"in_process": lambda: dg.in_process_executor, "multiprocess": lambda: dg.multiprocess_executor,
             "celery": _celery_executor}
EXECUTOR = dg.EnvVar("FUNES_EXECUTOR").get_value("in_process") or "in_process"
if EXECUTOR not in EXECUTORS:
    raise dg.DagsterInvariantViolationError(f"FUNES_EXECUTOR={EXECUTOR!r}: expected one of {', '.join(EXECUTORS)}")

defs = dg.Definitions(
    assets=[raw_traces, session_turns, redacted_chunks, chunk_embeddings, memory_chunks, dense_backfill, memory_maintenance,
            hub_publication, release_memory],
    asset_checks=[no_unredacted_secrets, embedding_model_pinned],
    jobs=[index_sessions, maintain_memory, observe_traces, publish_memory, publish_release],
    sensors=[transcript_sensor, release_sensor, dg.AutomationConditionSensorDefinition(
        "maintenance_automation", target=dg.AssetSelection.assets(memory_maintenance))],
    schedules=[hourly_sweep, publication_schedule],
    resources={
        "memory": MemoryResource(memory=MEMORY),
        "traces": TracesResource(roots=trace_roots_from_env()),
        "embedder": EmbedderResource(device=dg.EnvVar("FUNES_DEVICE").get_value("auto") or "auto"),
        "chain_store": ChainIOManager(memory=MEMORY),
    },
    executor=EXECUTORS[EXECUTOR](),
)
