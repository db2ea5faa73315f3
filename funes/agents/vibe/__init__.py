"""Mistral Vibe (mistralai/mistral-vibe): session logs under
``<vibe home>/logs/session/<prefix>_<time>_<short id>/messages.jsonl`` beside a
``meta.json``, funes's MCP server as a ``[[mcp_servers]]`` entry of
``<vibe home>/config.toml`` and a user skill.  The home is ``$VIBE_HOME``, else
``~/.vibe``.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring


class MistralVibe(Agent):
    name = "vibe"
    harness = "mistral_vibe"
    label = "Mistral Vibe"
    aliases = ("mistral-vibe",)
    home_env = "VIBE_HOME"
    home_default = ".vibe"
    parser = "funes.agents.vibe.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "logs" / "session"]  # type: ignore[operator]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        return "agents" in unit.path.parts[-3:-2]  # <session>/agents/<subagent session>/messages.jsonl

    def claims_location(self, path: Path) -> int:
        if "/.vibe/logs/session/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.vibe.wiring import VibeWiring

        return VibeWiring(self)


AGENT = MistralVibe()
