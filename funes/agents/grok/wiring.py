"""Grok CLI: the MCP server and the hooks in ``~/.grok/user-settings.json``.

* ``mcp.servers``: a **list** of ``{id, label, enabled, transport, command, args}``;
  funes's entry is the one with ``id`` ``funes``, replaced in place or appended last.
* ``hooks``: Claude Code's shape (``{event: [{matcher?, hooks: [{type: command,
  command, timeout}]}]}``, ``timeout`` in seconds); ``Stop`` fires once a turn is
  stored and indexes it, with a Hub memory ``SessionStart``/``SessionEnd`` publish.
  The payload names the session by ``session_id`` (and the ``cwd``).
"""

from __future__ import annotations

from typing import Any

from funes.wiring import SERVER_NAME, Binding, Wiring
from funes.wiring.changes import ConfigFileError, FileChange, display, document_change, read_text
from funes.wiring.hook_groups import remove_hooks, set_hooks
from funes.wiring.json_text import JsonText

SETTINGS = "user-settings.json"
HOOK_TIMEOUT = 15  # seconds: it only bounds the hand-off to the worker
PUBLISH_EVENTS = ("SessionStart", "SessionEnd")


class GrokWiring(Wiring):
    def _settings(self) -> JsonText:
        path = self.agent.home() / SETTINGS  # type: ignore[operator]
        return JsonText(path, read_text(path))

    @staticmethod
    def _funes_server(settings: JsonText) -> int | None:
        servers: Any = settings.get(("mcp", "servers"), [])
        if not isinstance(servers, list):
            raise ConfigFileError(f'{display(settings.path)}: "mcp.servers" is not a list; funes changed nothing')
        return next((i for i, server in enumerate(servers)
                     if isinstance(server, dict) and server.get("id") == SERVER_NAME), None)

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        command = binding.mcp_command()
        entry = {"id": SERVER_NAME, "label": SERVER_NAME, "enabled": True, "transport": "stdio",
                 "command": command[0], "args": command[1:]}
        at = self._funes_server(settings)
        if at is None:
            settings.append(("mcp", "servers"), entry)
        else:
            settings.set(("mcp", "servers", at), entry)
        hooks = {"Stop": binding.hook_line(self.agent.name)}
        if binding.remote:
            hooks.update({event: binding.hook_line(self.agent.name, publish=True) for event in PUBLISH_EVENTS})
        set_hooks(settings, hooks, HOOK_TIMEOUT)
        return [document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}; hooks: '
                                + ", ".join(f"{event} ({'index the turn' if event == 'Stop' else 'publish'})"
                                            for event in hooks))]

    def plan_remove(self) -> list[FileChange]:
        settings = self._settings()
        at = self._funes_server(settings)
        if at is not None:
            settings.delete(("mcp", "servers", at))
        remove_hooks(settings)
        return [document_change(settings, f'MCP server "{SERVER_NAME}" and funes hooks')]
