"""Kilo Code (Kilo-Org/kilocode): the Kilo CLI and the VS Code extension built on it
(an OpenCode fork) keep sessions in ``kilo.db`` of the data folder
``$XDG_DATA_HOME/kilo``; the extension before that (a Roo Code fork) kept Cline-style
task folders in each editor's ``globalStorage/kilocode.kilo-code``.  funes's MCP
server goes in the global ``kilo.json`` and a plugin runs the hook when a session
goes idle.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import SessionIdHookAgent

if TYPE_CHECKING:
    from funes.wiring import Wiring

EXTENSION_ID = "kilocode.kilo-code"
APP = "kilo"
MOVED_DB_ENV = "KILO_DB"


def is_database_name(name: str) -> bool:
    """``kilo.db``, ``kilo-<channel>.db`` of another release channel, or the
    ``opencode-<channel>.db`` a dev channel kept from before the rename."""
    return name.endswith(".db") and (name == "kilo.db" or name.startswith(("kilo-", "opencode-")))


class KiloCode(SessionIdHookAgent):
    name = "kilo"
    harness = "kilo_code"
    label = "Kilo Code"
    aliases = ("kilocode", "kilo-code")
    home_default = ".local/share/kilo"
    parser = "funes.agents.kilo.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """The data folder: ``$XDG_DATA_HOME/kilo``, else ``~/.local/share/kilo`` (every
        OS: Kilo uses xdg-basedir's layout, as OpenCode does)."""
        env = os.environ if env is None else env
        base = env.get("XDG_DATA_HOME")
        return Path(base).expanduser() / APP if base else Path.home() / self.home_default  # type: ignore[operator]

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        """The data folder, the database ``$KILO_DB`` names when it lies elsewhere
        (relative: inside the data folder), and the classic extension's storage in
        each editor."""
        from funes.agents.cline.tasks import global_storage_dirs
        from funes.agents.opencode import data_roots

        env = os.environ if env is None else env
        return [*data_roots(self.home(env), env.get(MOVED_DB_ENV)), *global_storage_dirs(EXTENSION_ID)]

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if f"/{EXTENSION_ID}/" in posix or f"/share/{APP}/" in posix:
            return 2
        if path.suffix == ".db" and path.name == "kilo.db":
            return 3
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.kilo.wiring import KiloWiring

        return KiloWiring(self)


AGENT = KiloCode()
