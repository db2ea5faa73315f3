"""Discovery and parsing over every agent: which units a path, a harness or this
machine's agent homes hold, and each unit's session, parsed by the agent that owns
its harness.  It asks the agent registry (:mod:`funes.agents`), so it sits above
both the trace model (:mod:`funes.traces`) and the agents, and nothing downstream
of parsing knows which agent wrote a session.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from funes.errors import TraceReadError, UsageError
from funes.traces.common import collecting_discovery_warnings
from funes.traces.model import ParseWarning, Session, SourceUnit, split_session_key


def detect_harness(path: Path) -> str:
    """The harness of the agent that wrote ``path`` (a file or folder), by
    location, then by content (see :func:`funes.agents.detect_agent`)."""
    from funes.agents import detect_agent

    return detect_agent(path.expanduser()).harness


def discover(path: Path | None = None, harness: str | None = None,
             errors: list[str] | None = None, warnings: list[ParseWarning] | None = None) -> list[SourceUnit]:
    """The units to index, newest first, subagent transcripts after main sessions.

    No path: every swept agent's homes found on this machine (or only
    ``harness``'s); a home that cannot be read (a locked database, say) is
    reported in ``errors`` and the sweep goes on with the others.  A path: the
    units under it, parsed as ``harness`` or as detected.  Folders that cannot be
    read are skipped, each reported in ``warnings`` when given.
    """
    with collecting_discovery_warnings([] if warnings is None else warnings):
        return _discover(path, harness, errors)


def _discover(path: Path | None, harness: str | None, errors: list[str] | None) -> list[SourceUnit]:
    from funes.agents import agent_named, detect_agent, swept_agents
    from funes.agents.registry import discover_with

    units: list[SourceUnit] = []
    if path is None:
        agents = [agent_named(harness, what="harness")] if harness else swept_agents()
        for agent in agents:
            for root in agent.roots():
                if not root.exists():
                    continue
                try:
                    units.extend(discover_with(agent, root))
                except TraceReadError as exc:
                    if errors is None:
                        raise
                    errors.append(str(exc))
    else:
        path = path.expanduser().absolute()
        try:
            path.stat()
        except FileNotFoundError:
            raise UsageError(f"no such file or folder: {path}") from None
        except OSError as exc:  # a name too long, a component that is a file, a loop
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        agent = agent_named(harness, what="harness") if harness else detect_agent(path)
        units.extend(discover_with(agent, path))
    return order_units(units)


def _mtime(unit: SourceUnit) -> float:
    try:
        return unit.path.stat().st_mtime
    except OSError:
        return 0.0


def order_units(units: Iterable[SourceUnit]) -> list[SourceUnit]:
    """Main sessions before subagents, newest first within each; one unit per key."""
    from funes.agents import find_agent

    unique: dict[str, SourceUnit] = {}
    for unit in units:
        unique.setdefault(unit.key, unit)

    def is_subagent(unit: SourceUnit) -> bool:
        agent = find_agent(unit.harness)
        return agent is not None and agent.is_subagent_unit(unit)

    return sorted(unique.values(), key=lambda u: (is_subagent(u), -_mtime(u), u.key))


def parse_unit(unit: SourceUnit) -> Session:
    """The unit's session, parsed by the agent that owns its harness."""
    from funes.agents import agent_named
    from funes.agents.registry import parse_with

    return parse_with(agent_named(unit.harness, what="harness"), unit)


def iter_sessions(units: Iterable[SourceUnit]) -> Iterator[Session]:
    for unit in units:
        yield parse_unit(unit)


def units_for_keys(keys: Iterable[str], *, paths: Mapping[str, str] | None = None, roots: Sequence[Path] = (),
                   errors: list[str] | None = None) -> dict[str, SourceUnit]:
    """The current units behind partition keys (``<harness>--<session_id>``).

    Looked for first under the paths a memory recorded for them (``paths``: key →
    transcript or database path), then in that harness's agent homes on this
    machine, then under each trace root (``roots``: folders of transcripts, local
    or mounted shared storage, read as :func:`discover` reads a path).  Keys found
    nowhere are absent; sources that could not be read are reported in ``errors``."""
    wanted = set(keys)
    found: dict[str, SourceUnit] = {}
    errors = [] if errors is None else errors

    def take(source: Path | None, harness: str | None) -> None:
        try:
            units = discover(source, harness, errors=errors)
        except (TraceReadError, UsageError) as exc:  # an unreadable database, a harness no agent has
            errors.append(str(exc))
            return
        for unit in units:
            if unit.key in wanted:
                found.setdefault(unit.key, unit)

    hinted: dict[tuple[str, str], None] = {}
    for key in wanted:
        if paths and key in paths:
            hinted[(split_session_key(key)[0], paths[key])] = None
    for harness, path in hinted:
        if Path(path).exists():
            take(Path(path), harness)
    for harness in sorted({split_session_key(key)[0] for key in wanted - found.keys()}):
        take(None, harness)
    for root in roots:
        if wanted - found.keys():
            if Path(root).exists():
                take(Path(root), None)
            else:
                errors.append(f"no trace root at {root}")
    return found
