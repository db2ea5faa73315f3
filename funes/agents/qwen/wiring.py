"""Qwen Code: MCP server and hooks in the user settings.json, a user skill.

* ``<qwen home>/settings.json`` (``~/.qwen``, or ``$QWEN_HOME``) ``mcpServers.funes``:
  the entry ``qwen mcp add`` writes (user scope is its default), so ``qwen mcp list``
  shows it.
* the same file's ``hooks``: Qwen Code's hooks are Claude Code's (``Stop`` once per
  completed turn, ``PreCompact``, ``SessionStart``, ``SessionEnd``; ``timeout`` in seconds):
  ``Stop`` indexes the turn, ``PreCompact`` the turns a compaction is about to summarise,
  and with a Hub memory the session boundaries publish.
* ``<qwen home>/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

from funes.wiring.hook_groups import SettingsHooksWiring


class QwenWiring(SettingsHooksWiring):
    index_event = "Stop"
    compact_event = "PreCompact"
    hook_timeout = 15  # seconds
