"""`funes sessions`: every session a memory holds, oldest first."""

from __future__ import annotations

import typer

from funes.cli.common import print_answer, read_memory
from funes.cli.main import app
from funes.cli.options import READ_MEMORY, filter_options
from funes.retrieval.filters import Filters


@app.command("sessions")
@filter_options("sessions")
def sessions_command(
    filters: Filters = None,  # an option per filter: filter_options
    memory: str = READ_MEMORY,
    as_json: bool = typer.Option(False, "--json", help="A JSON list of sessions."),
) -> None:
    """Every session with its agent, workdir, repo, branch, first and last time and
    turn count, oldest first."""
    from funes.retrieval.sessions import format_sessions, list_sessions

    print_answer(read_memory(memory, lambda opened: list_sessions(opened, filters)), as_json,
                 lambda found: [s.to_json() for s in found], format_sessions)
