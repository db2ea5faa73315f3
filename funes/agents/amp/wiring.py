"""Amp: MCP server in the CLI's settings.json, a user skill.

* ``$XDG_CONFIG_HOME/amp/settings.json`` (default ``~/.config/amp/settings.json``)
  ``"amp.mcpServers".funes``: what ``amp mcp add funes -- <funes> mcp`` writes, so
  ``amp mcp list`` shows it (offline too).
* ``$XDG_CONFIG_HOME/agents/skills/funes-recall/SKILL.md`` (Amp's global skills folder).

Amp has no hook files; its plugins (``~/.config/amp/plugins/*.ts``, run by Bun) get an
``agent.end`` event per turn: the note describes how one could export the thread for
indexing (FORMAT.md).
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText

SERVERS_KEY = "amp.mcpServers"


class AmpWiring(Wiring):
    def _skills(self) -> Path:
        return self.agent.config_home() / "agents" / "skills"  # type: ignore[attr-defined]

    def _settings(self) -> JsonText:
        path = self.agent.config_home() / "amp" / "settings.json"  # type: ignore[attr-defined]
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        command = binding.mcp_command()
        settings.set((SERVERS_KEY, SERVER_NAME), {"command": command[0], "args": command[1:]})
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            skill_change(self._skills(), install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        settings = self._settings()
        settings.delete((SERVERS_KEY, SERVER_NAME))
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}"'),
            skill_change(self._skills(), install=False),
        ]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        notes.append("Amp keeps threads on ampcode.com: funes indexes the thread files on this machine "
                     f"({self.agent.roots()[0]}) and exports you save there "
                     "(`amp threads export T-… > T-….json`).")
        return notes

