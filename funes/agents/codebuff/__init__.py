"""Codebuff (CodebuffAI/codebuff): each chat's ``chat-messages.json`` under
``~/.config/manicode/projects/<project folder name>/chats/<chat id>/``.  funes only
reads it: Codebuff keeps no MCP server list of its own (its agents declare theirs in
their definitions) and has no hooks.  Format facts: FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from funes.agents.base import Agent

MESSAGES = "chat-messages.json"


class Codebuff(Agent):
    name = "codebuff"
    harness = "codebuff"
    label = "Codebuff"
    home_default = ".config/manicode"
    parser = "funes.agents.codebuff.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "projects"]  # type: ignore[operator]

    def claims_location(self, path: Path) -> int:
        if path.name == MESSAGES and path.parent.parent.name == "chats":
            return 3
        if "/.config/manicode/projects/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        return super().claims_location(path)


AGENT = Codebuff()
