"""`funes add <agent> [memory]`: give an agent funes's recall tools and per-turn indexing."""

from __future__ import annotations

import typer

from funes.cli.main import app
from funes.errors import UsageError

# The first index stores every session as text (searchable by keyword at once), then
# embeds for about this long; later turns' workers and `funes index` fill in the rest.
FIRST_INDEX_EMBED_BUDGET_S = 60.0


@app.command("add")
def add_command(
    agent: str = typer.Argument(None, help="The agent to wire; without one, list the agents funes can add."),
    memory: str = typer.Argument(None, help="Memory the agent recalls from: local (default), a folder, "
                                            "org/repo or hf://… (indexed here, published there), s3://…"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Build the first index without asking (scripts)."),
) -> None:
    """Give an agent funes: its MCP server (recall, get, status), per-turn indexing, publishing for a Hub memory, a first index."""
    from funes.memory.location import LOCAL_LABEL
    from funes.wiring import Binding
    from funes.wiring.changes import apply, summary

    if agent is None:
        print_addable()
        return
    target = wireable_agent(agent)
    wiring = target.wiring()
    binding = Binding(None if memory in (None, LOCAL_LABEL) else memory)
    changes = wiring.plan_add(binding)  # every file read and checked before any is written
    apply(changes)
    lines = summary(changes)
    print(f"funes add {target.name} (memory: {binding.label}):")
    print("\n".join(lines) if lines else f"  nothing to change: funes is already set up in {target.label}")
    for line in wiring.notes_after_add(binding, changes):
        print(line)
    _first_index(target, binding, yes)


def wireable_agent(name: str):
    """The agent ``name`` denotes, if funes can wire it (a usage error naming those
    it can otherwise)."""
    from funes.agents import agent_names, all_agents, find_agent

    target = find_agent(name)
    if target is None or target.wiring() is None:
        what = f"funes cannot wire {target.label} (it only reads its transcripts)" if target else \
            f"unknown agent {name!r}"
        raise UsageError(f"{what}: expected one of {agent_names(a for a in all_agents() if a.wiring() is not None)}")
    return target


def print_addable() -> None:
    """Every agent funes can wire: found on this machine or not, wired or not."""
    from funes.agents.presence import on_this_machine

    print("Agents funes can add (funes add <name> [memory]):")
    addable = [found for found in on_this_machine() if found.wireable]
    width = max((len(found.agent.name) for found in addable), default=0)
    for found in addable:
        where = (f"{found.sessions} session(s) on this machine" if found.found
                 else "not found on this machine")
        state = "wired" if found.wired else "not wired" if found.wired is False else f"unknown ({found.problem})"
        print(f"  {found.agent.name:<{width}} {found.agent.label}: {where}, {state}")


def _first_index(target, binding, yes: bool) -> None:
    """Index the agent's existing sessions when the memory has none of them yet."""
    from funes.cli.common import ProgressBars, confirm, note
    from funes.discovery import discover
    from funes.embedding import load_embedder
    from funes.errors import MemoryMissingError, WriterBusyError
    from funes.indexing import index_memory
    from funes.memory.location import location_for
    from funes.memory.sql import quote
    from funes.memory.reader import Memory
    from funes.pipelines.records import recorder

    location = location_for(None if binding.hub else binding.memory)
    try:
        if Memory.open(location).count(f"harness = {quote(target.harness)}"):
            return
    except MemoryMissingError:
        pass
    units = discover(None, target.name)
    if not units:
        print(f"No {target.label} sessions on this machine yet: each new turn is indexed as it ends.")
        return
    if not confirm(f"Build the first index of your {len(units)} {target.label} session(s) now "
                   "(text first, then vectors for about a minute)?", default=True, assume_yes=yes):
        note(f"No first index yet: run `funes index --harness {target.name}` (or `funes add {target.name} --yes`);"
             " new turns are indexed as they end meanwhile.")
        return
    bars = ProgressBars()
    try:
        with bars.shown():
            report = index_memory(location, units, embedder=load_embedder,
                                  backlog_budget_s=FIRST_INDEX_EMBED_BUDGET_S, progress=bars, record=recorder("cli"))
    except WriterBusyError as exc:
        raise WriterBusyError(f"{exc}; funes is set up in {target.label}: build its first index later with "
                              f"`funes index --harness {target.name}`") from exc
    print(f"First index: {report.changed} {target.label} session(s), {report.chunks_added} chunks searchable by "
          f"keyword, {report.embedded} by meaning so far" + (f" ({report.pending} more are embedded by later turns)"
                                                             if report.pending else "") + ".")
