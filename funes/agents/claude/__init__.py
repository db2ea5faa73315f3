"""Claude Code: transcripts under ``<home>/projects``, funes's MCP server in its
user config, a ``Stop`` hook in ``settings.json``.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring


class ClaudeCode(Agent):
    name = "claude"
    harness = "claude_code"
    label = "Claude Code"
    aliases = ("claude-code",)
    home_env = "CLAUDE_CONFIG_DIR"
    home_default = ".claude"
    parser = "funes.agents.claude.parser"
    user_answer_tools = frozenset({"AskUserQuestion"})
    ask_command = ("claude", "-p", "--tools", "", "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}',
                   "--settings", '{"disableAllHooks":true}', "--no-session-persistence", "--disable-slash-commands")

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "projects"]  # type: ignore[operator]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        return unit.path.name.startswith("agent-") or "/subagents/" in unit.path.as_posix()

    def claims_location(self, path: Path) -> int:
        return 2 if ".claude/projects/" in path.expanduser().as_posix().rstrip("/") + "/" else super().claims_location(path)

    def claims_content(self, path: Path, first_record: Mapping[str, Any] | None) -> int:
        # Claude writes many record types (summary, queue-operation, user, …) and
        # adds new ones: any JSON object could be its, the weakest claim.
        return 1 if first_record is not None else 0

    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        units = super().hook_units(payload, env)
        subagents = Path(payload["transcript_path"]).with_suffix("") / "subagents"  # beside the session
        if subagents.is_dir():
            units += self.discover(subagents)
        return units

    def wiring(self) -> Wiring:
        from funes.agents.claude.wiring import ClaudeWiring

        return ClaudeWiring(self)


AGENT = ClaudeCode()
