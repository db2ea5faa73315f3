"""Cursor (the IDE and its ``cursor-agent`` CLI): agent transcripts under
``~/.cursor/projects`` and the IDE's ``state.vscdb`` stores; funes's MCP server in
``~/.cursor/mcp.json`` and a ``stop`` hook in ``~/.cursor/hooks.json``.  Format
facts: FORMAT.md."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "state.vscdb"
TRANSCRIPTS = "agent-transcripts"


def user_dir(env: Mapping[str, str] | None = None) -> Path:
    """The IDE's ``User`` folder: ``~/.config/Cursor/User`` on Linux
    (``$XDG_CONFIG_HOME``), ``~/Library/Application Support/Cursor/User`` on macOS,
    ``%APPDATA%\\Cursor\\User`` on Windows."""
    env = os.environ if env is None else env
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Cursor" / "User"
    if sys.platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "Cursor" / "User"
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".config") / "Cursor" / "User"


class Cursor(Agent):
    name = "cursor"
    harness = "cursor"
    label = "Cursor"
    home_default = ".cursor"
    parser = "funes.agents.cursor.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        """The IDE store first (richer: tool results, thinking, times), then the
        transcripts; a session in both is indexed from the first root that has it."""
        return [user_dir(env), self.home(env) / "projects"]  # type: ignore[operator]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        return unit.path.parent.name == "subagents"

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        posix = path.as_posix().rstrip("/") + "/"
        if TRANSCRIPTS in path.parts or "/Cursor/User/" in posix:
            return 2
        if path.name == DB_NAME:
            return 1  # VS Code writes state.vscdb too
        return super().claims_location(path)

    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        """Cursor's ``stop`` payload names the transcript (``transcript_path``) in
        current builds; else the conversation is looked up by ``conversation_id``."""
        if isinstance(payload.get("transcript_path"), str) and payload["transcript_path"]:
            return super().hook_units(payload, env)
        conversation = payload.get("conversation_id")
        if not isinstance(conversation, str) or not conversation:
            raise ValueError("the Cursor payload names no transcript_path or conversation_id")
        for root in self.roots(env):
            units = [unit for unit in self.discover(root) if unit.session_id == conversation] if root.exists() else []
            if units:
                return units[:1]
        raise ValueError(f"no Cursor conversation {conversation!r} under {', '.join(map(str, self.roots(env)))}")

    def hook_session(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
        named = payload.get("transcript_path") or payload.get("conversation_id")
        return named if isinstance(named, str) else ""

    def wiring(self) -> Wiring:
        from funes.agents.cursor.wiring import CursorWiring

        return CursorWiring(self)


AGENT = Cursor()
