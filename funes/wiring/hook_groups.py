"""funes's hooks in the hooks object several agents share (in a settings or hooks JSON file):

    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "…", "timeout": 15}]}], …}}

funes's handlers are those whose command runs funes's hook (``is_funes_hook``).  Setting them
keeps a group of funes's where it is (rewritten in place when its command
changed) and appends a missing one last, so other groups never move: an agent
may key its hook trust by position.  Removing them deletes funes's groups (or handlers,
in a group shared with the user's) and the lists that leaves empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from funes.wiring import SERVER_NAME, Binding, Wiring, is_funes_hook, skill_change
from funes.wiring.changes import ConfigFileError, FileChange, display, document_change, read_text
from funes.wiring.json_text import JsonText


@dataclass(frozen=True)
class Position:
    event: str
    group: int
    handler: int
    alone: bool  # the only handler of its group


def funes_handlers(document: JsonText) -> list[Position]:
    hooks = document.get(("hooks",), {})
    if not isinstance(hooks, dict):
        raise ConfigFileError(f"{display(document.path)}: \"hooks\" is not an object; funes changed nothing")
    found = []
    for event, groups in hooks.items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if isinstance(handler, dict) and is_funes_hook(handler.get("command")):
                    found.append(Position(event, g, h, len(handlers) == 1 and len(group) == 1))
    return found


def handler(command: str, timeout: int) -> dict:
    return {"type": "command", "command": command, "timeout": timeout}


def set_hooks(document: JsonText, desired: dict[str, str], timeout: int) -> None:
    """Make funes's handlers exactly ``desired`` (event → command line)."""
    positions = funes_handlers(document)
    first: dict[str, Position] = {}
    for position in positions:
        first.setdefault(position.event, position)
    kept = {event: position for event, position in first.items() if event in desired}
    for position in reversed(positions):  # from the end: the kept (first) ones keep their indices
        if kept.get(position.event) != position:
            delete(document, position)
    for event, command in desired.items():
        if event in kept:
            position = kept[event]
            document.set(("hooks", event, position.group, "hooks", position.handler), handler(command, timeout))
        else:
            document.append(("hooks", event), {"hooks": [handler(command, timeout)]})


def remove_hooks(document: JsonText) -> list[Position]:
    """Delete funes's handlers; returns where they were."""
    positions = funes_handlers(document)
    for position in reversed(positions):
        delete(document, position)
    return positions


def delete(document: JsonText, position: Position) -> None:
    if position.alone:
        document.delete(("hooks", position.event, position.group))
    else:
        document.delete(("hooks", position.event, position.group, "hooks", position.handler))


class SettingsHooksWiring(Wiring):
    """An agent that keeps funes's MCP server (``mcpServers.funes``: ``command``,
    ``args``) and its hooks in one ``<home>/settings.json``, with a user skill under
    ``<home>/skills``.  Such agents differ only in the event that ends a turn, the
    one fired before a compaction summarises the conversation (the same command
    indexes the turns it is about to drop) and the unit of a hook's ``timeout``,
    which a subclass names."""

    index_event: str
    compact_event: str
    hook_timeout: int  # it only bounds the hand-off to the worker
    publish_events = ("SessionStart", "SessionEnd")

    def _settings(self) -> JsonText:
        path = self.agent.home() / "settings.json"
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        command = binding.mcp_command()
        settings.set(("mcpServers", SERVER_NAME), {"command": command[0], "args": command[1:]})
        hooks = {self.index_event: binding.hook_line(self.agent.name),
                 self.compact_event: binding.hook_line(self.agent.name)}
        if binding.remote:
            hooks.update({event: binding.hook_line(self.agent.name, publish=True) for event in self.publish_events})
        set_hooks(settings, hooks, self.hook_timeout)
        roles = {self.index_event: "index the turn", self.compact_event: "index before compaction"}
        return [
            document_change(settings, f'MCP server "{SERVER_NAME}": {" ".join(command)}; hooks: ' + ", ".join(
                f"{event} ({roles.get(event, 'publish')})" for event in hooks)),
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
