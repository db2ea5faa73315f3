"""Synthetic histories in the on-disk shapes of Continue, Kilo Code, Zed's agent panel,
Factory Droid and OpenHands (kept apart from synthetic.py, which holds the other
formats and the scripted sessions these writers render).  Each writer takes a
folder and the scripted sessions and returns the path to discover from; the
shapes follow each agent's FORMAT.md and test fixtures."""

from __future__ import annotations

from pathlib import Path

import synthetic
from synthetic import ScriptedSession


def write_kilo(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/kilo.db``: the Kilo CLI's store, OpenCode's tables under Kilo's name."""
    db = synthetic.write_opencode(root, sessions)
    return db.rename(db.with_name("kilo.db"))


WRITERS = {"kilo": write_kilo}
