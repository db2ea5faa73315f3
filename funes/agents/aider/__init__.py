"""Aider (Aider-AI/aider): the markdown chat log ``.aider.chat.history.md`` each
launch appends to in its project folder, found by a bounded search.  funes only
reads Aider: it has no hook to index a turn.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from funes.agents.base import Agent

HISTORY_NAME = ".aider.chat.history.md"


class Aider(Agent):
    name = "aider"
    harness = "aider"
    label = "Aider"
    parser = "funes.agents.aider.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        """``$FUNES_AIDER_ROOTS`` (folders separated by ``os.pathsep``), else the home
        folder, searched a few folders deep; plus the file ``$AIDER_CHAT_HISTORY_FILE``
        names."""
        env = os.environ if env is None else env
        configured = env.get("FUNES_AIDER_ROOTS", "")
        roots = [Path(p).expanduser() for p in configured.split(os.pathsep) if p.strip()] or [Path.home()]
        explicit = env.get("AIDER_CHAT_HISTORY_FILE", "").strip()
        return roots + ([Path(explicit).expanduser()] if explicit else [])

    def claims_location(self, path: Path) -> int:
        if path.name == HISTORY_NAME:
            return 3
        if path.is_dir() and (path / HISTORY_NAME).is_file():
            return 2
        return 0


AGENT = Aider()
