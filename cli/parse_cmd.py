"""`funes parse PATH`: what a transcript parses to, as JSON Lines (debugging parsers)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import typer

from funes.cli.common import note
from funes.cli.main import app
from funes.errors import TraceReadError


@app.command("parse")
def parse_command(
    path: Path = typer.Argument(..., help="A transcript, an agent home, or an agent's own store (a database, an export file)."),
    harness: str = typer.Option(None, "--harness", help="Parse as this agent (funes status names them) instead of detecting it."),
    chunks: bool = typer.Option(False, "--chunks", help="Print the redacted chunks instead of turns."),
) -> None:
    """Print one JSON line per turn (or per chunk with --chunks)."""
    from funes.chunking import chunk_session
    from funes.discovery import discover, parse_unit

    units = discover(path.expanduser(), harness)
    out = sys.stdout
    warnings = 0
    failures = 0
    for unit in units:
        try:
            session = parse_unit(unit)
        except TraceReadError as exc:
            note(f"funes: {exc}")
            failures += 1
            continue
        for warning in session.warnings:
            note(f"warning: {warning}")
        warnings += len(session.warnings)
        if chunks:
            for chunk in chunk_session(session):
                out.write(json.dumps(dataclasses.asdict(chunk), ensure_ascii=False) + "\n")
            continue
        for turn in session.turns:
            record = {
                "harness": session.harness,
                "session_id": session.session_id,
                "turn_uuid": turn.turn_uuid,
                "parent_uuid": turn.parent_uuid,
                "seq": turn.seq,
                "role": turn.role,
                "ts": turn.ts,
                "workdir": session.workdir,
                "cwd": session.cwd,
                "repo": session.repo,
                "branch": session.branch,
                "source_path": session.source_path,
                "blocks": [
                    {"block_type": b.block_type, "text": b.text, "tool_name": b.tool_name,
                     "files": [[touch.path, touch.action] for touch in b.files], "command": b.command,
                     "exit_code": b.exit_code}
                    for b in turn.blocks
                ],
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if warnings:
        note(f"{warnings} line(s) skipped with warnings")
    if failures:
        raise typer.Exit(1)
