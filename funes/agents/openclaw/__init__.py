"""OpenClaw (openclaw/openclaw): each agent's sessions in its SQLite store
``<state>/agents/<agent id>/agent/openclaw-agent.sqlite`` (JSON Lines files under
``<state>/agents/<agent id>/sessions/`` before 2026.7.2), funes's MCP server in
``mcp.servers`` of ``openclaw.json``.  ``<state>`` is ``$OPENCLAW_STATE_DIR``, else
``$OPENCLAW_HOME/.openclaw``, else ``~/.openclaw``.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "openclaw-agent.sqlite"
CONFIG_NAME = "openclaw.json"


def _set(env: Mapping[str, str], name: str) -> str | None:
    """A path variable as OpenClaw reads it: blank, ``undefined`` and ``null`` are unset."""
    value = (env.get(name) or "").strip()
    return value if value and value not in ("undefined", "null") else None


class OpenClaw(Agent):
    name = "openclaw"
    harness = "openclaw"
    label = "OpenClaw"
    home_env = "OPENCLAW_STATE_DIR"
    home_default = ".openclaw"
    parser = "funes.agents.openclaw.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        state = _set(env, "OPENCLAW_STATE_DIR")
        if state:
            return Path(state).expanduser()
        home = _set(env, "OPENCLAW_HOME")
        return (Path(home).expanduser() if home else Path.home()) / self.home_default  # type: ignore[operator]

    def config_file(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        moved = _set(env, "OPENCLAW_CONFIG_PATH")
        return Path(moved).expanduser() if moved else self.home(env) / CONFIG_NAME

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "agents"]

    def claims_location(self, path: Path) -> int:
        if path.name == DB_NAME:
            return 3
        if "/.openclaw/agents/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.openclaw.wiring import OpenClawWiring

        return OpenClawWiring(self)


AGENT = OpenClaw()
