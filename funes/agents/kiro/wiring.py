"""Kiro CLI: the MCP server in the user mcp.json.

* ``<kiro home>/settings/mcp.json`` (``~/.kiro``, or ``$KIRO_HOME``) ``mcpServers.funes``:
  ``{command, args, disabled: false}``, the entry ``kiro-cli mcp add --scope global``
  writes; Kiro's default agent includes these servers.

No hook is installed: Kiro CLI's hooks live only inside custom agent files
(``~/.kiro/agents/<name>.json``), so installing one would mean replacing the user's
agent, and their payload (``hook_event_name``, ``cwd``) names no session.  Kiro turns
are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from funes.wiring import SERVER_NAME, Binding, Wiring
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText


class KiroWiring(Wiring):
    def _servers(self) -> JsonText:
        path = self.agent.home() / "settings" / "mcp.json"  # type: ignore[operator]
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        servers = self._servers()
        command = binding.mcp_command()
        servers.set(("mcpServers", SERVER_NAME), {"command": command[0], "args": command[1:], "disabled": False})
        return [document_change(servers, f'MCP server "{SERVER_NAME}": {" ".join(command)}')]

    def plan_remove(self) -> list[FileChange]:
        servers = self._servers()
        servers.delete(("mcpServers", SERVER_NAME))
        return [document_change(servers, f'MCP server "{SERVER_NAME}"')]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        return [*notes, "Kiro CLI has no hook funes can install without replacing your agent: "
                        "run `funes index --harness kiro_cli` (or let the schedule do it) to index new turns."]

