"""Kimi Code CLI (MoonshotAI/kimi-cli): sessions under
``<share>/sessions/<md5 of the work dir>/<session id>/context.jsonl``, funes's MCP
server in ``<share>/mcp.json`` and a user skill in ``~/.kimi/skills``.  The share
folder is ``$KIMI_SHARE_DIR``, else ``~/.kimi``.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring


class KimiCli(Agent):
    name = "kimi"
    harness = "kimi_cli"
    label = "Kimi CLI"
    aliases = ("kimi-cli", "kimi-code")
    home_env = "KIMI_SHARE_DIR"
    home_default = ".kimi"
    parser = "funes.agents.kimi.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "sessions"]  # type: ignore[operator]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        return "subagents" in unit.path.parts[-3:-2]  # <session>/subagents/<agent id>/context.jsonl

    def claims_location(self, path: Path) -> int:
        if "/.kimi/sessions/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.kimi.wiring import KimiWiring

        return KimiWiring(self)


AGENT = KimiCli()
