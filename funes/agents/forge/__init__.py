"""Forge (antinomyhq/forge, "ForgeCode"): conversations in one SQLite ``.forge.db``
in the Forge home, funes's MCP server in the home's ``.mcp.json``.  The home is
``$FORGE_CONFIG``, else ``~/forge`` when that folder exists (installs from before
the move), else ``~/.forge``.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = ".forge.db"
LEGACY_HOME = "forge"


class Forge(Agent):
    name = "forge"
    harness = "forge"
    label = "Forge"
    aliases = ("forgecode",)
    home_env = "FORGE_CONFIG"
    home_default = ".forge"
    parser = "funes.agents.forge.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        if env.get(self.home_env):
            return Path(env[self.home_env]).expanduser()
        legacy = Path.home() / LEGACY_HOME
        return legacy if legacy.is_dir() else Path.home() / self.home_default  # type: ignore[operator]

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / DB_NAME]

    def claims_location(self, path: Path) -> int:
        if path.name == DB_NAME:
            return 3
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.forge.wiring import ForgeWiring

        return ForgeWiring(self)


AGENT = Forge()
