"""OpenHands CLI: funes's MCP server in ``~/.openhands/mcp.json``
(``mcpServers.funes``: ``{command, args}``), the file the CLI merges into its agent's
MCP config at start (openhands_cli/locations.py ``MCP_CONFIG_FILE``,
tui/settings/store.py).

No skill: the CLI 1.2 loads skills only from the project's ``.openhands/skills``
(and legacy ``microagents``), not from a user folder.  No hook: OpenHands
conversations are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring import SERVER_NAME, Binding
from funes.wiring.changes import FileChange, document_change
from funes.wiring.mcp_file import McpFileWiring


class OpenHandsWiring(McpFileWiring):
    def config_file(self) -> Path:
        return self.agent.home() / "mcp.json"  # type: ignore[operator]

    def plan_add(self, binding: Binding) -> list[FileChange]:
        command = binding.mcp_command()
        return [document_change(self.with_server(command), f'MCP server "{SERVER_NAME}": {" ".join(command)}')]

    def plan_remove(self) -> list[FileChange]:
        return [document_change(self.without_server(), f'MCP server "{SERVER_NAME}"')]
