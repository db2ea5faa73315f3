"""The Dagster instance funes records into and ``funes ui`` shows.

``$DAGSTER_HOME`` when the user set it (their own instance, Postgres-backed or
not); otherwise funes's own under ``$FUNES_HOME/dagster``, created with a
``dagster.yaml`` that keeps telemetry off and gives the memory's writers one
pool slot."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from funes.config import dagster_home as funes_dagster_home

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


def dagster_home() -> Path:
    """``$DAGSTER_HOME`` if set, else ``$FUNES_HOME/dagster`` (prepared on first use)."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"]).expanduser()
    home = funes_dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    return home


def funes_instance():
    """The instance at :func:`dagster_home`, opened once per process and home (the
    hook worker records every turn into the same one)."""
    return _instance(str(dagster_home()))


@functools.cache
def _instance(home: str):
    import dagster as dg

    return dg.DagsterInstance.from_config(home)
