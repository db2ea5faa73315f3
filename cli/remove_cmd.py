"""`funes remove <agent>`: take funes's entries, hooks and files out of an agent."""

from __future__ import annotations

import typer

from funes.cli.main import app


@app.command("remove")
def remove_command(agent: str = typer.Argument(..., help="The agent to unwire (funes add lists them).")) -> None:
    """Take funes out of an agent (server, hooks, files); its other settings, the memory and the transcripts stay."""
    from funes.cli.add_cmd import wireable_agent
    from funes.wiring.changes import apply, summary

    target = wireable_agent(agent)
    wiring = target.wiring()
    changes = wiring.plan_remove()  # every file read and checked before any is written
    apply(changes)
    lines = summary(changes)
    print(f"funes remove {target.name}:")
    print("\n".join(lines) if lines else f"  nothing to remove: funes is not set up in {target.label}")
    for line in wiring.notes_after_remove(changes):
        print(line)
