"""Hermes (NousResearch/hermes-agent): sessions in SQLite (``<home>/state.db`` and
each profile's), funes's MCP server and a ``post_llm_call`` shell hook in
``config.yaml``.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "state.db"


class Hermes(Agent):
    name = "hermes"
    harness = "hermes"
    label = "Hermes"
    home_env = "HERMES_HOME"
    home_default = ".hermes"
    parser = "funes.agents.hermes.parser"

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        if path.name == DB_NAME:
            return 3
        if path.name.endswith(".hermes") or "/.hermes/" in path.as_posix().rstrip("/") + "/":
            return 2
        if path.is_dir() and (path / DB_NAME).exists():
            return 2
        return super().claims_location(path)

    def _profile_home(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> Path:
        """The home of the profile that fired the hook: Hermes runs hooks with that
        profile's ``HERMES_HOME``; else the default home's ``profiles/<name>``."""
        if env.get("HERMES_HOME"):
            return Path(env["HERMES_HOME"]).expanduser()
        home = self.home()
        profile = payload.get("profile")
        if isinstance(profile, str) and profile not in ("", "default"):
            return home / "profiles" / profile  # type: ignore[operator]
        return home  # type: ignore[return-value]

    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        database = self._profile_home(payload, env) / DB_NAME
        session_id = payload.get("session_id")
        if not isinstance(session_id, str) or not session_id or not database.is_file():
            raise ValueError(f"no Hermes session {session_id!r} in {database}")
        return [unit for unit in self.discover(database) if unit.session_id == session_id]

    def hook_session(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
        return f"{self._profile_home(payload, env)}:{payload.get('session_id')}"

    def wiring(self) -> Wiring:
        from funes.agents.hermes.wiring import HermesWiring

        return HermesWiring(self)


AGENT = Hermes()
