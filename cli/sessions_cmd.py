"""`funes sessions`: every session a memory holds, oldest first."""

from __future__ import annotations

import sys

import typer

from funes.cli.common import print_json, warn_if_damaged
from funes.cli.main import app


@app.command("sessions")
def sessions_command(
    harness: str = typer.Option(None, "--harness", help="Only this agent's sessions (funes status names the agents)."),
    workdir: str = typer.Option(None, "--workdir", help="Project directory (or its workdir facet): a prefix match."),
    repo: str = typer.Option(None, "--repo", help="owner/name of the git repository."),
    branch: str = typer.Option(None, "--branch", help="Git branch the session ran on."),
    session: str = typer.Option(None, "--session", help="One session: its id or a unique prefix (8+ characters)."),
    since: str = typer.Option(None, "--since", help="Sessions with a turn at or after this ISO date or span (7d, 2w)."),
    until: str = typer.Option(None, "--until", help="Sessions with a turn at or before this ISO date or span."),
    memory: str = typer.Option(None, "--memory", help="local (default), a folder, org/repo, hf://datasets/…, s3://…"),
    as_json: bool = typer.Option(False, "--json", help="A JSON list of sessions."),
) -> None:
    """Every session with its agent, workdir, repo, branch, first and last time and
    turn count, oldest first."""
    from funes.retrieval.access import open_memory
    from funes.retrieval.filters import Filters
    from funes.retrieval.sessions import format_sessions, list_sessions

    filters = Filters.parse(harness=harness, workdir=workdir, repo=repo, branch=branch, session=session,
                            since=since, until=until)
    opened = open_memory(memory)
    try:
        found = list_sessions(opened, filters)
    finally:
        warn_if_damaged(opened)
    if as_json:
        print_json([s.to_json() for s in found])
    else:
        sys.stdout.write(format_sessions(found) + "\n")
