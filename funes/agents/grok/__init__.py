"""Grok CLI (superagent-ai/grok-cli, "grok-dev"): sessions in the SQLite ``~/.grok/grok.db``,
funes's MCP server and a ``Stop`` hook in ``~/.grok/user-settings.json``.  The hook's
payload names the session by id.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import SessionIdHookAgent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "grok.db"


class GrokCli(SessionIdHookAgent):
    name = "grok"
    harness = "grok_cli"
    label = "Grok CLI"
    aliases = ("grok-cli",)
    home_default = ".grok"
    parser = "funes.agents.grok.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / DB_NAME]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        if path.name == DB_NAME and path.parent.name == ".grok":
            return 3
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.grok.wiring import GrokWiring

        return GrokWiring(self)


AGENT = GrokCli()
