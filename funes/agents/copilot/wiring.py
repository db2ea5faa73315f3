"""GitHub Copilot CLI: MCP server in mcp-config.json, a hooks file of funes's own, a skill.

* ``<copilot home>/mcp-config.json`` (``~/.copilot``, or ``$COPILOT_HOME``)
  ``mcpServers.funes``: the entry ``copilot mcp add funes -- <cmd>`` writes
  (``type: "local"``, ``command``, ``args``, ``tools: ["*"]``), so ``copilot mcp list``
  shows it.
* ``<copilot home>/hooks/funes.json``: Copilot loads every ``*.json`` in the user hooks
  folder, so funes's hooks live in a file of their own: ``agentStop`` (the main agent
  finished a turn) indexes it, ``preCompact`` the turns a compaction is about to
  summarise; with a Hub memory ``sessionStart``/``sessionEnd`` publish.
  ``timeoutSec`` is in seconds.
* ``<copilot home>/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

import json

from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, owned_file, read_text
from funes.wiring.json_text import JsonText

HOOK_TIMEOUT_S = 15  # it only bounds the hand-off to the worker
HOOKS_FILE = "funes.json"


def _hooks_file(binding: Binding, agent: str) -> str:
    def entry(command: str) -> list[dict]:
        return [{"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}]

    hooks = {"agentStop": entry(binding.hook_line(agent)), "preCompact": entry(binding.hook_line(agent))}
    if binding.remote:
        hooks["sessionStart"] = hooks["sessionEnd"] = entry(binding.hook_line(agent, publish=True))
    return json.dumps({"version": 1, "hooks": hooks}, indent=2) + "\n"


class CopilotWiring(Wiring):
    def _home(self) -> Path:
        return self.agent.home()  # type: ignore[return-value]

    def _servers(self) -> JsonText:
        path = self._home() / "mcp-config.json"
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        servers = self._servers()
        command = binding.mcp_command()
        servers.set(("mcpServers", SERVER_NAME), {"type": "local", "command": command[0], "args": command[1:],
                                                  "tools": ["*"]})
        events = "agentStop (index the turn), preCompact (index before compaction)" + (", sessionStart, sessionEnd (publish)" if binding.remote else "")
        return [
            document_change(servers, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            owned_file(self._home() / "hooks" / HOOKS_FILE, _hooks_file(binding, self.agent.name), f"hooks: {events}",
                       owned_from=self._home()),
            skill_change(self._home() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        servers = self._servers()
        servers.delete(("mcpServers", SERVER_NAME))
        return [
            document_change(servers, f'MCP server "{SERVER_NAME}"'),
            owned_file(self._home() / "hooks" / HOOKS_FILE, None, "funes hooks", owned_from=self._home()),
            skill_change(self._home() / "skills", install=False),
        ]

