"""Transcripts → turns → redacted chunks, for the sessions of a run."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import warnings

import dagster as dg

from funes.chunking import Chunk, ChunkReport, chunk_session
from funes.errors import TraceReadError
from funes.indexing import ParsedUnit
from funes.memory.coverage import Coverage
from funes.pipelines.partitions import session_partitions
from funes.pipelines.resources import MemoryResource
from funes.traces import parse_unit, units_for_keys

# One run covers a whole backfill's partitions (per-run start-up dominates small runs).
# backfill_policy is marked beta; tests/test_pipelines.py pins the behaviour we use.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)
SINGLE_RUN = dg.BackfillPolicy.single_run()
# What every asset of the per-session index chain shares.
SESSION_CHAIN = {"partitions_def": session_partitions, "backfill_policy": SINGLE_RUN, "group_name": "index"}


@dg.asset(**SESSION_CHAIN, io_manager_key="run_memory", kinds={"python"})
def session_turns(context: dg.AssetExecutionContext, memory: MemoryResource) -> dict[str, ParsedUnit | None]:
    """Each session's transcript parsed into turns (None: unchanged since indexed,
    unreadable for now, or gone, in which case the memory keeps its rows)."""
    keys = context.partition_keys
    coverage = Coverage(memory.location().coverage_path)
    try:
        paths = {key: state.path for key, state in coverage.states(keys).items()}
        units = units_for_keys(keys, paths)
        changed = {u.key for u in coverage.changed(units.values())}
        parsed: dict[str, ParsedUnit | None] = dict.fromkeys(keys)
        turns = warnings = errors = 0
        for key in changed:
            unit = units[key]
            try:
                session = parse_unit(unit)
            except TraceReadError as exc:
                coverage.record_error(unit, str(exc))
                context.log.warning(str(exc))
                errors += 1
                continue
            for warning in session.warnings:
                context.log.warning(str(warning))
            parsed[key] = ParsedUnit(unit, session, [])
            turns += len(session.turns)
            warnings += len(session.warnings)
    finally:
        coverage.close()
    context.add_output_metadata({
        "sessions_parsed": len(changed) - errors,
        "sessions_unchanged": len(units) - len(changed),
        "sessions_missing": len(keys) - len(units),
        "turns": turns,
        "warnings": warnings,
        "read_errors": errors,
    })
    return parsed


@dg.asset(**SESSION_CHAIN, io_manager_key="run_memory", kinds={"python"})
def redacted_chunks(context: dg.AssetExecutionContext, session_turns: dict[str, ParsedUnit | None]) -> dict[str, ParsedUnit | None]:
    """Each session's blocks as chunks with stable ids, data: URIs elided and
    secrets redacted (blocks whose secrets cannot be located are dropped)."""
    report = ChunkReport()
    out: dict[str, ParsedUnit | None] = {}
    for key, item in session_turns.items():
        if item is None:
            out[key] = None
            continue
        chunks: list[Chunk] = list(chunk_session(item.session, report=report))
        out[key] = ParsedUnit(item.unit, item.session, chunks)
    context.add_output_metadata({
        "chunks": report.chunks,
        "blocks_dropped": report.dropped_blocks,
        "redactions": sum(report.redactions.values()),
        "redactions_by_rule": dict(report.redactions),
    })
    return out
