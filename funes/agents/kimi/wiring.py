"""Kimi CLI: the MCP server in the share folder's ``mcp.json`` and a user skill.

* ``<share>/mcp.json`` (``~/.kimi``, or ``$KIMI_SHARE_DIR``) ``mcpServers.funes``:
  ``{command, args}``, what ``kimi mcp add --transport stdio funes -- <command>``
  writes, so ``kimi mcp list`` shows it.
* ``~/.kimi/skills/funes-recall/SKILL.md``: the first of Kimi's user "brand" skill
  folders (always under the user's home, whatever ``$KIMI_SHARE_DIR`` says).

No hook: Kimi's hooks are ``[[hooks]]`` entries of ``config.toml`` (an array of
tables, which funes's TOML splicer does not edit); Kimi sessions are indexed by
``funes index`` sweeps.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring.mcp_file import McpFileWiring


class KimiWiring(McpFileWiring):
    def config_file(self) -> Path:
        return self.agent.home() / "mcp.json"  # type: ignore[operator]

    def skills_dir(self) -> Path:
        return Path.home() / ".kimi" / "skills"
