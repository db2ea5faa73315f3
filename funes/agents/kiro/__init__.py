"""Kiro CLI (formerly Amazon Q Developer CLI): session files under
``<kiro home>/sessions/cli`` and the earlier SQLite stores
(``<data dir>/kiro-cli/data.sqlite3``, ``<data dir>/amazon-q/data.sqlite3``); funes's
MCP server in ``<kiro home>/settings/mcp.json``.  ``<kiro home>`` is ``$KIRO_HOME``,
else ``~/.kiro``.  No hook (they live only inside the user's agent files).  Format
facts: FORMAT.md."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "data.sqlite3"
STORES = ("kiro-cli", "amazon-q")  # folders of the SQLite stores in the data dir


class KiroCli(Agent):
    name = "kiro"
    harness = "kiro_cli"
    label = "Kiro CLI"
    aliases = ("kiro-cli",)
    home_env = "KIRO_HOME"
    home_default = ".kiro"
    parser = "funes.agents.kiro.parser"

    @staticmethod
    def data_dir(env: Mapping[str, str] | None = None) -> Path:
        """The ``dirs`` crate's data-local directory, where the SQLite stores live."""
        xdg = (os.environ if env is None else env).get("XDG_DATA_HOME")
        if xdg:
            return Path(xdg).expanduser()
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Application Support"
        return Path.home() / ".local" / "share"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "sessions" / "cli",  # type: ignore[operator]
                *(self.data_dir(env) / store / DB_NAME for store in STORES)]

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if path.name == DB_NAME and path.parent.name in STORES:
            return 3
        if "/.kiro/sessions/" in posix:
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.kiro.wiring import KiroWiring

        return KiroWiring(self)


AGENT = KiroCli()
