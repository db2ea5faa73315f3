"""Releases of a project memory: one partition per git tag of the project, each
materialized by :func:`funes.hub.release.release`, the function `funes release` calls, so
a scheduled release and a release by hand publish the same rows.  A backfill of old
tags materializes their partitions, oldest first (a release older than one published
is refused)."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import os
from pathlib import Path
from typing import Optional

import dagster as dg

from funes.errors import FunesError
from funes.hub.release import release

REMOTE_ENV = "FUNES_RELEASE_REMOTE"  # the project memory; default $FUNES_HUB_REMOTE
CHECKOUT_ENV = "FUNES_RELEASE_CHECKOUT"  # the project's git checkout, whose tags are releases

release_partitions = dg.DynamicPartitionsDefinition(name="releases")


def release_remote() -> Optional[str]:
    return os.environ.get(REMOTE_ENV) or os.environ.get("FUNES_HUB_REMOTE")


class ReleaseConfig(dg.Config):
    remote: Optional[str] = None  # org/repo; default $FUNES_RELEASE_REMOTE, then $FUNES_HUB_REMOTE
    checkout: Optional[str] = None  # default $FUNES_RELEASE_CHECKOUT
    project: Optional[str] = None  # owner/name; default the one `funes curate` named
    assume_yes: bool = False  # a first release to a repo holding none of this memory's chunks
    force: bool = False  # publish a tag already released again, moving its tag


@dg.asset(group_name="publication", deps=["memory_chunks", "dense_backfill"], pool="hub_publication",
          partitions_def=release_partitions, required_resource_keys={"memory"}, kinds={"huggingface", "lance"})
def release_memory(context: dg.AssetExecutionContext, config: ReleaseConfig) -> dg.MaterializeResult:
    """Publish the release a tag names: its project's sessions up to the tagged commit, as
    one guarded commit, then tag the dataset repo (the same code as `funes release`)."""
    tag = context.partition_key
    remote = config.remote or release_remote()
    checkout = config.checkout or os.environ.get(CHECKOUT_ENV)
    if not remote or not checkout:
        raise dg.Failure(f"release_memory needs a remote ({REMOTE_ENV}) and the project's checkout ({CHECKOUT_ENV})")
    try:
        report = release(remote, tag, project=config.project, checkout=Path(checkout),
                         location=context.resources.memory.location(), assume_yes=config.assume_yes,
                         force=config.force)
    except FunesError as exc:  # each refusal is its one-line message
        raise dg.Failure(f"release_memory {tag} to {remote}: {exc}", metadata={"remote": remote, "tag": tag}) from exc
    for warning in report.push.warnings():
        context.log.warning(warning)
    return dg.MaterializeResult(metadata={
        "remote": report.push.remote,
        "tag": tag,
        "date": report.date,
        "since": report.since or "",
        "commit": report.push.commit or "",
        "chunks": report.push.pushed,
        "sessions": report.push.sessions,
        "retagged_from": report.retagged_from or "",
    })


publish_release = dg.define_asset_job("publish_release", selection=dg.AssetSelection.assets(release_memory))
