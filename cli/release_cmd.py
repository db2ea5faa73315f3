"""`funes release`: publish the project memory of a release and tag it on the Hub."""

from __future__ import annotations

import typer

from funes.cli.common import confirm, note, print_json
from funes.cli.main import app


@app.command("release")
def release_command(
    memory: str = typer.Argument(..., help="The project memory: org/repo or hf://datasets/org/repo."),
    tag: str = typer.Argument(..., help="The release: a git tag of the project's checkout (the current folder's)."),
    project: str = typer.Option(None, "--project", help="The repository, as owner/name (default: the one `funes curate` named)."),
    since: str = typer.Option(None, "--since", help="The release this one follows (default: the newest the memory holds)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Publish even to a remote holding none of this memory's chunks."),
    force: bool = typer.Option(False, "--force", help="Publish a tag already released again, moving its tag."),
    as_json: bool = typer.Option(False, "--json", help="The release report as JSON on stdout."),
) -> None:
    """Publish the included sessions of the project dated up to TAG's commit, then tag the repo TAG.

    Same guarantees as `funes push` (fail-closed secret gate, one commit, private by
    default); all of the release's chunks ship or none. Read it back with
    `--memory org/repo@TAG`."""
    from funes.hub.release import release

    if project is not None and (project.count("/") != 1 or not all(project.split("/"))):
        from funes.errors import UsageError

        raise UsageError(f"--project {project!r}: name the repository as owner/name")
    report = release(memory, tag, project=project, since=since, assume_yes=yes, force=force,
                     confirm=lambda question: confirm(question, default=False, assume_yes=False))
    for warning in report.push.warnings():
        note(f"warning: {warning}")
    if report.retagged_from:
        note(f"--force: {tag} pointed at {report.retagged_from[:12]}; it now names {report.push.commit[:12]}"
             " (readers that resolved it before keep the old commit)")
    note(report.summary())
    if as_json:
        print_json({"remote": report.push.remote, "tag": tag, "date": report.date, "since": report.since,
                    "commit": report.push.commit, "pushed": report.push.pushed, "sessions": report.push.sessions,
                    "created": report.push.created, "private": report.push.private,
                    "retagged_from": report.retagged_from})
