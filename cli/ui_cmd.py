"""`funes ui`: the Dagster UI over funes's own instance (every CLI, hook, sensor run)."""

from __future__ import annotations

import os
import sys

import typer

from funes.cli.main import app
from funes.errors import FunesError, bounded_int


@app.command("ui")
def ui_command(port: int = typer.Option(3000, "--port", help="Port for the web UI.")) -> None:
    """Run `dagster dev` on the funes code location, on $DAGSTER_HOME when set, else $FUNES_HOME/dagster."""
    import importlib.util

    from funes.pipelines.instance import dagster_home

    bounded_int("--port", port, 1, 65_535)
    if importlib.util.find_spec("dagster_webserver") is None:
        raise FunesError("the Dagster UI needs dagster-webserver: pip install 'funes[ui]'")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home())}
    os.execvpe(sys.executable, [sys.executable, "-m", "dagster", "dev", "-m", "funes.pipelines.definitions",
                                "--port", str(port)], env)
