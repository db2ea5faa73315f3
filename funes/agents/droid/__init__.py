"""Factory Droid (Factory-AI; the ``droid`` CLI is closed source): sessions as JSON
Lines in ``~/.factory/sessions/<encoded cwd>/<id>.jsonl`` (earlier builds:
``~/.factory/projects/…``); funes's MCP server in ``~/.factory/mcp.json`` and a
``Stop`` hook in ``~/.factory/settings.json``.  Format facts: FORMAT.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

# The session folders: today's, and the one earlier builds (and the hooks reference's
# transcript_path examples) name.
SESSION_FOLDERS = ("sessions", "projects")


class FactoryDroid(Agent):
    name = "droid"
    harness = "factory_droid"
    label = "Factory Droid"
    aliases = ("factory-droid", "factory")
    home_default = ".factory"
    parser = "funes.agents.droid.parser"

    def roots(self, env=None) -> list[Path]:
        home = self.home(env)
        return [home / folder for folder in SESSION_FOLDERS]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if any(f"/.factory/{folder}/" in posix for folder in SESSION_FOLDERS):
            return 2
        return super().claims_location(path)

    def claims_content(self, path: Path, first_record: Any) -> int:
        """Droid's files open with a ``session_start`` record (id, title, owner, cwd)."""
        if isinstance(first_record, dict) and first_record.get("type") == "session_start" and "owner" in first_record:
            return 2
        return 0

    def wiring(self) -> Wiring:
        from funes.agents.droid.wiring import DroidWiring

        return DroidWiring(self)


AGENT = FactoryDroid()
