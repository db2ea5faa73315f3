"""Continue: MCP server in the global config.yaml, a user skill.

* ``<continue home>/config.yaml`` (``~/.continue``, ``$CONTINUE_GLOBAL_DIR`` moves
  it) ``mcpServers``: a list of blocks; funes appends
  ``{name: funes, type: stdio, command, args}`` (or replaces its own entry of that
  name) and removing it takes exactly those lines out.  Both the IDE extensions and
  the CLI ``cn`` read this file.  Continue writes it on first start (``name``,
  ``version``, ``schema``, models); without it funes refuses and says so.
* ``<continue home>/skills/funes-recall/SKILL.md`` (Continue's global skills folder).

Continue has no hooks: its sessions are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from funes.errors import FunesError
from funes.wiring import SERVER_NAME, Binding, Wiring, skill_change
from funes.wiring.changes import FileChange, document_change, read_text
from funes.wiring.yaml_text import YamlText

CONFIG = "config.yaml"


class ContinueWiring(Wiring):
    def _config(self) -> YamlText:
        path = self.agent.home() / CONFIG  # type: ignore[operator]
        return YamlText(path, read_text(path))

    def _ours(self, config: YamlText) -> list[int]:
        servers = config.get(("mcpServers",))
        if not isinstance(servers, list):
            return []
        return [index for index, server in enumerate(servers)
                if isinstance(server, dict) and server.get("name") == SERVER_NAME]

    def _without_ours(self, config: YamlText) -> None:
        for index in reversed(self._ours(config)):
            config.delete(("mcpServers", index))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        config = self._config()
        if config.original is None:
            raise FunesError(f"no Continue config at {config.path} (start Continue once, then run "
                             f"`funes add {self.agent.name}`)")
        command = binding.mcp_command()
        entry = {"name": SERVER_NAME, "type": "stdio", "command": command[0], "args": command[1:]}
        servers = config.get(("mcpServers",))
        if servers is not None and not isinstance(servers, list):
            raise FunesError(f"{config.path}: mcpServers is not a list; funes changed nothing")
        mine = self._ours(config)
        if not (len(mine) == 1 and servers[mine[0]] == entry):
            self._without_ours(config)
            config.append(("mcpServers",), entry)
        return [document_change(config, f'MCP server "{SERVER_NAME}": {" ".join(command)}'),
                skill_change(self.agent.home() / "skills", install=True)]  # type: ignore[operator]

    def plan_remove(self) -> list[FileChange]:
        config = self._config()
        self._without_ours(config)
        return [document_change(config, f'MCP server "{SERVER_NAME}"'),
                skill_change(self.agent.home() / "skills", install=False)]  # type: ignore[operator]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        notes = super().notes_after_add(binding, changes)
        return [*notes, f"Continue has no hooks: run `funes index --harness {self.agent.harness}` (or let the "
                        "schedule do it) to index new sessions."] if notes else notes
