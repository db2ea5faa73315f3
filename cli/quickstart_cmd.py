"""`funes quickstart`: index this machine's agent history, then recall from it.

The README's run command.  No server to start: everything is in-process over the
local Lance memory.  On a machine with no agent history it indexes the bundled
example transcripts into a separate demo memory instead, and says so."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import typer

from funes.cli.common import note
from funes.cli.main import app
from funes.errors import bounded_int

DEFAULT_QUESTION = "why did the container build fail"


@app.command("quickstart")
def quickstart_command(
    question: str = typer.Argument(DEFAULT_QUESTION, help="What to recall once indexing is done."),
    k: int = typer.Option(3, "-k", help="Hits to show."),
) -> None:
    """Index every agent home found (or the bundled examples), then recall QUESTION."""
    from funes.cli.index_cmd import run_index
    from funes.config import funes_home
    from funes.discovery import discover
    from funes.memory.location import local_memory, location_for
    from funes.memory.reader import Memory
    from funes.retrieval.bounds import MAX_K, checked_query
    from funes.retrieval.format import format_recall
    from funes.retrieval.search import Recaller

    question = checked_query(question)  # before minutes of indexing, not after
    bounded_int("-k", k, 1, MAX_K)
    errors: list[str] = []
    skipped: list = []
    units = discover(errors=errors, warnings=skipped)
    if units:
        note(f"indexing {len(units)} session(s) found in this machine's agent homes into {local_memory().uri}")
        location = local_memory()
    else:
        demo = funes_home() / "demo"
        from funes.agents import swept_agents

        homes = ", ".join(str(root) for agent in swept_agents() for root in agent.roots())
        note(f"no agent transcripts found ({homes}): indexing the bundled "
             f"example transcripts into a demo memory at {demo} instead")
        units = [unit for path in _examples() for unit in discover(path)]
        location = location_for(str(demo))
    run_index(location, units, discovery_errors=errors, discovery_warnings=skipped)
    recaller = Recaller.open(Memory.open(location))
    note(f'\nrecall "{question}" --memory {location.label}:\n')
    sys.stdout.write(format_recall(recaller.recall(question, k=k)) + "\n")


def _examples() -> list[Path]:
    folder = Path(str(resources.files("funes") / "examples"))
    return sorted(folder.glob("*.jsonl"))
