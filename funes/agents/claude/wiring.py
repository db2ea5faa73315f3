"""Claude Code: MCP server in the user config, hooks in settings.json, a user skill.

* ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``) ``mcpServers.funes``: the
  user-scope entry ``claude mcp add -s user`` writes, so ``claude mcp list`` shows it.
* ``~/.claude/settings.json`` ``hooks``: ``Stop`` indexes each turn, and ``PreCompact``
  (the same command) the turns a compaction is about to summarise; with a Hub memory
  ``SessionStart`` and ``SessionEnd`` publish.  Edited in place (funes's own groups
  only), so hooks run from the next session without a plugin marketplace.
* ``~/.claude/skills/funes-recall/SKILL.md``: when to recall.
"""

from __future__ import annotations

import os
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.hook_groups import remove_hooks, set_hooks
from funes.wiring.json_text import JsonText

HOOK_TIMEOUT_S = 15  # seconds; it only bounds the hand-off to the worker
HOOK_ROLES = {"Stop": "index the turn", "PreCompact": "index before compaction"}


class ClaudeWiring(Wiring):
    def _home(self) -> Path:
        return self.agent.home()  # type: ignore[return-value]

    def user_config(self) -> Path:
        """Where Claude keeps user-scope MCP servers: its state file, ``~/.claude.json``, or
        inside ``$CLAUDE_CONFIG_DIR`` when that is set."""
        return self._home() / ".claude.json" if os.environ.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude.json"

    def _documents(self) -> tuple[JsonText, JsonText]:
        servers = self.user_config()
        settings = self._home() / "settings.json"
        return JsonText(servers, read_text(servers)), JsonText(settings, read_text(settings))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        servers, settings = self._documents()
        command = binding.mcp_command()
        servers.set(("mcpServers", SERVER_NAME), {"type": "stdio", "command": command[0], "args": command[1:],
                                                  "env": {}})
        hooks = {"Stop": binding.hook_line(self.agent.name), "PreCompact": binding.hook_line(self.agent.name)}
        if binding.remote:
            hooks["SessionStart"] = hooks["SessionEnd"] = binding.hook_line(self.agent.name, publish=True)
        set_hooks(settings, hooks, HOOK_TIMEOUT_S)
        return [
            document_change(servers, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            document_change(settings, "hooks: " + ", ".join(f"{event} ({HOOK_ROLES.get(event, 'publish')})"
                                                            for event in hooks)),
            skill_change(self._home() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        servers, settings = self._documents()
        servers.delete(("mcpServers", SERVER_NAME))
        remove_hooks(settings)
        return [
            document_change(servers, f'MCP server "{SERVER_NAME}"'),
            document_change(settings, "funes hooks"),
            skill_change(self._home() / "skills", install=False),
        ]
