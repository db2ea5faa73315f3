"""Crush: MCP server in the global crush.json and a user skill; no per-turn hook.

* ``$CRUSH_GLOBAL_CONFIG/crush.json``, else ``$XDG_CONFIG_HOME/crush/crush.json``
  (default ``~/.config/crush/crush.json``) ``mcp.funes``:
  ``{"type": "stdio", "command": …, "args": [...]}``.
* ``~/.config/crush/skills/funes-recall/SKILL.md`` (``$CRUSH_SKILLS_DIR`` when set).

Crush's hooks run only before a tool call (``PreToolUse``, as of 2026-08): there is
no end-of-turn event to index on, so Crush sessions are picked up by
``funes index`` (and the Dagster sensor).
"""

from __future__ import annotations

import os
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText


def _config_home() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return Path(base).expanduser() if base else Path.home() / ".config"


def config_file() -> Path:
    moved = os.environ.get("CRUSH_GLOBAL_CONFIG")
    return Path(moved).expanduser() / "crush.json" if moved else _config_home() / "crush" / "crush.json"


def skills_dir() -> Path:
    moved = os.environ.get("CRUSH_SKILLS_DIR")
    return Path(moved).expanduser() if moved else _config_home() / "crush" / "skills"


class CrushWiring(Wiring):

    def _config(self) -> JsonText:
        path = config_file()
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config = self._config()
        command = binding.mcp_command()
        config.set(("mcp", SERVER_NAME), {"type": "stdio", "command": command[0], "args": command[1:]})
        return [
            document_change(config, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            skill_change(skills_dir(), install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        config = self._config()
        config.delete(("mcp", SERVER_NAME))
        return [document_change(config, f'MCP server "{SERVER_NAME}"'), skill_change(skills_dir(), install=False)]

