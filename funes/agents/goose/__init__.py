"""Goose (block/goose): sessions in ``sessions.db`` (and legacy ``.jsonl`` files) of
its data folder; funes as a stdio extension in ``config.yaml`` and a plugin whose
``Stop`` hook indexes each reply.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import SessionIdHookAgent

if TYPE_CHECKING:
    from funes.wiring import Wiring

DB_NAME = "sessions.db"
ROOT_ENV = "GOOSE_PATH_ROOT"  # moves every Goose folder: <root>/data, <root>/config


class Goose(SessionIdHookAgent):
    name = "goose"
    harness = "goose"
    label = "Goose"
    home_default = ".local/share/goose"
    parser = "funes.agents.goose.parser"

    def home(self, env: Mapping[str, str] | None = None) -> Path:
        """The data folder: ``$GOOSE_PATH_ROOT/data`` (an absolute root), else
        ``$XDG_DATA_HOME/goose``, else ``~/.local/share/goose`` (macOS too)."""
        env = os.environ if env is None else env
        root = env.get(ROOT_ENV)
        if root and Path(root).is_absolute():
            return Path(root) / "data"
        base = env.get("XDG_DATA_HOME")
        return Path(base).expanduser() / "goose" if base else Path.home() / self.home_default

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.home(env) / "sessions"]

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        if "/goose/sessions/" in path.as_posix().rstrip("/") + "/" or path.as_posix().endswith("/goose/sessions"):
            return 2
        return super().claims_location(path)

    def claims_content(self, path: Path, first_record: Mapping[str, Any] | None) -> int:
        # A legacy session file opens with its metadata: working_dir, description, message_count.
        return 2 if first_record is not None and {"working_dir", "description", "message_count"} <= set(first_record) \
            else 0

    def wiring(self) -> Wiring:
        from funes.agents.goose.wiring import GooseWiring

        return GooseWiring(self)


AGENT = Goose()
