"""What starts index runs on its own: a file-watch sensor and an hourly sweep.

Both discover every agent home's units, add partitions for new sessions and
request a run per new or grown session with run key ``<key>:<signature>``, so a
session is never queued twice for the same content."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import json

import dagster as dg

from funes.assets.partitions import session_partitions
from funes.assets.resources import MemoryResource
from funes.discovery import discover
from funes.memory.coverage import Coverage
from funes.pipelines.jobs import index_sessions
from funes.traces.model import SourceUnit

# Per evaluation; the rest waits for the next tick (each run starts a process).
MAX_RUNS_PER_TICK = 25


def _changed_units(memory: MemoryResource, seen: dict[str, str]) -> tuple[list[SourceUnit], list[SourceUnit]]:
    """(all units found, those to index now): new or grown since the memory indexed
    them and not already requested at this signature."""
    units = discover(errors=[])  # an unreadable home is retried on the next tick
    coverage = Coverage(memory.location().coverage_path)
    try:
        coverage.register(units)
        changed = [u for u in coverage.changed(units) if seen.get(u.key) != u.signature]
    finally:
        coverage.close()
    return units, changed[:MAX_RUNS_PER_TICK]


def _requests(changed: list[SourceUnit]) -> list[dg.RunRequest]:
    return [dg.RunRequest(partition_key=u.key, run_key=f"{u.key}:{u.signature}") for u in changed]


@dg.sensor(job=index_sessions, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.STOPPED)
def transcript_sensor(context: dg.SensorEvaluationContext, memory: MemoryResource) -> dg.SensorResult:
    """Watch the agent homes (size and mtime of each transcript) and index what changed."""
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    units, changed = _changed_units(memory, seen)
    known = set(context.instance.get_dynamic_partitions(session_partitions.name))
    new_keys = sorted({u.key for u in units} - known)
    seen.update({u.key: u.signature for u in changed})
    live = {u.key for u in units}
    seen = {key: sig for key, sig in seen.items() if key in live}
    return dg.SensorResult(
        run_requests=_requests(changed),
        dynamic_partitions_requests=[session_partitions.build_add_request(new_keys)] if new_keys else [],
        cursor=json.dumps(seen, separators=(",", ":")),
    )


@dg.schedule(job=index_sessions, cron_schedule="0 * * * *", default_status=dg.DefaultScheduleStatus.STOPPED)
def hourly_sweep(context: dg.ScheduleEvaluationContext, memory: MemoryResource):
    """Catch up on anything the sensor missed (sensor off, daemon down)."""
    units, changed = _changed_units(memory, {})
    known = set(context.instance.get_dynamic_partitions(session_partitions.name))
    new_keys = sorted({u.key for u in units} - known)
    if new_keys:
        context.instance.add_dynamic_partitions(session_partitions.name, new_keys)
    if not changed:
        return dg.SkipReason("every session is indexed")
    return _requests(changed)
