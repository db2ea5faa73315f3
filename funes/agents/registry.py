"""The agents funes knows: the built-in ones, then third-party ones.

Built-in agents are the packages of ``funes/agents/`` that define ``AGENT`` (an
:class:`~funes.agents.base.Agent`); adding a folder there adds an agent.
Third-party agents are entry points in the ``funes.agents`` group whose object
is an Agent instance (or class), e.g. in a plugin's pyproject.toml::

    [project.entry-points."funes.agents"]
    toy = "funes_agent_toy:AGENT"

They are loaded once per process, on first use: the hook (``funes.hook``)
never imports this module.  A plugin that fails to load, or names an agent
already known, costs a one-line warning on stderr, never the command.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import sys
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from funes.agents.base import Agent
from funes.errors import TraceReadError, UsageError
from funes.traces.model import Session, SourceUnit

ENTRY_POINT_GROUP = "funes.agents"
# Lines read to find a JSON Lines file's first record (it may open with a
# summary, a queue operation or an undecodable line).
SNIFF_LINES = 50
_HARNESS = re.compile(r"[a-z0-9][a-z0-9_]*")


def _warn(message: str) -> None:
    print(f"funes: warning: {' '.join(message.split())}", file=sys.stderr)


def _as_agent(value: Any) -> Agent:
    agent = value() if isinstance(value, type) and issubclass(value, Agent) else value
    if not isinstance(agent, Agent):
        raise TypeError(f"{value!r} is not a funes Agent")
    for attribute in ("name", "harness", "label"):
        if not isinstance(getattr(agent, attribute, None), str) or not getattr(agent, attribute):
            raise TypeError(f"{type(agent).__name__}.{attribute} is not a non-empty string")
    # The harness is stored in every row and opens partition keys ("<harness>--<session>").
    if not _HARNESS.fullmatch(agent.harness):
        raise TypeError(f"{type(agent).__name__}.harness {agent.harness!r} is not lower-case letters, digits and _")
    return agent


def _builtin() -> list[Agent]:
    import funes.agents as package

    agents = []
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            agents.append(_as_agent(importlib.import_module(f"{package.__name__}.{module.name}").AGENT))
    return agents


def _plugins() -> list[tuple[str, Agent]]:
    found = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            found.append((f"{entry.name} ({entry.value})", _as_agent(entry.load())))
        except Exception as exc:  # noqa: BLE001 - any failure of someone else's code is a warning
            _warn(f"agent plugin {entry.name!r} ({entry.value}) could not be loaded: {type(exc).__name__}: {exc}")
    return found


@cache
def all_agents() -> tuple[Agent, ...]:
    """Every agent: the built-in ones by folder name, then plugins."""
    agents = _builtin()
    taken = {key for agent in agents for key in _keys(agent)}
    for where, agent in _plugins():
        clash = sorted(taken & set(_keys(agent)))
        if clash:
            _warn(f"agent plugin {where} skipped: {', '.join(clash)} is already an agent's name")
            continue
        taken.update(_keys(agent))
        agents.append(agent)
    return tuple(agents)


def is_builtin(agent: Agent) -> bool:
    return type(agent).__module__.startswith(__package__ + ".")


def _keys(agent: Agent) -> list[str]:
    return [key.strip().lower() for key in (agent.name, agent.harness, *agent.aliases)]


def find_agent(name: str) -> Agent | None:
    """The agent a name, stored harness or alias denotes (any case), or None."""
    key = name.strip().lower()
    return next((agent for agent in all_agents() if key in _keys(agent)), None)


def agent_names(agents: Iterable[Agent] | None = None) -> str:
    """The names a user can type, comma-separated, for messages."""
    return ", ".join(agent.name for agent in (all_agents() if agents is None else agents))


def agent_named(name: str, *, what: str = "agent") -> Agent:
    """The agent ``name`` denotes; a usage error listing the names otherwise."""
    agent = find_agent(name)
    if agent is None:
        raise UsageError(f"unknown {what} {name!r}: expected one of {agent_names()}")
    return agent


def canonical_harness(name: str) -> str | None:
    """The stored harness for a name or alias, or None when no agent has it."""
    agent = find_agent(name)
    return agent.harness if agent is not None else None


def swept_agents() -> list[Agent]:
    """The agents a bare `funes index` reads from their homes."""
    return [agent for agent in all_agents() if agent.swept]


# ---------------------------------------------------------------------------- detection
def _first_record(path: Path) -> dict | None:
    """The first JSON object among a file's first lines (for a folder: its first
    ``.jsonl`` file's), or None."""
    if path.is_dir():
        path = next(iter(sorted(path.rglob("*.jsonl"))), None)  # type: ignore[assignment]
        if path is None:
            return None
    try:
        with open(path, "rb") as handle:
            for _ in range(SNIFF_LINES):
                line = handle.readline()
                if not line:
                    break
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # garbage, or nesting deeper than the decoder goes
                    continue
                if isinstance(record, dict):
                    return record
    except OSError:
        pass
    return None


def _claim(agent: Agent, ask, *args) -> int:
    try:
        claim = ask(*args)
    except Exception:  # noqa: BLE001 - a plugin's broken heuristic claims nothing
        if is_builtin(agent):
            raise
        return 0
    return claim if isinstance(claim, int) else 0


def detect_agent(path: Path) -> Agent:
    """Which agent wrote ``path`` (a file or folder): by location, then by
    content; a usage error when no agent recognises it."""
    agents = all_agents()
    by_location = [(_claim(agent, agent.claims_location, path), -i, agent) for i, agent in enumerate(agents)]
    best = max(by_location, key=lambda claim: claim[:2])
    if best[0] > 0:
        return best[2]
    record = _first_record(path) if path.exists() else None
    by_content = [(_claim(agent, agent.claims_content, path, record), -i, agent) for i, agent in enumerate(agents)]
    best = max(by_content, key=lambda claim: claim[:2])
    if best[0] > 0:
        return best[2]
    raise UsageError(f"cannot tell which agent wrote {path}: name it with --harness ({agent_names()})")


# ---------------------------------------------------------------------------- calling an agent
def _plugin_failure(agent: Agent, action: str, subject: object, exc: Exception) -> TraceReadError:
    return TraceReadError(f"agent plugin {agent.name!r} failed to {action} {subject}: {type(exc).__name__}: {exc}")


def discover_with(agent: Agent, root: Path) -> list[SourceUnit]:
    """``agent.discover(root)`` as a list.  A plugin's unexpected exception
    becomes a TraceReadError naming it (reported and retried, like an unreadable
    transcript), so one broken plugin costs only its own sessions."""
    if is_builtin(agent):
        return list(agent.discover(root))
    try:
        return list(agent.discover(root))
    except (TraceReadError, UsageError):
        raise
    except Exception as exc:  # noqa: BLE001 - someone else's code
        raise _plugin_failure(agent, "discover", root, exc) from exc


def parse_with(agent: Agent, unit: SourceUnit) -> Session:
    """``agent.parse(unit)``, a plugin's unexpected exception made a TraceReadError."""
    if is_builtin(agent):
        return agent.parse(unit)
    try:
        return agent.parse(unit)
    except TraceReadError:
        raise
    except Exception as exc:  # noqa: BLE001 - someone else's code
        raise _plugin_failure(agent, "parse", unit.path, exc) from exc
