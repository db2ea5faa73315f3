"""Mistral Vibe: the MCP server in the user ``config.toml`` and a user skill.

* ``<vibe home>/config.toml`` (``~/.vibe``, or ``$VIBE_HOME``): a ``[[mcp_servers]]``
  element ``{name = "funes", transport = "stdio", command, args}``, the shape Vibe's
  README documents; the user's other elements and tables keep their bytes.
* ``<vibe home>/skills/funes-recall/SKILL.md`` (Vibe's global skills folder).

No hook: Vibe's hooks (``hooks.toml``) are experimental and off unless
``enable_experimental_hooks`` is set, so Vibe sessions are indexed by ``funes
index`` sweeps.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring import SERVER_NAME
from funes.wiring.changes import read_text
from funes.wiring.mcp_file import McpFileWiring
from funes.wiring.toml_text import TomlText

SERVERS = "mcp_servers"


class VibeWiring(McpFileWiring):
    def config_file(self) -> Path:
        return self.agent.home() / "config.toml"  # type: ignore[operator]

    def skills_dir(self) -> Path:
        return self.agent.home() / "skills"  # type: ignore[operator]

    def with_server(self, command: list[str]) -> TomlText:
        config = TomlText(self.config_file(), read_text(self.config_file()))
        config.set_array_entry(SERVERS, ("name", SERVER_NAME), {
            "name": SERVER_NAME, "transport": "stdio", "command": command[0], "args": command[1:]})
        return config

    def without_server(self) -> TomlText:
        config = TomlText(self.config_file(), read_text(self.config_file()))
        config.delete_array_entry(SERVERS, ("name", SERVER_NAME))
        return config
