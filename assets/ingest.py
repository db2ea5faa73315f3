"""Raw traces → turns → redacted chunks, for the sessions of a run.

Thin wrappers over the stage functions of :mod:`funes.indexing` (the ones
``funes index`` and the hooks run): each partition's metadata is that session's
own report (:func:`funes.assets.metadata.stage_metadata`)."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import warnings
from typing import Optional

import dagster as dg

from funes.assets.metadata import stage_metadata
from funes.assets.partitions import session_partitions
from funes.assets.resources import MemoryResource, TracesResource
from funes.errors import TraceReadError
from funes.indexing import ParsedSession, SessionChunks, chunk_stage, parse_stage, unreadable
from funes.memory.coverage import Coverage

# One run covers a whole backfill's partitions (per-run start-up dominates small runs).
# backfill_policy is marked beta; tests/pipelines/test_pipelines.py pins the behaviour we use.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)
warnings.filterwarnings("ignore", message="Function `observable_source_asset`", category=dg.BetaWarning)
SINGLE_RUN = dg.BackfillPolicy.single_run()
# What every asset of the per-session index chain shares; its values go through the
# chain store (funes.assets.chain_store), so any executor can run its steps.
SESSION_CHAIN = {"partitions_def": session_partitions, "backfill_policy": SINGLE_RUN, "group_name": "index",
                 "io_manager_key": "chain_store"}


@dg.observable_source_asset(partitions_def=session_partitions, group_name="index", kinds={"python"})
def raw_traces(context, traces: TracesResource) -> dg.DataVersionsByPartition:
    """The agents' transcripts, one per session partition, versioned by their
    signature (size and content hash of what was read): a grown transcript makes
    its partition of the chain stale."""
    known = set(context.instance.get_dynamic_partitions(session_partitions.name))
    return dg.DataVersionsByPartition({unit.key: unit.signature for unit in traces.all_units() if unit.key in known})


def _unresolved_failure(missing: list[str], traces: TracesResource, errors: list[str]) -> dg.Failure:
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return dg.Failure(
        f"no transcript found for partition(s) {shown}: looked in {traces.places()}; set the `traces` "
        f"resource's `roots` (or $FUNES_TRACE_ROOTS) to a folder holding them",
        metadata={"partitions_unresolved": len(missing), "read_errors": errors[:20]})


@dg.asset(**SESSION_CHAIN, deps=[raw_traces], kinds={"python"})
def session_turns(context: dg.AssetExecutionContext, memory: MemoryResource,
                  traces: TracesResource) -> dict[str, Optional[ParsedSession]]:
    """Each session's transcript parsed into turns (None: unchanged since indexed,
    or unreadable for now, retried next time).  A partition whose transcript is
    found nowhere fails the run."""
    keys = context.partition_keys
    units, errors = traces.resolve(keys, memory.location())
    missing = [key for key in keys if key not in units]
    if missing:
        raise _unresolved_failure(missing, traces, errors)
    coverage = Coverage(memory.location().coverage_path)
    try:
        changed = {unit.key for unit in coverage.changed(units.values())}
        parsed: dict[str, Optional[ParsedSession]] = dict.fromkeys(keys)
        for key in keys:
            unit = units[key]
            if key not in changed:
                context.add_asset_metadata({"unchanged": True, "signature": unit.signature}, partition_key=key)
                continue
            try:
                parsed[key] = parse_stage(unit)
            except TraceReadError as exc:
                coverage.record_error(unit, str(exc))
                context.log.warning(str(exc))
                context.add_asset_metadata(stage_metadata("session_turns", unreadable(unit, exc)), partition_key=key)
                continue
            for warning in parsed[key].report.warnings:
                context.log.warning(str(warning))
            context.add_asset_metadata(stage_metadata("session_turns", parsed[key].report), partition_key=key)
    finally:
        coverage.close()
    return parsed


class ChunkingConfig(dg.Config):
    include_thinking: bool = True  # False: leave thinking blocks out (`funes index --no-thinking`)


@dg.asset(**SESSION_CHAIN, kinds={"python"})
def redacted_chunks(context: dg.AssetExecutionContext, config: ChunkingConfig,
                    session_turns: dict[str, Optional[ParsedSession]]) -> dict[str, Optional[SessionChunks]]:
    """Each session's blocks as chunks with stable ids, data: URIs elided and
    secrets redacted (blocks whose secrets cannot be located are dropped)."""
    out: dict[str, Optional[SessionChunks]] = {}
    for key, parsed in session_turns.items():
        out[key] = None if parsed is None else chunk_stage(parsed, include_thinking=config.include_thinking)
        if out[key] is not None:
            context.add_asset_metadata(stage_metadata("redacted_chunks", out[key].report), partition_key=key)
    return out
