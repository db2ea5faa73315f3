"""Qwen Code: MCP server and hooks in the user settings.json, a user skill.

* ``<qwen home>/settings.json`` (``~/.qwen``, or ``$QWEN_HOME``) ``mcpServers.funes``:
  the entry ``qwen mcp add`` writes (user scope is its default), so ``qwen mcp list``
  shows it.
* the same file's ``hooks``: Qwen Code's hooks are Claude Code's (``Stop`` once per
  completed turn, ``SessionStart``, ``SessionEnd``; ``timeout`` in seconds): ``Stop``
  indexes the turn, and with a Hub memory the session boundaries publish.
* ``<qwen home>/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.hook_groups import remove_hooks, set_hooks
from funes.wiring.json_text import JsonText

HOOK_TIMEOUT_S = 15  # it only bounds the hand-off to the worker
PUBLISH_EVENTS = ("SessionStart", "SessionEnd")


class QwenWiring(Wiring):
    def _settings(self) -> JsonText:
        path = self.agent.home() / "settings.json"
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        command = binding.mcp_command()
        settings.set(("mcpServers", SERVER_NAME), {"command": command[0], "args": command[1:]})
        hooks = {"Stop": binding.hook_line(self.agent.name)}
        if binding.remote:
            hooks.update({event: binding.hook_line(self.agent.name, publish=True) for event in PUBLISH_EVENTS})
        set_hooks(settings, hooks, HOOK_TIMEOUT_S)
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}; hooks: ' + ", ".join(
                f"{event} ({'index the turn' if event == 'Stop' else 'publish'})" for event in hooks)),
            skill_change(self.agent.home() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        settings = self._settings()
        settings.delete(("mcpServers", SERVER_NAME))
        remove_hooks(settings)
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}" and funes hooks'),
            skill_change(self.agent.home() / "skills", install=False),
        ]

