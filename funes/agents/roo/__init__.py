"""Roo Code (RooCodeInc/Roo-Code), a fork of Cline's classic extension: task folders
in each editor's ``globalStorage/rooveterinaryinc.roo-cline`` (or the
``roo-cline.customStoragePath`` folder, or the Roo CLI's ``~/.vscode-mock/global-storage``),
read with Cline's classic task reader; funes's MCP server in each copy's
``settings/mcp_settings.json``.  Roo Code has no hooks.  Format facts: FORMAT.md."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring

EXTENSION_ID = "rooveterinaryinc.roo-cline"
_CUSTOM_STORAGE = re.compile(r'"roo-cline\.customStoragePath"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _custom_storage_paths() -> list[Path]:
    """The ``roo-cline.customStoragePath`` each editor's settings.json sets.  The file
    is JSON with comments, so the one string is read with a pattern, not a parser."""
    from funes.agents.cline.tasks import editor_user_dirs

    found = []
    for user in editor_user_dirs():
        try:
            text = (user / "settings.json").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = _CUSTOM_STORAGE.search(text)
        if match and match.group(1).strip():
            value = json.loads(f'"{match.group(1)}"')
            found.append(Path(value).expanduser())
    return found


class RooCode(Agent):
    name = "roo"
    harness = "roo_code"
    label = "Roo Code"
    aliases = ("roo-code",)
    parser = "funes.agents.roo.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        from funes.agents.cline.tasks import global_storage_dirs

        return [*global_storage_dirs(EXTENSION_ID), *_custom_storage_paths(),
                Path.home() / ".vscode-mock" / "global-storage"]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        """A ``new_task`` subtask names its parent in ``history_item.json``."""
        try:
            item = json.loads((unit.path.parent / "history_item.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(item, dict) and bool(item.get("parentTaskId"))

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if f"/{EXTENSION_ID}/" in posix or "/.vscode-mock/global-storage/" in posix:
            return 2
        if path.name == "history_item.json" or (path.is_dir() and (path / "history_item.json").is_file()):
            return 1
        return 0

    def wiring(self) -> Wiring:
        from funes.agents.roo.wiring import RooWiring

        return RooWiring(self)


AGENT = RooCode()
