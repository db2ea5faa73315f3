"""Amp (ampcode.com): thread documents under ``$XDG_DATA_HOME/amp/threads`` (default
``~/.local/share/amp``) and saved ``amp threads export`` files; funes's MCP server in
the CLI's ``settings.json``.  Amp keeps threads on ampcode.com and has no hook
files, so turns are indexed by `funes index`.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring


def _xdg(env: Mapping[str, str], name: str, default: str) -> Path:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else Path.home() / default


class Amp(Agent):
    name = "amp"
    harness = "amp"
    label = "Amp"
    parser = "funes.agents.amp.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """Amp's data folder, ``$XDG_DATA_HOME/amp`` (the variable names the parent)."""
        return _xdg(os.environ if env is None else env, "XDG_DATA_HOME", ".local/share") / "amp"

    def config_home(self, env: Mapping[str, str] | None = None) -> Path:
        return _xdg(os.environ if env is None else env, "XDG_CONFIG_HOME", ".config")

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "threads"]

    def claims_location(self, path: Path) -> int:
        if path.name.startswith("T-") and path.name.endswith(".json"):
            return 2 if path.parent.name == "threads" else 1
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.amp.wiring import AmpWiring

        return AmpWiring(self)


AGENT = Amp()
