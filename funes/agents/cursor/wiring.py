"""Cursor (IDE and CLI): MCP server in ~/.cursor/mcp.json, a stop hook, a user skill.

* ``~/.cursor/mcp.json`` ``mcpServers.funes`` (``{"command", "args"}``): the
  global MCP file the IDE and ``cursor-agent`` both read.
* ``~/.cursor/hooks.json`` (``{"version": 1, "hooks": {"<event>": [{"command"}]}}``):
  ``stop`` (the agent loop ended) runs the funes hook; Cursor sends
  ``conversation_id``, ``workspace_roots`` and, in current builds,
  ``transcript_path`` on stdin.  Entries are flat (no Claude-style groups);
  funes's are the ones whose command is the funes hook.
* ``~/.cursor/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, is_funes_hook, skill_change
from funes.wiring.changes import ConfigFileError, FileChange, display, document_change, read_text
from funes.wiring.json_text import JsonText

INDEX_EVENT = "stop"
HOOKS_VERSION = 1
# What a hooks.json funes created holds once funes's entries are gone again.
_BARE_HOOKS_FILE = '{\n  "version": 1\n}\n'


def cursor_dir() -> Path:
    return Path.home() / ".cursor"


def _entries(hooks: JsonText, event: str) -> list:
    entries = hooks.get(("hooks", event), [])
    if not isinstance(hooks.get(("hooks",), {}), dict) or not isinstance(entries, list):
        raise ConfigFileError(f"{display(hooks.path)}: \"hooks.{event}\" is not a list; funes changed nothing")
    return entries


def _funes_positions(hooks: JsonText, event: str) -> list[int]:
    return [i for i, entry in enumerate(_entries(hooks, event))
            if isinstance(entry, dict) and is_funes_hook(entry.get("command"))]


class CursorWiring(Wiring):

    def _documents(self) -> tuple[JsonText, JsonText]:
        servers, hooks = cursor_dir() / "mcp.json", cursor_dir() / "hooks.json"
        return JsonText(servers, read_text(servers)), JsonText(hooks, read_text(hooks))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        servers, hooks = self._documents()
        command = binding.mcp_command()
        servers.set(("mcpServers", SERVER_NAME), {"command": command[0], "args": command[1:]})
        entry = {"command": binding.hook_line(self.agent.name)}
        positions = _funes_positions(hooks, INDEX_EVENT)
        if hooks.get(("version",)) is None:
            hooks.set(("version",), HOOKS_VERSION)
        for position in reversed(positions[1:]):
            hooks.delete(("hooks", INDEX_EVENT, position))
        if positions:
            hooks.set(("hooks", INDEX_EVENT, positions[0]), entry)
        else:
            hooks.append(("hooks", INDEX_EVENT), entry)
        return [
            document_change(servers, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            document_change(hooks, f"hooks: {INDEX_EVENT} (index the turn)"),
            skill_change(cursor_dir() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        servers, hooks = self._documents()
        servers.delete(("mcpServers", SERVER_NAME))
        positions = _funes_positions(hooks, INDEX_EVENT)
        for position in reversed(positions):
            hooks.delete(("hooks", INDEX_EVENT, position))
        if positions and hooks.text == _BARE_HOOKS_FILE:  # the file funes created: gone with its entries
            hooks.delete(("version",))
        return [
            document_change(servers, f'MCP server "{SERVER_NAME}"'),
            document_change(hooks, "funes hooks"),
            skill_change(cursor_dir() / "skills", install=False),
        ]

