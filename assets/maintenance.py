"""Keeping the memory fast: compaction, indexes, old versions, BM25 segments."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import dagster as dg

from funes.assets.resources import MemoryResource


@dg.asset(group_name="maintenance", deps=["memory_chunks"], pool="lance_writer", kinds={"lance"},
          automation_condition=dg.AutomationCondition.on_cron("17 3 * * *"))
def memory_maintenance(memory: MemoryResource) -> dg.MaterializeResult:
    """Compact fragments, build the id/session scalar indexes and (once large
    enough) the IVF_PQ vector index, drop versions older than an hour, and merge
    the BM25 segments into one."""
    with memory.writer() as writer:
        summary = writer.maintain()
    return dg.MaterializeResult(metadata=summary)
