"""Cline: MCP server in cline_mcp_settings.json, a TaskComplete hook file, a user skill.

* ``$CLINE_MCP_SETTINGS_PATH`` (default ``<cline data>/settings/cline_mcp_settings.json``,
  shared by the CLI and the SDK-based VS Code and JetBrains extensions):
  ``mcpServers.funes`` in the flat form every Cline build reads (``cline config mcp``
  lists it).  Cline creates the file as ``{"mcpServers": {}}``; removing funes's entry
  leaves that object, as Cline would recreate it.
* ``$CLINE_DIR/hooks/TaskComplete.sh`` (``agent_end``: after each completed turn) runs
  the hook with the event's JSON on stdin; with a Hub memory ``SessionShutdown.sh``
  publishes.  Cline runs every hook file it finds by name, so funes's files sit beside
  the user's; a file of the same name that funes did not write is kept.
* ``$CLINE_DIR/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, is_funes_hook, skill_change
from funes.wiring.changes import FileChange, document_change, read_bytes, read_text
from funes.wiring.json_text import JsonText

TOOL_TIMEOUT_S = 120
INDEX_HOOK = "TaskComplete.sh"
PUBLISH_HOOK = "SessionShutdown.sh"


def hook_script(command: list[str]) -> str:
    return ("#!/bin/sh\n"
            "# Written by `funes add cline`; `funes remove cline` deletes it.\n"
            "# Cline passes the event as JSON on stdin; funes hands the session to its indexer.\n"
            f"exec {shlex.join(command)}\n")


def is_funes_script(data: bytes) -> bool:
    """A hook file funes wrote: its ``exec`` line runs funes's hook."""
    lines = data.decode("utf-8", errors="replace").splitlines()
    return any(line.startswith("exec ") and is_funes_hook(line[len("exec "):]) for line in lines)


def hook_change(home: Path, name: str, command: list[str] | None) -> FileChange:
    """funes's hook file ``name`` in ``<home>/hooks`` (None: absent); a user's file of
    that name is kept."""
    path = home / "hooks" / name
    before = read_bytes(path)
    if before is not None and not is_funes_script(before):
        return FileChange(path, None, None, f"{name} (a hook funes did not write: kept)")
    after = None if command is None else hook_script(command).encode("utf-8")
    what = f"hook {name}: " + ("publish the memory" if name == PUBLISH_HOOK else "index each completed turn")
    return FileChange(path, before, after, what, mode=0o755, prune_up_to=home)


class ClineWiring(Wiring):
    def _home(self) -> Path:
        return self.agent.home()  # type: ignore[return-value]

    def _settings(self) -> JsonText:
        path = self.agent.settings_path()  # type: ignore[attr-defined]
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        command = binding.mcp_command()
        settings.set(("mcpServers", SERVER_NAME), {"type": "stdio", "command": command[0], "args": command[1:],
                                                   "disabled": False, "timeout": TOOL_TIMEOUT_S})
        publish = binding.hook_command(self.agent.name, publish=True) if binding.remote else None
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            hook_change(self._home(), INDEX_HOOK, binding.hook_command(self.agent.name)),
            hook_change(self._home(), PUBLISH_HOOK, publish),
            skill_change(self._home() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        settings = self._settings()
        had_servers = settings.get(("mcpServers",)) is not None
        settings.delete(("mcpServers", SERVER_NAME))
        if had_servers and settings.get(("mcpServers",)) is None:
            settings.set(("mcpServers",), {})  # Cline's own empty default, not funes's to delete
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}"'),
            hook_change(self._home(), INDEX_HOOK, None),
            hook_change(self._home(), PUBLISH_HOOK, None),
            skill_change(self._home() / "skills", install=False),
        ]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        if any(change.path.name == INDEX_HOOK and change.after is None and change.before is None
               and "kept" in change.what for change in changes):
            notes.append(f"{self._home() / 'hooks' / INDEX_HOOK} is your own hook: funes left it alone, so turns are "
                         "indexed by `funes index --harness cline` instead.")
        return notes

