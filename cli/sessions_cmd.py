"""`funes sessions`: every session a memory holds, oldest first."""

from __future__ import annotations

import typer

from funes.cli.common import print_answer, read_memory
from funes.cli.main import app
from funes.cli.options import BRANCH, COMMAND, FILE, HARNESS, READ_MEMORY, REPO, SESSION, SINCE, UNTIL, WORKDIR


@app.command("sessions")
def sessions_command(
    harness: str = HARNESS,
    workdir: str = WORKDIR,
    repo: str = REPO,
    branch: str = BRANCH,
    session: str = SESSION,
    since: str = SINCE,
    until: str = UNTIL,
    file: str = FILE,
    command: str = COMMAND,
    memory: str = READ_MEMORY,
    as_json: bool = typer.Option(False, "--json", help="A JSON list of sessions."),
) -> None:
    """Every session with its agent, workdir, repo, branch, first and last time and
    turn count, oldest first."""
    from funes.retrieval.filters import Filters
    from funes.retrieval.sessions import format_sessions, list_sessions

    filters = Filters.parse(harness=harness, workdir=workdir, repo=repo, branch=branch, session=session,
                            since=since, until=until, file=file, command=command)
    print_answer(read_memory(memory, lambda opened: list_sessions(opened, filters)), as_json,
                 lambda found: [s.to_json() for s in found], format_sessions)
