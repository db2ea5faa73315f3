"""`funes forget`: remove sessions from the memory for good."""

from __future__ import annotations

import typer

from funes.cli.common import confirm, interactive, note
from funes.cli.main import app
from funes.errors import UsageError


@app.command("forget")
def forget_command(
    session: list[str] = typer.Option(None, "--session", help="A session: its id or a unique prefix (8+ characters); repeatable."),
    workdir: str = typer.Option(None, "--workdir", help="Every session of this project directory (prefix)."),
    repo: str = typer.Option(None, "--repo", help="Every session of this owner/name repository."),
    harness: str = typer.Option(None, "--harness", help="Only this agent's sessions (with another filter)."),
    until: str = typer.Option(None, "--before", help="Sessions with turns up to this date or span ago (ISO, 30d…)."),
    memory: str = typer.Option(None, "--memory", help="local (default), a folder, or s3://…"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
) -> None:
    """Delete whole sessions (rows, old versions, BM25 words) and never index them again."""
    from funes.embedding import IDENTITY
    from funes.forgetting import forget, sessions_matching
    from funes.memory.location import location_for
    from funes.memory.sql import sql_in
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter
    from funes.retrieval.filters import Filters, parse_when

    if until is not None and until.strip():
        parse_when(until, flag="--before", end_of_day=True)  # its errors name the flag the user typed
    filters = Filters.parse(harness=harness, workdir=workdir, repo=repo, until=until)
    for given in session or ():
        if not given.strip():
            raise UsageError(f"--session {given!r}: give a session id, or leave --session out")
    if not session and not (workdir or repo or until):
        raise UsageError("say what to forget: --session ID, --workdir PATH, --repo OWNER/NAME or --before DATE")
    location = location_for(memory)
    Memory.open(location)  # there is nothing to forget in a memory that is not there
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        where_parts = []
        if session:
            ids = [writer.resolve_session(given) for given in session]
            where_parts.append(sql_in("session_id", ids))
        if filters.where():
            where_parts.append(filters.where())
        where = " AND ".join(f"({part})" for part in where_parts)
        _, keys = sessions_matching(writer, where)
        if not keys:
            note("nothing matches: the memory is unchanged")
            return
        question = f"forget {len(keys)} session(s) for good (they will not be indexed again)?"
        if not confirm(question, default=False, assume_yes=yes):
            if not interactive() and not yes:
                raise UsageError(f"{len(keys)} session(s) match; pass --yes to forget them unattended")
            note("nothing forgotten")
            return
        report = forget(writer, where)
    note(f"forgot {report.chunks} chunks of {len(report.sessions)} session(s): "
         + ", ".join(report.sessions[:5]) + (" …" if len(report.sessions) > 5 else ""))
