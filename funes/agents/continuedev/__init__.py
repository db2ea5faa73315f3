"""Continue (continuedev/continue): the IDE extensions (VS Code, JetBrains) and the
CLI ``cn`` keep each chat session as one JSON file in ``~/.continue/sessions``;
funes's MCP server goes in the ``mcpServers`` list of ``~/.continue/config.yaml``.
``$CONTINUE_GLOBAL_DIR`` moves the whole folder.  Format facts: FORMAT.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring

SESSIONS = "sessions"
SESSION_LIST = "sessions.json"


class ContinueDev(Agent):
    name = "continuedev"
    harness = "continue_dev"
    label = "Continue.dev"
    aliases = ("continue-dev", "cn")
    home_env = "CONTINUE_GLOBAL_DIR"
    home_default = ".continue"
    parser = "funes.agents.continuedev.parser"

    def roots(self, env=None) -> list[Path]:
        return [self.home(env) / SESSIONS]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        if "/.continue/sessions/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.continuedev.wiring import ContinueWiring

        return ContinueWiring(self)


AGENT = ContinueDev()
