"""OpenCode (anomalyco/opencode, formerly sst/opencode): sessions in
``opencode.db`` (and the legacy ``storage/`` JSON tree) of its data folder; funes's
MCP server in the global ``opencode.json`` and a plugin that runs the hook when a
session goes idle.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import SessionIdHookAgent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "opencode.db"
MOVED_DB_ENV = "OPENCODE_DB"


def is_database_name(name: str) -> bool:
    """``opencode.db``, or ``opencode-<channel>.db`` of another release channel."""
    return name == DB_NAME or (name.startswith("opencode-") and name.endswith(".db"))


def data_roots(data: Path, moved: str | None) -> list[Path]:
    """A data folder, and the database a ``*_DB`` variable moves out of it (a
    relative value names a file inside it; ``:memory:`` none): OpenCode's rule,
    which its forks keep."""
    roots = [data]
    if moved and moved != ":memory:":
        path = Path(moved).expanduser()
        path = path if path.is_absolute() else data / path
        if path.parent != data:
            roots.append(path)
    return roots


class OpenCode(SessionIdHookAgent):
    name = "opencode"
    harness = "opencode"
    label = "OpenCode"
    home_default = ".local/share/opencode"
    parser = "funes.agents.opencode.parser"
    user_answer_tools = frozenset({"question"})

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """The data folder: ``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``
        (macOS too: OpenCode uses the XDG layout everywhere)."""
        env = os.environ if env is None else env
        base = env.get("XDG_DATA_HOME")
        return Path(base).expanduser() / "opencode" if base else Path.home() / self.home_default

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        """The data folder, and the database ``$OPENCODE_DB`` names when it lies
        elsewhere (a relative value is taken inside the data folder, as OpenCode does)."""
        env = os.environ if env is None else env
        return data_roots(self.home(env), env.get(MOVED_DB_ENV))

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        if path.suffix == ".db" and is_database_name(path.name):
            return 3
        if "/opencode/storage/" in path.as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.opencode.wiring import OpenCodeWiring

        return OpenCodeWiring(self)


AGENT = OpenCode()
