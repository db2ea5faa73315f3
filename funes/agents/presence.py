"""Which agents are on this machine: their transcripts on disk and whether funes
is wired into them, for `funes status` and `funes add` without an agent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from funes.agents.base import Agent
from funes.agents.registry import all_agents, discover_with
from funes.errors import FunesError


@dataclass(frozen=True)
class Presence:
    agent: Agent
    roots: list[Path]
    found: bool  # one of its transcript roots exists
    sessions: int  # transcript units on disk
    wireable: bool  # `funes add` can set funes up in it
    wired: bool | None  # funes is set up in it; None: not wireable, or its config cannot be read
    problem: str | None  # why sessions or wired could not be told

    def to_json(self, indexed: int) -> dict:
        return {"name": self.agent.name, "harness": self.agent.harness, "label": self.agent.label,
                "roots": [str(root) for root in self.roots], "found": self.found, "sessions_on_disk": self.sessions,
                "indexed_sessions": indexed, "wired": self.wired, "problem": self.problem}


def presence(agent: Agent) -> Presence:
    """``agent`` on this machine, read now (each root's units are discovered)."""
    roots = agent.roots()
    existing = [root for root in roots if root.exists()]
    sessions, problems = 0, []
    for root in existing:
        try:
            sessions += len(discover_with(agent, root))
        except FunesError as exc:
            problems.append(str(exc))
    wired = None
    wiring = agent.wiring()
    if wiring is not None:
        try:
            wired = wiring.installed()
        except FunesError as exc:
            problems.append(str(exc))
    return Presence(agent, roots, bool(existing), sessions, wiring is not None, wired, "; ".join(problems) or None)


def on_this_machine() -> list[Presence]:
    """Every agent swept from a home or wired by funes, in registry order."""
    return [presence(agent) for agent in all_agents() if agent.swept or agent.wiring() is not None]
