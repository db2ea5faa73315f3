"""Hermes: MCP server and shell hooks in config.yaml, their consent, a user skill.

* ``$HERMES_HOME/config.yaml``: ``mcp_servers.funes``; ``hooks.post_llm_call`` (once
  per completed turn) indexes it; with a Hub memory ``on_session_start`` and
  ``on_session_finalize`` publish (``on_session_end`` fires every turn, not at the end).
* ``$HERMES_HOME/shell-hooks-allowlist.json``: Hermes runs a shell hook only once its
  exact (event, command) pair is approved, and skips unapproved ones silently off a
  terminal; funes writes its approvals, so indexing runs from the first turn.
* ``$HERMES_HOME/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from pathlib import Path

from funes.wiring import SERVER_NAME, Binding, Wiring, is_funes_hook, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.json_text import JsonText
from funes.wiring.yaml_text import YamlText

HOOK_TIMEOUT_S = 30
INDEX_EVENT = "post_llm_call"
PUBLISH_EVENTS = ("on_session_start", "on_session_finalize")
ALLOWLIST = "shell-hooks-allowlist.json"


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _approval(event: str, command: str) -> dict:
    """An allowlist entry as Hermes records one (it matches on ``event`` and ``command``;
    the script's mtime lets `hermes hooks doctor` notice a changed script)."""
    try:
        script_mtime = _iso(datetime.fromtimestamp(Path(shlex.split(command)[0]).stat().st_mtime, tz=timezone.utc))
    except OSError:
        script_mtime = None
    return {"event": event, "command": command, "approved_at": _iso(datetime.now(timezone.utc)),
            "script_mtime_at_approval": script_mtime}


class HermesWiring(Wiring):
    def _documents(self) -> tuple[YamlText, JsonText]:
        home: Path = self.agent.home()  # type: ignore[assignment]
        config = home / "config.yaml"
        allowlist = home / ALLOWLIST
        return YamlText(config, read_text(config)), JsonText(allowlist, read_text(allowlist))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config, allowlist = self._documents()
        command = binding.mcp_command()
        config.set(("mcp_servers", SERVER_NAME), {"command": command[0], "args": command[1:]})
        desired = {INDEX_EVENT: binding.hook_line(self.agent.name)}
        if binding.remote:
            desired.update({event: binding.hook_line(self.agent.name, publish=True) for event in PUBLISH_EVENTS})
        self._set_hooks(config, desired)
        self._set_approvals(allowlist, desired)
        return [
            document_change(config, f'MCP server "{SERVER_NAME}": {" ".join(command)}; hooks: '
                            + ", ".join(f"{e} ({'index the turn' if e == INDEX_EVENT else 'publish'})"
                                        for e in desired)),
            document_change(allowlist, "approvals of funes's hooks", mode=0o600),
            skill_change(self.agent.home() / "skills", install=True),
        ]

    def plan_remove(self) -> list[FileChange]:
        config, allowlist = self._documents()
        config.delete(("mcp_servers", SERVER_NAME))
        self._set_hooks(config, {})
        self._set_approvals(allowlist, {})
        return [
            document_change(config, f'MCP server "{SERVER_NAME}" and funes hooks'),
            document_change(allowlist, "approvals of funes's hooks"),
            skill_change(self.agent.home() / "skills", install=False),
        ]

    @staticmethod
    def _set_hooks(config: YamlText, desired: dict[str, str]) -> None:
        """funes's entries under ``hooks:`` become exactly ``desired`` (event → command);
        an entry already right stays as it is."""
        hooks = config.get(("hooks",)) or {}
        for event in list(hooks) if isinstance(hooks, dict) else []:
            entries = config.get(("hooks", event))
            if not isinstance(entries, list):
                continue
            ours = [i for i, entry in enumerate(entries) if isinstance(entry, dict) and is_funes_hook(entry.get("command"))]
            wanted = {"command": desired[event], "timeout": HOOK_TIMEOUT_S} if event in desired else None
            keep = next((i for i in ours if entries[i] == wanted), None)
            for index in reversed(ours):
                if index != keep:
                    config.delete(("hooks", event, index))
        for event, command in desired.items():
            entries = config.get(("hooks", event)) or []
            entry = {"command": command, "timeout": HOOK_TIMEOUT_S}
            if entry not in entries:
                config.append(("hooks", event), entry)

    @staticmethod
    def _set_approvals(allowlist: JsonText, desired: dict[str, str]) -> None:
        approvals = allowlist.get(("approvals",), [])
        for index in reversed(range(len(approvals) if isinstance(approvals, list) else 0)):
            entry = approvals[index]
            if isinstance(entry, dict) and is_funes_hook(entry.get("command")) \
                    and desired.get(entry.get("event")) != entry.get("command"):
                allowlist.delete(("approvals", index))
        approved = {(e.get("event"), e.get("command")) for e in allowlist.get(("approvals",), [])
                    if isinstance(e, dict)}
        for event, command in desired.items():
            if (event, command) not in approved:
                allowlist.append(("approvals",), _approval(event, command))

