"""pi (badlogic/pi-mono): sessions under ``<agent dir>/sessions``; pi has no MCP
client or hook configuration, so funes installs a pi package whose extension
bridges the tools and indexes each prompt.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring


class Pi(Agent):
    name = "pi"
    harness = "pi"
    label = "pi"
    home_env = "PI_CODING_AGENT_DIR"
    home_default = ".pi/agent"
    parser = "funes.agents.pi.parser"
    ask_command = ("pi", "-p", "--no-tools", "--no-extensions", "--no-skills", "--no-prompt-templates",
                   "--no-context-files", "--no-session")

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "sessions"]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        return 2 if ".pi/agent/" in path.expanduser().as_posix().rstrip("/") + "/" else super().claims_location(path)

    def claims_content(self, path: Path, first_record: Mapping[str, Any] | None) -> int:
        return 2 if first_record is not None and first_record.get("type") == "session" else 0  # the header

    def wiring(self) -> Wiring:
        from funes.agents.pi.wiring import PiWiring

        return PiWiring(self)


AGENT = Pi()
