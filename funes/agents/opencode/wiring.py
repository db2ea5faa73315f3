"""OpenCode: MCP server in the global config, a plugin for per-turn indexing, a skill.

* ``$XDG_CONFIG_HOME/opencode/opencode.json`` (default ``~/.config/opencode``; the
  ``opencode.jsonc`` there when only that exists, as ``opencode mcp add`` picks)
  ``mcp.funes``: ``{"type": "local", "command": [...], "enabled": true}``, so
  ``opencode mcp list`` shows it.  A ``.jsonc`` with comments is refused: the
  editor keeps bytes exact only for JSON.
* ``…/opencode/plugins/funes.js``: OpenCode loads every ``plugins/*.js`` of its
  config folder; on ``session.idle`` it runs the funes hook with the session id
  (OpenCode has no shell-hook configuration), and with a Hub memory the publish
  hook on ``session.created``.
* ``…/opencode/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, owned_file, read_text
from funes.wiring.json_text import JsonText

FILES = Path(__file__).parent / "files"
PLUGIN = "funes.js"


def config_dir(app: str = "opencode") -> Path:
    """``$XDG_CONFIG_HOME/<app>`` (default ``~/.config/<app>``): OpenCode's, or a fork's."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".config") / app


def config_file() -> Path:
    """The global config file ``opencode mcp add`` edits: opencode.json, else an
    existing opencode.jsonc, else a new opencode.json."""
    plain, commented = config_dir() / "opencode.json", config_dir() / "opencode.jsonc"
    return commented if commented.is_file() and not plain.is_file() else plain


def plugin_text(binding: Binding, agent: str) -> str:
    commands = {"index": binding.hook_command(agent),
                "publish": binding.hook_command(agent, publish=True) if binding.remote else None}
    template = (FILES / PLUGIN).read_text(encoding="utf-8")
    return template.replace("__FUNES_BINDING__", json.dumps(commands, ensure_ascii=False))


class OpenCodeWiring(Wiring):
    """OpenCode's wiring; a fork that keeps OpenCode's config shape and plugin
    loader under another folder overrides :meth:`folder` and :meth:`config_path`."""

    def folder(self) -> Path:
        return config_dir()

    def config_path(self) -> Path:
        return config_file()

    def _config(self) -> JsonText:
        path = self.config_path()
        return JsonText(path, read_text(path))

    def _plugin(self, content: str | None) -> FileChange:
        return owned_file(self.folder() / "plugins" / PLUGIN, content,
                          "plugin: index each turn when the session goes idle",
                          owned_from=self.folder() / "plugins")

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config = self._config()
        command = binding.mcp_command()
        config.set(("mcp", SERVER_NAME), {"type": "local", "command": command, "enabled": True})
        return [
            document_change(config, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
            self._plugin(plugin_text(binding, self.agent.name)),
            skill_change(self.folder() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        config = self._config()
        config.delete(("mcp", SERVER_NAME))
        return [
            document_change(config, f'MCP server "{SERVER_NAME}"'),
            self._plugin(None),
            skill_change(self.folder() / "skills", install=False),
        ]
