"""Auggie: the MCP server in the user ``settings.json`` and a user skill.

* ``~/.augment/settings.json`` ``mcpServers.funes``: ``{command, args}``, the user
  settings Auggie merges its MCP servers from, so ``auggie mcp list`` shows it under
  "User-configured MCP servers".
* ``~/.augment/skills/funes-recall/SKILL.md`` (Auggie's user skills folder).

No hook: Auggie's ``Stop`` hook payload names the session (``conversation_id``), but
its hook settings come in several shapes across releases; Auggie sessions are
indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring.mcp_file import McpFileWiring


class AuggieWiring(McpFileWiring):
    def config_file(self) -> Path:
        return self.agent.home() / "settings.json"  # type: ignore[operator]

    def skills_dir(self) -> Path:
        return self.agent.home() / "skills"  # type: ignore[operator]
