"""`funes curate`: choose which sessions of a repository its project memory receives."""

from __future__ import annotations

import typer

from funes.cli.common import interactive, note, print_json
from funes.cli.main import app

PREVIEW = 160


@app.command("curate")
def curate_command(
    memory: str = typer.Argument(..., help="The project memory: org/repo or hf://datasets/org/repo."),
    project: str = typer.Argument(..., help="The repository it is the memory of, as owner/name."),
    include: list[str] = typer.Option(None, "--include", help="Ship this session (an id or a unique prefix); repeatable."),
    exclude: list[str] = typer.Option(None, "--exclude", help="Keep this session local; repeatable."),
    as_json: bool = typer.Option(False, "--json", help="The sessions and their decisions as JSON."),
) -> None:
    """Make MEMORY the project memory of PROJECT, shipping only the sessions marked include.

    A push there ships only the sessions of that repository marked include. With no
    flags, review the undecided sessions on a terminal, or list them."""
    from funes.errors import UsageError
    from funes.hub.curation import Curation, ProjectSessions
    from funes.hub.repo import parse_remote
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    if project.count("/") != 1 or not all(project.split("/")):
        raise UsageError(f"{project!r}: name the repository as owner/name")
    remote = parse_remote(memory)
    curation = Curation.load(remote)
    curation.name_project(project)
    local = Memory.open(local_memory())
    sessions = ProjectSessions.of(local, project)
    for prefix in include or ():
        session = sessions.resolve(prefix)
        curation.include(session, sessions.own_chunks[session])
    for prefix in exclude or ():
        curation.exclude(sessions.resolve(prefix))
    if not (include or exclude) and interactive():
        _review(local, sessions, curation)
    curation.save()

    listing = [{"session_id": session, "chunks": sessions.own_chunks[session],
                "decision": _decision(curation, session, sessions.own_chunks[session])}
               for session in sorted(sessions.chunks)]
    if as_json:
        print_json({"memory": remote.uri, "project": project, "sessions": listing})
        return
    for item in listing:
        typer.echo(f"{item['decision']:<8} {item['session_id']}  {item['chunks']} chunks")
    pending = sum(item["decision"] in ("pending", "grown") for item in listing)
    note(f"{remote.uri} is the project memory of {project}: {len(listing)} local session(s) of it, {pending} to review")


def _decision(curation, session: str, chunks: int) -> str:
    if session in curation.excluded:
        return "exclude"
    if curation.admits(session, chunks):
        return "include"
    return "grown" if session in curation.included else "pending"


def _review(local, sessions, curation) -> None:
    """Ask about each session without a current decision."""
    for session in sorted(sessions.chunks):
        chunks = sessions.own_chunks[session]
        if curation.decided(session, chunks):
            continue
        rows = local.session_rows(session, columns=("seq", "block_idx", "split_idx", "ts", "role", "block_type",
                                                    "text", "harness"))
        opening = next((r["text"] for r in rows if r["role"] == "user" and r["block_type"] == "text"), "")
        first, last = rows[0]["ts"] if rows else "", rows[-1]["ts"] if rows else ""
        typer.echo(f"\n{session} ({rows[0]['harness'] if rows else '?'}, {chunks} chunks, {first} → {last})")
        typer.echo("  " + " ".join(opening.split())[:PREVIEW])
        answer = typer.prompt("  include, exclude, skip or quit? [i/e/s/q]", default="s", err=True).strip().lower()
        if answer.startswith("q"):
            return
        if answer.startswith("i"):
            curation.include(session, chunks)
        elif answer.startswith("e"):
            curation.exclude(session)
