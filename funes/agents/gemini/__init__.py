"""Gemini CLI (google-gemini/gemini-cli): chats under ``<gemini dir>/tmp/<project>/chats``,
funes's MCP server and an ``AfterAgent`` hook in ``<gemini dir>/settings.json``.
``<gemini dir>`` is ``~/.gemini``, or ``$GEMINI_CLI_HOME/.gemini``.  Format facts:
FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring


class GeminiCli(Agent):
    name = "gemini"
    harness = "gemini_cli"
    label = "Gemini CLI"
    aliases = ("gemini-cli",)
    home_env = "GEMINI_CLI_HOME"
    parser = "funes.agents.gemini.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``: the variable moves the
        folder that holds ``.gemini``, not ``.gemini`` itself."""
        base = super().home(env)
        return (base or Path.home()) / ".gemini"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "tmp"]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        return unit.path.parent.parent.name == "chats"  # chats/<parent id>/<id>.jsonl

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if "/.gemini/tmp/" in posix:
            return 2
        if path.name.startswith("session-") and "/chats/" in posix:
            return 1
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.gemini.wiring import GeminiWiring

        return GeminiWiring(self)


AGENT = GeminiCli()
