"""Cline (cline/cline): the SDK's session files (``~/.cline/data/sessions``) and the
classic extension's task folders (``~/.cline/data/tasks``, each editor's
``globalStorage/saoudrizwan.claude-dev/tasks``); funes's MCP server in
``cline_mcp_settings.json`` and a ``TaskComplete`` hook file.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring

EXTENSION_ID = "saoudrizwan.claude-dev"


def _variable(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value).expanduser() if value else None


class Cline(Agent):
    name = "cline"
    harness = "cline"
    label = "Cline"
    home_env = "CLINE_DIR"
    home_default = ".cline"
    parser = "funes.agents.cline.parser"

    def data_dir(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        return _variable(env, "CLINE_DATA_DIR") or self.home(env) / "data"  # type: ignore[operator]

    def sessions_dir(self, env: Mapping[str, str] | None = None) -> Path:
        env = os.environ if env is None else env
        return _variable(env, "CLINE_SESSION_DATA_DIR") or self.data_dir(env) / "sessions"

    def settings_path(self, env: Mapping[str, str] | None = None) -> Path:
        """The MCP settings every Cline build reads (CLI, SDK-based extensions)."""
        env = os.environ if env is None else env
        return _variable(env, "CLINE_MCP_SETTINGS_PATH") or self.data_dir(env) / "settings" / "cline_mcp_settings.json"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        from funes.agents.cline.tasks import global_storage_dirs

        return [self.sessions_dir(env), self.data_dir(env) / "tasks", *global_storage_dirs(EXTENSION_ID)]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        # <root>/<agent>[__<task>].messages.json: a file not named after its folder
        return unit.path.name.endswith(".messages.json") and unit.path.name != f"{unit.path.parent.name}.messages.json"

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if f"/{EXTENSION_ID}/" in posix or "/.cline/data/" in posix:
            return 2
        if path.name.endswith(".messages.json"):
            return 1
        absolute = path.expanduser().absolute()
        if any(absolute.is_relative_to(root.absolute()) for root in self.roots()):
            return 2
        return super().claims_location(path)

    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        """A hook payload names its session folder as ``sessionContext.rootSessionId``
        (``taskId`` is the conversation, not the session): the root's file and its
        subagents' files."""
        root_id = payload.get("sessionContext.rootSessionId")
        if not isinstance(root_id, str) or not root_id or "/" in root_id or root_id in (".", ".."):
            raise ValueError("the Cline payload names no sessionContext.rootSessionId")
        folder = self.sessions_dir(env) / root_id
        if not folder.is_dir():
            raise ValueError(f"no Cline session folder {folder}")
        return list(self.discover(folder))

    def hook_session(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
        named = payload.get("sessionContext.rootSessionId")
        return named if isinstance(named, str) else ""

    def wiring(self) -> Wiring:
        from funes.agents.cline.wiring import ClineWiring

        return ClineWiring(self)


AGENT = Cline()
