"""Forge: the MCP server in the user ``.mcp.json`` and a user skill.

* ``<forge home>/.mcp.json`` ``mcpServers.funes``: ``{command, args}``, what
  ``forge mcp import --scope user '<json>'`` writes (Claude's ``.mcp.json`` shape; the
  local scope is ``<cwd>/.mcp.json``), so ``forge mcp list`` shows it.
* ``<forge home>/skills/funes-recall/SKILL.md`` (Forge's global skills folder).

No hook: Forge has no user-configured hooks (its hooks are built in), so Forge
conversations are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring.mcp_file import McpFileWiring

MCP_FILE = ".mcp.json"


class ForgeWiring(McpFileWiring):
    def config_file(self) -> Path:
        return self.agent.home() / MCP_FILE  # type: ignore[operator]

    def skills_dir(self) -> Path:
        return self.agent.home() / "skills"  # type: ignore[operator]
