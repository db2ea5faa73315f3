"""`funes status`: what a memory holds and how far indexing has got."""

from __future__ import annotations

import typer

from funes.cli.common import print_json
from funes.cli.main import app


@app.command("status")
def status_command(
    memory: str = typer.Option(None, "--memory", help="local (default), a folder, org/repo, hf://datasets/…, s3://…"),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Memory location, counts per agent, last indexed, vector backlog, models."""
    from funes.retrieval.status import memory_status, render_status

    status = memory_status(memory)
    if as_json:
        print_json(status)
    else:
        typer.echo(render_status(status))
