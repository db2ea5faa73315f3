"""`funes history PATH`: the sessions and turns that touched a file, newest first."""

from __future__ import annotations

import typer

from funes.cli.common import print_answer, read_memory
from funes.cli.main import app
from funes.cli.options import READ_MEMORY, filter_options
from funes.retrieval.filters import Filters


@app.command("history")
@filter_options("history", file="path")
def history_command(
    path: str = typer.Argument(..., help="The file (or folder: a prefix) relative to the repo root, or a local path."),
    limit: int = typer.Option(50, "--limit", help="Turns listed (the total counts them all)."),
    filters: Filters = None,  # an option per filter, PATH its --file: filter_options
    memory: str = READ_MEMORY,
    as_json: bool = typer.Option(False, "--json", help="The turns and totals as one JSON object."),
) -> None:
    """The turns that read, edited or wrote a file, newest first, each with the
    assistant's text beside the tool call (what the change was for)."""
    from funes.errors import bounded_int
    from funes.retrieval.bounds import MAX_HISTORY_LIMIT
    from funes.retrieval.history import file_history, format_history, history_json

    bounded_int("--limit", limit, 1, MAX_HISTORY_LIMIT)
    print_answer(read_memory(memory, lambda opened: file_history(opened, filters, limit=limit)), as_json,
                 history_json, format_history)
