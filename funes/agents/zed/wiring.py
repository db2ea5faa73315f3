"""Zed: funes's MCP server in the user settings.json.

``context_servers.funes`` ``{"source": "custom", "command", "args", "env"}`` in Zed's
user settings: ``$FLATPAK_XDG_CONFIG_HOME/zed``, else ``$XDG_CONFIG_HOME/zed``, else
``~/.config/zed`` (macOS too), ``%APPDATA%\\Zed`` on Windows.  Zed writes that file
as JSON with comments (its header is a comment block), so it is edited as such:
comments stay, and removing funes's entry restores every byte.  A file with
trailing commas (which Zed also accepts) is refused.

Zed has no hooks: its threads are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText


def settings_path() -> Path:
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "Zed" / "settings.json"
    base = os.environ.get("FLATPAK_XDG_CONFIG_HOME") or os.environ.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".config") / "zed" / "settings.json"


class ZedWiring(Wiring):
    def _settings(self) -> JsonText:
        path = settings_path()
        return JsonText(path, read_text(path), comments=True)

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        command = binding.mcp_command()
        settings.set(("context_servers", SERVER_NAME), {"source": "custom", "command": command[0],
                                                        "args": command[1:], "env": {}})
        return [document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}')]

    def plan_remove(self) -> list[FileChange]:
        settings = self._settings()
        settings.delete(("context_servers", SERVER_NAME))
        return [document_change(settings, f'MCP server "{SERVER_NAME}"')]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        return [*notes, f"Zed has no hooks: run `funes index --harness {self.agent.harness}` (or let the schedule "
                        "do it) to index new threads."] if notes else notes
