"""`funes repair`: restore a damaged memory and say what could not be recovered."""

from __future__ import annotations

import typer

from funes.cli.common import ProgressBars, note
from funes.cli.main import app


@app.command("repair")
def repair_command(
    memory: str = typer.Option(None, "--memory", help="Memory to repair: local (default), a folder or s3://…"),
) -> None:
    """Read the table as of its newest intact version, drop the data files that cannot be
    read, re-index the sessions that lost chunks from their transcripts, rebuild the BM25
    index; then say exactly what could not be recovered."""
    from funes.embedding import IDENTITY, load_embedder
    from funes.memory.location import location_for
    from funes.repair import repair

    location = location_for(memory)
    bars = ProgressBars()
    with bars.shown():
        report = repair(location, IDENTITY.to_metadata(), IDENTITY.dim, embedder=load_embedder, progress=bars)
    for line in report.lines(location.label):
        note(line)
