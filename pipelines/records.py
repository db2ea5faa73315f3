"""What the CLI and the hooks did, recorded on the Dagster instance as it was.

``funes index``, ``funes add`` and the hook worker run the index chain's stages
directly (:func:`funes.indexing.index_memory`), not as Dagster runs.  Once the
writer lock is released they report what they did as runless asset events,
per session partition: an observation of ``raw_traces`` at the transcript's
signature (its data version), then a materialization of each stage —
``session_turns``, ``redacted_chunks``, ``chunk_embeddings``, ``memory_chunks``
— carrying that session's own figures, the same metadata the assets give a
run's partitions (:func:`funes.assets.metadata.stage_metadata`).  Vectors filled in from the backlog
are also a materialization of ``dense_backfill``.  Nothing is re-run, no lock
is taken, no process outlives the command; ``funes ui`` shows the events
beside the runs.  ``FUNES_NO_DAGSTER_RECORD=1`` turns recording off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from funes.assets.metadata import by_tier, stage_metadata
from funes.indexing import IndexReport
from funes.memory.location import MemoryLocation

log = logging.getLogger("funes.records")

ORIGIN_TAG = "funes/origin"
PARTITIONS = "sessions"  # funes.assets.partitions.session_partitions, named without importing Dagster
CHAIN = ("session_turns", "redacted_chunks", "chunk_embeddings", "memory_chunks")


def recorder(origin: str) -> Callable[[MemoryLocation, IndexReport], None]:
    """A :data:`funes.indexing.Recorder` writing the events for ``origin`` (cli, hook)."""
    def record_report(location: MemoryLocation, report: IndexReport) -> None:
        if os.environ.get("FUNES_NO_DAGSTER_RECORD"):
            return
        try:
            record(location, report, origin=origin)
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never fail the work it records
            log.warning("funes: the work is done but could not be recorded on the Dagster instance: %s", exc)
    return record_report


def record(location: MemoryLocation, report: IndexReport, *, origin: str) -> int:
    """Write the runless events for ``report``; returns how many were written."""
    sessions = [s for s in report.per_session.values() if s.error is None]
    if not sessions and not report.backlog_by_tier:
        return 0
    import dagster as dg

    from funes.pipelines.instance import funes_instance

    instance = funes_instance()
    tags = {ORIGIN_TAG: origin, "funes/memory": location.label}
    keys = [s.key for s in sessions]
    if keys:
        known = set(instance.get_dynamic_partitions(PARTITIONS))
        missing = [key for key in keys if key not in known]
        if missing:
            instance.add_dynamic_partitions(PARTITIONS, missing)
    written = 0
    for session in sessions:
        # The transcript as read, then each stage; session_turns names the observation
        # it read, so a later change to the transcript shows the partition stale.
        instance.report_runless_asset_event(dg.AssetObservation(
            "raw_traces", partition=session.key, metadata={"signature": session.signature},
            tags={**tags, "dagster/data_version": session.signature}))
        observed = instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("raw_traces"), asset_partitions=[session.key]), limit=1)
        provenance = {"dagster/input_data_version/raw_traces": session.signature,
                      "dagster/input_event_pointer/raw_traces": str(observed.records[0].storage_id)}
        for asset in CHAIN:
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset, partition=session.key, metadata=stage_metadata(asset, session),
                tags={**tags, **(provenance if asset == "session_turns" else {})}))
        written += 1 + len(CHAIN)
    if report.backlog_by_tier:
        instance.report_runless_asset_event(dg.AssetMaterialization("dense_backfill", tags=tags, metadata={
            "embedded": sum(report.backlog_by_tier.values()), "embedded_by_tier": by_tier(report.backlog_by_tier),
            "pending": report.pending}))
        written += 1
    return written
