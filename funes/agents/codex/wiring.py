"""Codex CLI: MCP server in config.toml, hooks in hooks.json, a user skill.

* ``$CODEX_HOME/config.toml`` ``[mcp_servers.funes]`` (what ``codex mcp add`` writes,
  with a start-up timeout long enough for a Python server);
* ``$CODEX_HOME/hooks.json``: a ``Stop`` group indexes each turn and a ``PreCompact``
  group (the same command) the turns a compaction is about to summarise; with a Hub
  memory a ``SessionStart`` group publishes (Codex has no session-end event).  Codex runs a
  hook only once the user trusted it, keyed by its position
  (``[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`` in config.toml), so
  funes's group goes last and the user's never move; the trust step is printed;
  `remove` deletes funes's trust entries too.
* ``~/.agents/skills/funes-recall/SKILL.md`` (Codex's user skills folder).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.hook_groups import funes_handlers, remove_hooks, set_hooks
from funes.wiring.json_text import JsonText
from funes.wiring.toml_text import TomlText

if TYPE_CHECKING:
    from funes.agents.base import Agent

HOOK_TIMEOUT_S = 15
STARTUP_TIMEOUT_S = 30  # Codex's default 10 s is short for a cold Python server
TOOL_TIMEOUT_S = 120


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


class CodexWiring(Wiring):
    def __init__(self, agent: Agent) -> None:
        super().__init__(agent)
        self.shifted_events: list[str] = []  # set by plan_remove: events whose later groups moved up

    def _documents(self) -> tuple[TomlText, JsonText]:
        home: Path = self.agent.home()  # type: ignore[assignment]
        config = home / "config.toml"
        hooks = home.absolute() / "hooks.json"
        return TomlText(config, read_text(config)), JsonText(hooks, read_text(hooks))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config, hooks = self._documents()
        command = binding.mcp_command()
        config.set_table(("mcp_servers", SERVER_NAME), {
            "command": command[0], "args": command[1:],
            "startup_timeout_sec": STARTUP_TIMEOUT_S, "tool_timeout_sec": TOOL_TIMEOUT_S,
        })
        desired = {"Stop": binding.hook_line(self.agent.name), "PreCompact": binding.hook_line(self.agent.name)}
        if binding.remote:
            desired["SessionStart"] = binding.hook_line(self.agent.name, publish=True)
        set_hooks(hooks, desired, HOOK_TIMEOUT_S)
        return [
            document_change(config, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            document_change(hooks, "hooks: Stop (index the turn), PreCompact (index before compaction)"
                            + (", SessionStart (publish)" if binding.remote else "")),
            skill_change(Path.home() / ".agents" / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        config, hooks = self._documents()
        config.delete_table(("mcp_servers", SERVER_NAME))
        groups = hooks.get(("hooks",), {})
        removed = remove_hooks(hooks)
        for position in removed:
            key = f"{hooks.path}:{_snake(position.event)}:{position.group}:{position.handler}"
            config.delete_table(("hooks", "state", key))
        self.shifted_events = sorted({p.event for p in removed
                                      if isinstance(groups.get(p.event), list) and p.group < len(groups[p.event]) - 1})
        return [
            document_change(config, f'MCP server "{SERVER_NAME}" and the trust of funes\'s hooks'),
            document_change(hooks, "funes hooks"),
            skill_change(Path.home() / ".agents" / "skills", install=False),
        ]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        hooks_changed = any(c.changed and c.path.name == "hooks.json" for c in changes)
        config, hooks = self._documents()
        untrusted = [p for p in funes_handlers(hooks)
                     if config.get(("hooks", "state",
                                    f"{hooks.path}:{_snake(p.event)}:{p.group}:{p.handler}")) is None]
        if hooks_changed or untrusted:
            notes.append("Codex runs a new or changed hook only once you trust it: start `codex`, answer "
                         "\"Hooks need review\" (or type /hooks) and trust the funes hook in "
                         f"{hooks.path}. Until then, `funes index --harness codex` indexes Codex sessions.")
        return notes

    def notes_after_remove(self, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_remove(changes)
        if self.shifted_events:
            notes.append("Codex trusts hooks by position: the hooks after funes's in "
                         f"{', '.join(self.shifted_events)} moved up, so review them once in /hooks.")
        return notes

