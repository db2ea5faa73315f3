"""`funes get`: open a turn with its neighbours."""

from __future__ import annotations

import sys

import typer

from funes.cli.common import interactive, read_memory
from funes.cli.main import app
from funes.cli.options import READ_MEMORY
from funes.errors import UsageError, bounded_int


@app.command("get")
def get_command(
    session_id: str = typer.Argument(..., help="The session a recall hit names: its id or a unique prefix (8+ characters)."),
    turn_uuid: str = typer.Argument(None, help="The turn uuid a recall hit names; leave it out to read a range by seq."),
    window: int = typer.Option(3, "--window", help="Turns either side of TURN_UUID to include."),
    first: int = typer.Option(None, "--from", help="Without TURN_UUID: the first turn (seq) to read; default 0."),
    last: int = typer.Option(None, "--to", help="Without TURN_UUID: the last turn (seq) to read; default --from + 19."),
    output_format: str = typer.Option(None, "--format", help="human or agent (default: human on a terminal)."),
    highlight: str = typer.Option(None, "--highlight", help="Mark this text in the human rendering."),
    memory: str = READ_MEMORY,
) -> None:
    """The turn and the turns around it by seq, or a range of a session's turns
    (--from/--to, output capped near 40,000 characters with a line saying where to
    continue); split blocks reassembled whole."""
    from funes.retrieval.bounds import MAX_WINDOW
    from funes.retrieval.get import format_window, turn_range, turn_window

    if output_format not in (None, "human", "agent"):
        raise UsageError(f"--format {output_format!r}: expected human or agent")
    bounded_int("--window", window, 0, MAX_WINDOW)
    if turn_uuid is not None and (first is not None or last is not None):
        raise UsageError("--from/--to read a range of turns: give them without a TURN_UUID, or drop them")
    if turn_uuid is None:
        view = read_memory(memory, lambda opened: turn_range(opened, session_id, first or 0, last))
    else:
        view = read_memory(memory, lambda opened: turn_window(opened, session_id, turn_uuid, window))
    if (output_format or ("human" if interactive() else "agent")) == "agent":
        sys.stdout.write(format_window(view) + "\n")
        return
    from funes.cli.render import print_window

    print_window(view, highlight)
