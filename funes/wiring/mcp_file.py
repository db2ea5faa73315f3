"""An agent wired by one entry in a JSON config file and a user skill, with no hook.

The agent keeps its MCP servers in a JSON file (``server_key`` names the object that
holds them, ``{command, args}`` each) and reads skills from a folder; it has no
command hook funes can install, so its new turns are indexed by ``funes index``.
A subclass names the file, the key and the skills folder.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText


class McpFileWiring(Wiring):
    server_key: tuple[str, ...] = ("mcpServers",)

    def config_file(self) -> Path:
        raise NotImplementedError

    def skills_dir(self) -> Path:
        raise NotImplementedError

    def _config(self) -> JsonText:
        path = self.config_file()
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config = self._config()
        command = binding.mcp_command()
        config.set((*self.server_key, SERVER_NAME), {"command": command[0], "args": command[1:]})
        return [document_change(config, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
                skill_change(self.skills_dir(), install=True)]

    def plan_remove(self) -> list[FileChange]:
        config = self._config()
        config.delete((*self.server_key, SERVER_NAME))
        return [document_change(config, f'MCP server "{SERVER_NAME}"'), skill_change(self.skills_dir(), install=False)]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        return [*notes, f"{self.agent.label} has no hook funes can install: run `funes index --harness "
                        f"{self.agent.name}` (or let the schedule do it) to index new turns."] if notes else notes
