"""Kilo Code: MCP server in the global config, a plugin for per-turn indexing, a skill.

The Kilo CLI is an OpenCode fork and keeps OpenCode's config shape and plugin loader
under ``$XDG_CONFIG_HOME/kilo`` (default ``~/.config/kilo``), so OpenCode's wiring is
reused with Kilo's folder and file names:

* the global config ``kilo mcp add`` edits: the first of ``kilo.jsonc``,
  ``kilo.json``, ``opencode.jsonc``, ``opencode.json`` that exists there, else a new
  ``kilo.json``; ``mcp.funes``: ``{"type": "local", "command": [...], "enabled": true}``,
  so ``kilo mcp list`` shows it (a ``.jsonc`` with comments is refused);
* ``…/kilo/plugins/funes.js``: runs the funes hook with the session id on
  ``session.idle``;
* ``…/kilo/skills/funes-recall/SKILL.md``.

The VS Code extension 5.x+ runs the same CLI, so it reads the same files.  The
classic extension (4.x) kept its MCP servers in ``globalStorage/kilocode.kilo-code/
settings/mcp_settings.json``; funes does not wire it (it has no hooks, and its
tasks are indexed by sweeps).
"""

from __future__ import annotations

from pathlib import Path

from funes.agents.kilo import APP
from funes.agents.opencode.wiring import OpenCodeWiring, config_dir

# What `kilo mcp add` edits, in its order of preference (packages/opencode/src/cli/cmd/mcp.ts).
CONFIG_NAMES = ("kilo.jsonc", "kilo.json", "opencode.jsonc", "opencode.json")
DEFAULT_CONFIG = "kilo.json"


class KiloWiring(OpenCodeWiring):
    def folder(self) -> Path:
        return config_dir(APP)

    def config_path(self) -> Path:
        folder = self.folder()
        return next((folder / name for name in CONFIG_NAMES if (folder / name).is_file()), folder / DEFAULT_CONFIG)
