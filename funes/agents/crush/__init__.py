"""Crush (charmbracelet/crush): one SQLite ``crush.db`` per project, found through
the ``projects.json`` of Crush's global data folder; funes's MCP server in the
global ``crush.json`` and a skill (Crush has no end-of-turn hook).  Format facts:
FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "crush.db"
DATA_DIR_NAME = ".crush"
PROJECTS = "projects.json"


class Crush(Agent):
    name = "crush"
    harness = "crush"
    label = "Crush"
    home_env = "CRUSH_GLOBAL_DATA"
    home_default = ".local/share/crush"
    parser = "funes.agents.crush.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """The global data folder: ``$CRUSH_GLOBAL_DATA``, else
        ``$XDG_DATA_HOME/crush``, else ``~/.local/share/crush``."""
        env = os.environ if env is None else env
        if env.get("CRUSH_GLOBAL_DATA"):
            return Path(env["CRUSH_GLOBAL_DATA"]).expanduser()
        base = env.get("XDG_DATA_HOME")
        return Path(base).expanduser() / "crush" if base else Path.home() / self.home_default

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        if path.name == DB_NAME:
            return 3
        if path.name == DATA_DIR_NAME or f"/{DATA_DIR_NAME}/" in path.as_posix() + "/":
            return 2
        if path.is_dir() and ((path / DATA_DIR_NAME / DB_NAME).is_file() or (path / PROJECTS).is_file()):
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.crush.wiring import CrushWiring

        return CrushWiring(self)


AGENT = Crush()
