"""Qwen Code (QwenLM/qwen-code): chats under ``<runtime>/projects/<cwd slug>/chats``,
funes's MCP server and a ``Stop`` hook in ``<qwen home>/settings.json``.  The Qwen
home is ``$QWEN_HOME``, else ``~/.qwen``; ``<runtime>`` is ``$QWEN_RUNTIME_DIR``, else
the home.  Format facts: FORMAT.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring

RUNTIME_ENV = "QWEN_RUNTIME_DIR"


class QwenCode(Agent):
    name = "qwen"
    harness = "qwen_code"
    label = "Qwen Code"
    aliases = ("qwen-code",)
    home_env = "QWEN_HOME"
    home_default = ".qwen"
    parser = "funes.agents.qwen.parser"

    def runtime_dir(self, env: Mapping[str, str] | None = None) -> Path:
        """Where session data lives: ``$QWEN_RUNTIME_DIR``, else the home."""
        env = os.environ if env is None else env
        runtime = env.get(RUNTIME_ENV)
        return Path(runtime).expanduser() if runtime else self.home(env)  # type: ignore[return-value]

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        return [self.runtime_dir(env) / "projects"]

    def is_subagent_unit(self, unit: SourceUnit) -> bool:
        return "subagents" in unit.path.parts[-3:-2]  # subagents/<session id>/agent-<id>.jsonl

    def claims_location(self, path: Path) -> int:
        if "/.qwen/projects/" in path.expanduser().as_posix().rstrip("/") + "/":
            return 2
        runtime = self.runtime_dir()
        if path.expanduser().absolute().is_relative_to(runtime.absolute()):
            return 2
        return super().claims_location(path)

    def wiring(self) -> Wiring:
        from funes.agents.qwen.wiring import QwenWiring

        return QwenWiring(self)


AGENT = QwenCode()
