"""What starts a release on its own: a sensor watching the tags of the project's checkout.

Each new tag becomes a partition of ``release_memory`` and one run, requested oldest
first with the tag as run key, so a tag is released once; tags already present when the
sensor first runs become partitions too, for a backfill to publish."""

# No `from __future__ import annotations`: Dagster reads these annotations at
# definition time to inject context, config and resources.
import os
from pathlib import Path

import dagster as dg

from funes.assets.release import CHECKOUT_ENV, publish_release, release_partitions
from funes.errors import FunesError
from funes.hub.release import checkout_tags


@dg.sensor(job=publish_release, minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.STOPPED)
def release_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Add a partition, and request its run, for each tag the checkout gained."""
    checkout = os.environ.get(CHECKOUT_ENV)
    if not checkout:
        return dg.SensorResult(skip_reason=f"set {CHECKOUT_ENV} to the project's git checkout")
    try:
        tags = checkout_tags(Path(checkout))
    except FunesError as exc:
        return dg.SensorResult(skip_reason=str(exc))
    known = set(context.instance.get_dynamic_partitions(release_partitions.name))
    new = [tag for tag in tags if tag not in known]
    # The first evaluation adopts the tags there were: old releases are a backfill's to publish.
    requested = new if context.cursor else []
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=tag, run_key=tag) for tag in requested],
        dynamic_partitions_requests=[release_partitions.build_add_request(new)] if new else [],
        cursor="seen",
    )
