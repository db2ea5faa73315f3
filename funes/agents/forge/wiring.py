"""Forge: the MCP server in the user ``.mcp.json`` and a user skill.

* ``<forge home>/.mcp.json`` ``mcpServers.funes``: ``{command, args}``, what
  ``forge mcp import --scope user '<json>'`` writes (Claude's ``.mcp.json`` shape; the
  local scope is ``<cwd>/.mcp.json``), so ``forge mcp list`` shows it.
* ``<forge home>/skills/funes-recall/SKILL.md`` (Forge's global skills folder).

No hook: Forge has no user-configured hooks (its hooks are built in), so Forge
conversations are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText

MCP_FILE = ".mcp.json"


class ForgeWiring(Wiring):
    def _servers(self) -> JsonText:
        path = self.agent.home() / MCP_FILE  # type: ignore[operator]
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        servers = self._servers()
        command = binding.mcp_command()
        servers.set(("mcpServers", SERVER_NAME), {"command": command[0], "args": command[1:]})
        return [document_change(servers, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
                skill_change(self.agent.home() / "skills", install=True)]  # type: ignore[operator]

    def plan_remove(self) -> list[FileChange]:
        servers = self._servers()
        servers.delete(("mcpServers", SERVER_NAME))
        return [document_change(servers, f'MCP server "{SERVER_NAME}"'),
                skill_change(self.agent.home() / "skills", install=False)]  # type: ignore[operator]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        return [*notes, "Forge has no hook funes can install: run `funes index --harness forge` "
                        "(or let the schedule do it) to index new turns."] if notes else notes
