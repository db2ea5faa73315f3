"""Roo Code: MCP server in each installed copy's mcp_settings.json, a user skill.

* ``<storage>/settings/mcp_settings.json`` ``mcpServers.funes``, for every Roo Code
  storage on this machine (each editor's ``globalStorage/rooveterinaryinc.roo-cline``,
  the ``roo-cline.customStoragePath`` folder, the Roo CLI's ``~/.vscode-mock/global-storage``)
  that has one: Roo writes ``{"mcpServers": {}}`` there when it first starts, and
  removing funes's entry leaves exactly that.
* ``~/.roo/skills/funes-recall/SKILL.md`` (Roo's global skills folder).

Roo Code has no hooks: its turns are indexed by `funes index` (or the Dagster sensor).
"""

from __future__ import annotations

from pathlib import Path

from funes.errors import FunesError
from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText

TOOL_TIMEOUT_S = 120
SETTINGS = Path("settings") / "mcp_settings.json"


class RooWiring(Wiring):
    def settings_files(self) -> list[Path]:
        """The MCP settings of every Roo Code copy that has started on this machine."""
        return [root / SETTINGS for root in dict.fromkeys(self.agent.roots()) if (root / SETTINGS).is_file()]

    def _documents(self) -> list[JsonText]:
        return [JsonText(path, read_text(path)) for path in self.settings_files()]

    def plan_add(self, binding: Binding) -> list[FileChange]:
        documents = self._documents()
        if not documents:
            raise FunesError("no Roo Code settings on this machine (start Roo Code once, then run `funes add roo`)")
        command = binding.mcp_command()
        changes = []
        for settings in documents:
            settings.set(("mcpServers", SERVER_NAME), {"type": "stdio", "command": command[0], "args": command[1:],
                                                       "timeout": TOOL_TIMEOUT_S})
            changes.append(document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}'))
        return [*changes, skill_change(Path.home() / ".roo" / "skills", install=True)]

    def plan_remove(self) -> list[FileChange]:
        changes = []
        for settings in self._documents():
            had_servers = settings.get(("mcpServers",)) is not None
            settings.delete(("mcpServers", SERVER_NAME))
            if had_servers and settings.get(("mcpServers",)) is None:
                settings.set(("mcpServers",), {})  # Roo's own empty default, not funes's to delete
            changes.append(document_change(settings, f'MCP server "{SERVER_NAME}"'))
        return [*changes, skill_change(Path.home() / ".roo" / "skills", install=False)]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        notes.append("Roo Code has no hooks: run `funes index --harness roo_code` (or the Dagster sensor) to index "
                     "new tasks.")
        return notes

