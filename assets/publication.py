"""The memory → its Hub dataset repo: one guarded commit of what the remote lacks."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import os
from typing import Optional

import dagster as dg

from funes.assets.resources import MemoryResource
from funes.errors import FunesError
from funes.hub.push import NothingPublishable, PushRefused, push

REMOTE_ENV = "FUNES_HUB_REMOTE"


class PublicationConfig(dg.Config):
    remote: Optional[str] = None  # org/repo or hf://datasets/org/repo; default $FUNES_HUB_REMOTE
    # A first push to a remote holding none of this memory's chunks needs a yes;
    # runs have nobody to ask, so make the first push from `funes push` or set this.
    assume_yes: bool = False


@dg.asset(group_name="publication", deps=["memory_chunks", "dense_backfill"], pool="hub_publication",
          kinds={"huggingface", "lance"})
def hub_publication(context: dg.AssetExecutionContext, config: PublicationConfig,
                    memory: MemoryResource) -> dg.MaterializeResult:
    """Publish the embedded chunks the remote lacks, after the fail-closed secret gate,
    as one commit guarded by the remote's head (the same code as `funes push`)."""
    remote = config.remote or os.environ.get(REMOTE_ENV)
    if not remote:
        raise dg.Failure(f"no remote to publish to: set {REMOTE_ENV} or the asset's `remote` config")
    try:
        report = push(remote, location=memory.location(), assume_yes=config.assume_yes)
    except NothingPublishable as exc:
        raise dg.Failure(str(exc), metadata={"held_back": exc.report.held_back,
                                             "findings_by_rule": dict(exc.report.gate.findings)}) from exc
    except PushRefused as exc:
        raise dg.Failure(f"{exc.remote} {exc.held} and this memory never pushed there: a first push needs "
                         f"`assume_yes: true` in hub_publication's config (or one `funes push` by hand)",
                         metadata={"remote": exc.remote}) from exc
    except FunesError as exc:  # an unreachable Hub, a missing or damaged memory: its one-line message
        raise dg.Failure(f"hub_publication to {remote}: {exc}", metadata={"remote": remote}) from exc
    for warning in report.warnings():
        context.log.warning(warning)
    return dg.MaterializeResult(metadata={
        "remote": report.remote,
        "commit": report.commit or "",
        "pushed": report.pushed,
        "already_there": report.already_there,
        "held_back": report.held_back,
        "findings_by_rule": dict(report.gate.findings),
        "awaiting_vectors": report.gate.awaiting_vectors,
        "pending_review": len(report.pending_review),
        "card": report.card,
    })


publish_memory = dg.define_asset_job("publish_memory", selection=dg.AssetSelection.assets(hub_publication))

publication_schedule = dg.ScheduleDefinition(
    name="hub_publication_schedule", job=publish_memory, cron_schedule="*/30 * * * *",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Publish to $FUNES_HUB_REMOTE every 30 minutes (turn on once a first push was confirmed).",
)
