"""Asset checks that block downstream assets when they fail."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
from typing import Optional

import dagster as dg

from funes.assets.embed import chunk_embeddings
from funes.assets.ingest import redacted_chunks
from funes.assets.partitions import session_partitions
from funes.assets.resources import MemoryResource
from funes.embedding import IDENTITY
from funes.errors import MemoryIncompatibleError, MemoryMissingError
from funes.indexing import SessionChunks
from funes.redaction import scan_for_egress


@dg.asset_check(asset=redacted_chunks, blocking=True, partitions_def=session_partitions,
                description="Re-scans every chunk about to be stored; any finding stops the run before it is written.")
def no_unredacted_secrets(redacted_chunks: dict[str, Optional[SessionChunks]]) -> dg.AssetCheckResult:
    texts = ((chunk.id, chunk.text) for item in redacted_chunks.values() if item is not None for chunk in item.chunks)
    report = scan_for_egress(texts)
    return dg.AssetCheckResult(
        passed=report.clean,
        severity=dg.AssetCheckSeverity.ERROR,
        description=None if report.clean else report.summary(),
        metadata={"chunks_with_findings": len(report.flagged), "findings_by_rule": dict(report.counts)},
    )


@dg.asset_check(asset=chunk_embeddings, blocking=True,
                description="The memory was built with the model the embedder runs (id, revision, dimension).")
def embedding_model_pinned(memory: MemoryResource) -> dg.AssetCheckResult:
    try:
        memory.reader().check_identity(IDENTITY.to_metadata())
    except MemoryMissingError:
        return dg.AssetCheckResult(passed=True, description="new memory: it will be stamped with this model",
                                   metadata={"model": str(IDENTITY)})
    except MemoryIncompatibleError as exc:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR, description=str(exc))
    return dg.AssetCheckResult(passed=True, metadata={"model": str(IDENTITY)})
