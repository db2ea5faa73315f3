"""Factory Droid: MCP server in the user mcp.json, hooks in settings.json, a skill.

Droid's configuration follows Claude Code's shapes under ``~/.factory``, so Claude
Code's wiring is reused with Droid's files:

* ``~/.factory/mcp.json`` ``mcpServers.funes``: ``{type: "stdio", command, args, env}``,
  the user-scope entry ``droid mcp add`` writes;
* ``~/.factory/settings.json`` ``hooks``: ``Stop`` indexes each turn (with a Hub memory
  ``SessionStart`` and ``SessionEnd`` publish); Droid sends ``transcript_path``, the
  session's JSON Lines file, on stdin;
* ``~/.factory/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

from pathlib import Path

from funes.agents.claude.wiring import ClaudeWiring


class DroidWiring(ClaudeWiring):
    def user_config(self) -> Path:
        return self._home() / "mcp.json"
