"""`funes sessions`: every session a memory holds, oldest first."""

from __future__ import annotations

import sys

import typer

from funes.cli.common import print_json, warn_if_damaged
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
    from funes.retrieval.access import open_memory
    from funes.retrieval.filters import Filters
    from funes.retrieval.sessions import format_sessions, list_sessions

    filters = Filters.parse(harness=harness, workdir=workdir, repo=repo, branch=branch, session=session,
                            since=since, until=until, file=file, command=command)
    opened = open_memory(memory)
    try:
        found = list_sessions(opened, filters)
    finally:
        warn_if_damaged(opened)
    if as_json:
        print_json([s.to_json() for s in found])
    else:
        sys.stdout.write(format_sessions(found) + "\n")
