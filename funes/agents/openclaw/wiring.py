"""OpenClaw: the MCP server in ``mcp.servers`` of the config file, and a managed skill.

* ``openclaw.json`` (``$OPENCLAW_CONFIG_PATH``, else ``<state>/openclaw.json``)
  ``mcp.servers.funes``: ``{command, args}``, what ``openclaw mcp set funes '<json>'``
  writes, so ``openclaw mcp list`` shows it and OpenClaw's runtimes get its tools.
* ``<state>/skills/funes-recall/SKILL.md`` (OpenClaw's managed skills, seen by every
  local agent).

No hook: OpenClaw's hooks run inside its Gateway as TypeScript modules, not commands;
OpenClaw sessions are indexed by ``funes index`` sweeps.  The config file may be
JSON5 (comments, trailing commas): funes then refuses to edit it and says so.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring.mcp_file import McpFileWiring


class OpenClawWiring(McpFileWiring):
    server_key = ("mcp", "servers")

    def config_file(self) -> Path:
        return self.agent.config_file()  # type: ignore[attr-defined]

    def skills_dir(self) -> Path:
        return self.agent.home() / "skills"  # type: ignore[operator]
