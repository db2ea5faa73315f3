"""`funes status`: what a memory holds, how far indexing has got, and the agents on this machine."""

from __future__ import annotations

import typer

from funes.cli.common import print_json
from funes.cli.main import app
from funes.cli.options import READ_MEMORY


@app.command("status")
def status_command(
    memory: str = READ_MEMORY,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    check_remotes: bool = typer.Option(False, "--check-remotes",
                                       help="Ask each remote pushed to what it still holds of what was forgotten or"
                                            " scrubbed here (downloads its head's table); by default the push receipts answer."),
) -> None:
    """Memory location, counts per agent, last indexed, vector backlog, models; every agent found here."""
    from funes.agents.presence import on_this_machine
    from funes.retrieval.status import memory_status, render_status

    status = memory_status(memory, check_remotes=check_remotes)
    indexed = status["harnesses"]
    status["agents"] = [found.to_json(indexed.get(found.agent.harness, {}).get("sessions", 0))
                        for found in on_this_machine()]
    if as_json:
        print_json(status)
    else:
        typer.echo(render_status(status))
