"""GitHub Copilot CLI: sessions under ``<copilot home>/session-state/<id>/events.jsonl``,
funes's MCP server in ``mcp-config.json``, an ``agentStop`` hook in a hooks file of its
own.  ``<copilot home>`` is ``$COPILOT_HOME``, else ``~/.copilot``.  Format facts:
FORMAT.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from funes.agents.base import Agent
from funes.traces.model import SourceUnit

if TYPE_CHECKING:
    from funes.wiring import Wiring


class CopilotCli(Agent):
    name = "copilot"
    harness = "copilot_cli"
    label = "GitHub Copilot CLI"
    aliases = ("copilot-cli",)
    home_env = "COPILOT_HOME"
    home_default = ".copilot"
    parser = "funes.agents.copilot.parser"

    def roots(self, env: Mapping[str, str] | None = None) -> list[Path]:
        """``session-state`` in the home; builds before the XDG migration kept it
        under ``$XDG_STATE_HOME/.copilot``, read too when that variable is set."""
        import os

        env = os.environ if env is None else env
        roots = [self.home(env) / "session-state"]  # type: ignore[operator]
        state = env.get("XDG_STATE_HOME")
        if state:
            legacy = Path(state).expanduser() / ".copilot" / "session-state"
            if legacy not in roots:
                roots.append(legacy)
        return roots

    def claims_location(self, path: Path) -> int:
        posix = path.expanduser().as_posix().rstrip("/") + "/"
        if "/.copilot/session-state/" in posix:
            return 2
        if path.name == "events.jsonl" and (path.parent / "workspace.yaml").exists():
            return 1
        return super().claims_location(path)

    def hook_units(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> list[SourceUnit]:
        """Copilot's camelCase payloads name the session file ``transcriptPath``."""
        path = payload.get("transcriptPath") or payload.get("transcript_path")
        return super().hook_units({"transcript_path": path}, env)

    def hook_session(self, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
        named = payload.get("transcriptPath") or payload.get("transcript_path") or payload.get("sessionId")
        return named if isinstance(named, str) else ""

    def wiring(self) -> Wiring:
        from funes.agents.copilot.wiring import CopilotWiring

        return CopilotWiring(self)


AGENT = CopilotCli()
