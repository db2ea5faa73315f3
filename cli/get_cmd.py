"""`funes get`: open a turn with its neighbours."""

from __future__ import annotations

import sys

import typer

from funes.cli.common import interactive, warn_if_damaged
from funes.cli.main import app
from funes.errors import UsageError, bounded_int


@app.command("get")
def get_command(
    session_id: str = typer.Argument(..., help="The session a recall hit names: its id or a unique prefix (8+ characters)."),
    turn_uuid: str = typer.Argument(..., help="The turn uuid a recall hit names."),
    window: int = typer.Option(3, "--window", help="Turns either side to include."),
    output_format: str = typer.Option(None, "--format", help="human or agent (default: human on a terminal)."),
    highlight: str = typer.Option(None, "--highlight", help="Mark this text in the human rendering."),
    memory: str = typer.Option(None, "--memory", help="local (default), a folder, org/repo, hf://datasets/…, s3://…"),
) -> None:
    """The turn and the turns around it by seq, split blocks reassembled whole."""
    from funes.retrieval.access import open_memory
    from funes.retrieval.bounds import MAX_WINDOW
    from funes.retrieval.get import format_window, turn_window

    if output_format not in (None, "human", "agent"):
        raise UsageError(f"--format {output_format!r}: expected human or agent")
    bounded_int("--window", window, 0, MAX_WINDOW)
    opened = open_memory(memory)
    try:
        view = turn_window(opened, session_id, turn_uuid, window)
    finally:
        warn_if_damaged(opened)
    if (output_format or ("human" if interactive() else "agent")) == "agent":
        sys.stdout.write(format_window(view) + "\n")
        return
    from funes.cli.render import print_window

    print_window(view, highlight)
