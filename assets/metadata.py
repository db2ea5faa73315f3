"""The metadata of each stage's partition: one session's figures, the same for a
run's partitions (the assets) and the CLI's and hooks' runless records
(:mod:`funes.pipelines.records`)."""

from __future__ import annotations

from typing import Any

from funes.indexing import SessionReport
from funes.traces.model import TIER_NAMES


def by_tier(counts) -> dict[str, int]:
    return {TIER_NAMES.get(tier, str(tier)): counts[tier] for tier in sorted(counts)}


def stage_metadata(asset: str, report: SessionReport) -> dict[str, Any]:
    """One session's figures as the metadata of ``asset``'s partition (runs and
    runless records alike).  ``memory_chunks`` carries the whole report."""
    read = {"turns": report.turns, "warnings": len(report.warnings), "signature": report.signature}
    if report.error is not None:
        read["read_error"] = report.error
    chunked = {"chunks": report.chunks, "blocks": report.blocks, "blocks_dropped": report.blocks_dropped,
               "redactions": sum(report.redactions.values()), "redactions_by_rule": dict(report.redactions)}
    embedded = {"embedded": report.embedded, "embedded_by_tier": by_tier(report.embedded_by_tier)}
    stored = {"chunks_added": report.chunks_added, "chunks_already_stored": report.chunks_already_stored}
    return {
        "session_turns": read,
        "redacted_chunks": chunked,
        "chunk_embeddings": embedded,
        "memory_chunks": {**stored, **read, **chunked, **embedded},
    }[asset]
