"""OpenHands CLI (PyPI ``openhands``, on the openhands-sdk): one folder per
conversation under ``~/.openhands/conversations/<conversation id hex>/``, each event one
JSON file in its ``events/`` folder.  ``$OPENHANDS_PERSISTENCE_DIR`` moves
``~/.openhands`` (conversations and mcp.json), ``$OPENHANDS_CONVERSATIONS_DIR`` the
conversations alone (openhands_cli/locations.py).  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring


class OpenHands(Agent):
    name = "openhands"
    harness = "openhands"
    label = "OpenHands"
    aliases = ("openhands-cli",)
    home_env = "OPENHANDS_PERSISTENCE_DIR"
    home_default = ".openhands"
    parser = "funes.agents.openhands.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        env = os.environ if env is None else env
        if env.get("OPENHANDS_CONVERSATIONS_DIR"):
            return [Path(env["OPENHANDS_CONVERSATIONS_DIR"]).expanduser()]
        return [self.home(env) / "conversations"]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        if "/.openhands/conversations/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.openhands.wiring import OpenHandsWiring

        return OpenHandsWiring(self)


AGENT = OpenHands()
