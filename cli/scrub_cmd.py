"""`funes scrub`: redact or drop the secrets a memory still holds, so it can be published."""

from __future__ import annotations

import typer

from funes.cli.common import note
from funes.cli.main import app


@app.command("scrub")
def scrub_command(
    memory: str = typer.Option(None, "--memory", help="Memory to repair: local (default), a folder or s3://…"),
) -> None:
    """Redact or drop the secrets a memory still holds, so that it can be published.

    Rebuild every block, redact what can be located, drop what cannot, re-embed the
    replaced chunks, rebuild the indexes and delete older versions. Transcripts and
    published remotes are not touched."""
    from funes.embedding import IDENTITY, load_embedder
    from funes.hub.scrub import scrub
    from funes.memory.location import location_for
    from funes.memory.store import Memory, MemoryWriter

    location = location_for(memory)
    Memory.open(location).require_rows()
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        report = scrub(writer, load_embedder())
    note(f"{location.label}: {report.summary()}")
