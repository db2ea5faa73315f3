"""`funes maintain`: compact the memory and rebuild its indexes (also a daily Dagster asset)."""

from __future__ import annotations

from datetime import timedelta

import typer

from funes.cli.common import note
from funes.cli.main import app
from funes.errors import UsageError, shown


@app.command("maintain")
def maintain_command(
    memory: str = typer.Option(None, "--memory", help="Memory to maintain: local (default), a folder, or s3://…"),
    keep_versions: float = typer.Option(60.0, "--keep-versions", help="Minutes of old table versions to keep for readers that opened them."),
) -> None:
    """Compact fragments, build the scalar and vector indexes, drop old versions, merge BM25 segments."""
    from funes.embedding import IDENTITY
    from funes.memory.location import location_for
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter

    try:
        keep = timedelta(minutes=keep_versions)
    except (OverflowError, ValueError):  # NaN, or beyond what a date can hold
        keep = timedelta(-1)
    if keep < timedelta(0):
        raise UsageError(f"--keep-versions must be a number of minutes, 0 or more, got {shown(keep_versions)}")
    location = location_for(memory)
    Memory.open(location)  # maintaining a memory that is not there is a mistake, not a new memory
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        summary = writer.maintain(keep_versions_for=keep)
    note(f"maintained {summary['rows']} chunks in {summary['seconds']} s: "
         f"{summary['embedded']} with vectors, vector index {'built' if summary['vector_index_built'] else 'unchanged'}, "
         f"{summary['lexical_segments']} BM25 segment(s)")
