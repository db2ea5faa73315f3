"""OpenAI Codex CLI: rollouts under ``<home>/sessions`` and ``archived_sessions``,
funes's MCP server in ``config.toml``, a ``Stop`` hook in ``hooks.json``.
Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

# Record types only a Codex rollout has.
_CODEX_RECORDS = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})


class Codex(Agent):
    name = "codex"
    harness = "codex"
    label = "Codex"
    home_env = "CODEX_HOME"
    home_default = ".codex"
    parser = "funes.agents.codex.parser"
    user_answer_tools = frozenset({"request_user_input"})
    ask_command = ("codex", "exec", "--ephemeral", "--skip-git-repo-check", "--sandbox", "read-only",
                   "--color", "never", "-c", "mcp_servers={}", "-c", "features.shell_tool=false",
                   "-c", "features.unified_exec=false", "-c", "features.hooks=false",
                   "-c", 'web_search="disabled"', "-")

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        home = self.home(env)
        return [home / "sessions", home / "archived_sessions"]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        if ".codex/" in path.as_posix().rstrip("/") + "/":
            return 2
        if path.name.startswith("rollout-") and ".jsonl" in path.name:
            return 1
        if path.is_dir() and (path / "sessions").is_dir() and any((path / "sessions").glob("*/*/*/rollout-*")):
            return 1
        return super().claims_location(path)

    def claims_content(self, path: Path, first_record: Mapping[str, Any] | None) -> int:
        return 2 if first_record is not None and first_record.get("type") in _CODEX_RECORDS else 0

    def wiring(self) -> Wiring:
        from funes.agents.codex.wiring import CodexWiring

        return CodexWiring(self)


AGENT = Codex()
