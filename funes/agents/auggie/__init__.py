"""Auggie, Augment Code's CLI (npm ``@augmentcode/auggie``): one JSON file per session
in ``~/.augment/sessions/<session id>.json``, funes's MCP server in
``~/.augment/settings.json`` and a user skill in ``~/.augment/skills``.  Format
facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent

if TYPE_CHECKING:
    from funes.wiring import Wiring


class Auggie(Agent):
    name = "auggie"
    harness = "auggie"
    label = "Auggie"
    aliases = ("augment", "augment-cli")
    home_default = ".augment"
    parser = "funes.agents.auggie.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "sessions"]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        if "/.augment/sessions/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.auggie.wiring import AuggieWiring

        return AuggieWiring(self)


AGENT = Auggie()
