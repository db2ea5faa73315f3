"""An agent wired by one entry in a JSON config file and a user skill, with no hook.

The agent keeps its MCP servers in a JSON file (``server_key`` names the object that
holds them, ``{command, args}`` each; a subclass whose file is of another shape
overrides ``with_server``/``without_server``) and reads skills from a folder; it has no
command hook funes can install, so its new turns are indexed by ``funes index``.
A subclass names the file, the key and the skills folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText

if TYPE_CHECKING:
    from funes.wiring.toml_text import TomlText


class McpFileWiring(Wiring):
    server_key: tuple[str, ...] = ("mcpServers",)

    def config_file(self) -> Path:
        raise NotImplementedError

    def skills_dir(self) -> Path:
        raise NotImplementedError

    def with_server(self, command: list[str]) -> JsonText | TomlText:
        """The config file with funes's server entry set to run ``command``."""
        config = JsonText(self.config_file(), read_text(self.config_file()))
        config.set((*self.server_key, SERVER_NAME), {"command": command[0], "args": command[1:]})
        return config

    def without_server(self) -> JsonText | TomlText:
        """The config file with funes's server entry taken out."""
        config = JsonText(self.config_file(), read_text(self.config_file()))
        config.delete((*self.server_key, SERVER_NAME))
        return config

    def plan_add(self, binding: Binding) -> list[FileChange]:
        command = binding.mcp_command()
        return [document_change(self.with_server(command), f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
                skill_change(self.skills_dir(), install=True)]

    def plan_remove(self) -> list[FileChange]:
        return [document_change(self.without_server(), f'MCP server "{SERVER_NAME}"'),
                skill_change(self.skills_dir(), install=False)]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        return [*notes, f"{self.agent.label} has no hook funes can install: run `funes index --harness "
                        f"{self.agent.name}` (or let the schedule do it) to index new turns."] if notes else notes
