"""The persistent Dagster instance under ``$FUNES_HOME/dagster``.

Runs started by the CLI and the hook worker are recorded here, so
``DAGSTER_HOME=$FUNES_HOME/dagster dagster dev -w workspace.yaml`` (or
``funes ui``) shows them beside the sensor's and the schedules' runs."""

from __future__ import annotations

import os
from pathlib import Path

from funes.config import dagster_home

# Writers to the memory share one pool slot; telemetry stays off (no network).
DAGSTER_YAML = """\
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
  runs:
    max_concurrent_runs: 1
"""


def prepare_dagster_home() -> Path:
    home = dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    return home


def funes_instance():
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(prepare_dagster_home())
    return dg.DagsterInstance.get()
