"""OpenHands CLI: funes's MCP server in ``<persistence dir>/mcp.json``
(``~/.openhands``, or ``$OPENHANDS_PERSISTENCE_DIR``; ``mcpServers.funes``:
``{command, args}``), which the CLI hands to its agent at start (openhands_cli/locations.py
``MCP_CONFIG_FILE``, mcp/mcp_utils.py, stores/agent_store.py), and the skill in
``~/.openhands/skills/funes-recall/SKILL.md``: openhands-sdk's ``load_user_skills`` reads
AgentSkills folders from ``~/.agents/skills`` and ``~/.openhands/skills`` under the home
folder whatever the persistence variable says (``USER_SKILLS_DIRS``), and the CLI turns
user skills on.

No hook: OpenHands conversations are indexed by ``funes index`` sweeps.
"""

from __future__ import annotations

from pathlib import Path

from funes.wiring.mcp_file import McpFileWiring


class OpenHandsWiring(McpFileWiring):
    def config_file(self) -> Path:
        return self.agent.home() / "mcp.json"  # type: ignore[operator]

    def skills_dir(self) -> Path:
        return Path.home() / ".openhands" / "skills"
