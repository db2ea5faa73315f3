"""Gemini CLI: MCP server and hooks in the user settings.json, a user skill.

* ``<gemini dir>/settings.json`` ``mcpServers.funes``: the entry ``gemini mcp add -s
  user`` writes (``command``, ``args``), so ``gemini mcp list`` shows it.
* the same file's ``hooks``: an ``AfterAgent`` group (once per completed turn) indexes
  the turn, and a ``PreCompress`` group (before ``/compress`` or an automatic
  compression) the turns it is about to summarise; with a Hub memory ``SessionStart`` and ``SessionEnd`` publish.  Gemini's
  hook ``timeout`` is in milliseconds.  User-level hooks need no trust step (only a
  project's ``.gemini/settings.json`` hooks are flagged).
* ``<gemini dir>/skills/funes-recall/SKILL.md``.
"""

from __future__ import annotations

from funes.wiring.hook_groups import SettingsHooksWiring


class GeminiWiring(SettingsHooksWiring):
    index_event = "AfterAgent"
    compact_event = "PreCompress"
    hook_timeout = 15_000  # milliseconds
