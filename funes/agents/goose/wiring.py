"""Goose: an MCP extension in config.yaml and a hooks plugin for per-turn indexing.

* ``$XDG_CONFIG_HOME/goose/config.yaml`` (default ``~/.config/goose``;
  ``$GOOSE_PATH_ROOT/config`` when that is set) ``extensions.funes``: a ``stdio``
  extension, the shape Goose writes when one is added with ``goose configure``.
* ``~/.agents/plugins/funes/hooks/hooks.json`` (``$GOOSE_PATH_ROOT/.agents/…``):
  Goose loads the hooks of every plugin folder there; ``Stop`` (a reply is done)
  runs the funes hook with the session id on stdin, and with a Hub memory
  ``SessionStart`` and ``SessionEnd`` publish.  Goose records each plugin it finds
  under ``plugins`` in config.yaml itself; that entry is Goose's and stays.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring
from funes.wiring.changes import FileChange, document_change, owned_file, read_text
from funes.wiring.yaml_text import YamlText

HOOK_TIMEOUT_S = 15
EXTENSION_TIMEOUT_S = 300
DESCRIPTION = "Recall earlier coding-agent sessions (funes): verbatim passages with their provenance"


def _root() -> Path | None:
    root = os.environ.get("GOOSE_PATH_ROOT")
    return Path(root) if root and Path(root).is_absolute() else None


def config_file() -> Path:
    root = _root()
    if root is not None:
        return root / "config" / "config.yaml"
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".config") / "goose" / "config.yaml"


def plugins_dir() -> Path:
    return (_root() or Path.home()) / ".agents" / "plugins"


def hooks_text(binding: Binding, agent: str) -> str:
    def group(command: str) -> list[dict]:
        return [{"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}]

    hooks = {"Stop": group(binding.hook_line(agent))}
    if binding.remote:
        hooks["SessionStart"] = hooks["SessionEnd"] = group(binding.hook_line(agent, publish=True))
    return json.dumps({"hooks": hooks}, indent=2, ensure_ascii=False) + "\n"


class GooseWiring(Wiring):

    def _config(self) -> YamlText:
        path = config_file()
        return YamlText(path, read_text(path))

    def _hooks(self, content: str | None) -> FileChange:
        return owned_file(plugins_dir() / "funes" / "hooks" / "hooks.json", content,
                          "plugin hooks: Stop (index the turn)", owned_from=plugins_dir())

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config = self._config()
        command = binding.mcp_command()
        config.set(("extensions", SERVER_NAME), {
            "enabled": True, "type": "stdio", "name": SERVER_NAME, "description": DESCRIPTION,
            "cmd": command[0], "args": command[1:], "envs": {}, "env_keys": [], "timeout": EXTENSION_TIMEOUT_S,
        })
        return [
            document_change(config, f'MCP extension "{SERVER_NAME}": {" ".join(command)}'),
            self._hooks(hooks_text(binding, self.agent.name)),
        ]

    def plan_remove(self) -> list[FileChange]:
        config = self._config()
        config.delete(("extensions", SERVER_NAME))
        return [document_change(config, f'MCP extension "{SERVER_NAME}"'), self._hooks(None)]

