"""Coding agents: one folder per agent, each defining everything agent-specific.

``funes/agents/<name>/`` holds ``__init__.py`` (``AGENT``, an
:class:`~funes.agents.base.Agent`: names, homes, detection, hook payloads, and
where it has them its wiring and `funes ask` command), ``parser.py``
(``discover(root)``, ``parse(unit)``), ``wiring.py`` (MCP server and hooks in
the agent's config files) and ``FORMAT.md`` (the format facts the parser relies
on).  The registry (:mod:`funes.agents.registry`) finds the folders and the
third-party agents of the ``funes.agents`` entry-point group.  See "Adding an
agent" in docs/architecture.md.
"""

from funes.agents.base import Agent
from funes.agents.registry import (
    agent_named,
    agent_names,
    all_agents,
    canonical_harness,
    detect_agent,
    find_agent,
    swept_agents,
)

__all__ = [
    "Agent",
    "agent_named",
    "agent_names",
    "all_agents",
    "canonical_harness",
    "detect_agent",
    "find_agent",
    "swept_agents",
]
