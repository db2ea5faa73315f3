"""Zed's agent panel (zed-industries/zed): threads in one SQLite database,
``<Zed data dir>/threads/threads.db``, one row per thread holding the whole thread
as zstd-compressed JSON; funes's MCP server in Zed's ``settings.json``
``context_servers``.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "threads.db"


class Zed(Agent):
    name = "zed"
    harness = "zed"
    label = "Zed"
    home_default = ".local/share/zed"
    parser = "funes.agents.zed.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """Zed's data dir (``paths::data_dir``): ``~/Library/Application Support/Zed`` on
        macOS, ``%LOCALAPPDATA%\\Zed`` on Windows, else ``$XDG_DATA_HOME/zed`` (default
        ``~/.local/share/zed``); ``$FLATPAK_XDG_DATA_HOME/zed`` inside a Flatpak."""
        env = os.environ if env is None else env
        if sys.platform == "darwin":
            return Path.home() / "Library" / "Application Support" / "Zed"
        if sys.platform == "win32":
            return Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "Zed"
        base = env.get("FLATPAK_XDG_DATA_HOME") or env.get("XDG_DATA_HOME")
        return Path(base).expanduser() / "zed" if base else Path.home() / self.home_default  # type: ignore[operator]

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "threads" / DB_NAME]

    def claims_location(self, path: Path) -> int:
        if path.name == DB_NAME and path.parent.name == "threads":
            return 3
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.zed.wiring import ZedWiring

        return ZedWiring(self)


AGENT = Zed()
