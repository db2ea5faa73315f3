"""`funes push`: publish the memory's new chunks to a Hub dataset repo you own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from funes.cli.common import confirm, note, print_json
from funes.cli.main import app

if TYPE_CHECKING:
    from funes.hub.push import PushReport


@app.command("push")
def push_command(
    remote: str = typer.Argument(..., help="The dataset repo: org/repo or hf://datasets/org/repo."),
    yes: bool = typer.Option(False, "--yes", "-y",
                             help="Publish even to a remote holding none of this memory's chunks (a first push)."),
    memory: str = typer.Option(None, "--memory", help="Memory to publish: local (default), a folder or s3://…"),
    purge_history: bool = typer.Option(False, "--purge-history",
                                       help="Also squash the repo's history, so no earlier commit keeps forgotten sessions."),
    as_json: bool = typer.Option(False, "--json", help="The push report as JSON on stdout."),
) -> None:
    """Upload the chunks the remote lacks as one commit, after a fail-closed secret scan.

    New repos are private. Blocks with secrets are held back (`funes scrub` repairs them);
    exit 2 when that leaves nothing to publish. Sessions `funes forget` removed here are
    removed from the remote's head too, and chunks `funes scrub` changed are replaced by
    their redacted versions; --purge-history squashes its history as well."""
    from funes.hub.push import push
    from funes.memory.location import location_for

    report = push(remote, location=location_for(memory), assume_yes=yes,
                  confirm=lambda question: confirm(question, default=False, assume_yes=False),
                  purge_history=purge_history)
    show_push_report(report)
    if as_json:
        print_json({
            "remote": report.remote, "commit": report.commit, "created": report.created, "private": report.private,
            "pushed": report.pushed, "sessions": report.sessions, "already_there": report.already_there,
            "held_back": report.held_back, "findings": dict(report.gate.findings),
            "awaiting_vectors": report.gate.awaiting_vectors, "pending_review": report.pending_review,
            "card": report.card, "attempts": report.attempts, "retracted": report.retracted,
            "retracted_sessions": report.retracted_sessions,
            "scrub_retracted": report.scrub_retracted, "history_purged": report.history_purged,
            "releases_holding": report.releases_holding, "excluded": report.excluded,
        })


def show_push_report(report: PushReport) -> None:
    """The push's warnings and summary, on stderr."""
    for warning in report.warnings():
        note(f"warning: {warning}")
    note(report.summary())
