"""`funes add grok` / `funes remove grok` against a real user-settings.json in a temp HOME, the
Stop hook's session lookup, and a Grok CLI session indexed and recalled through the CLI."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from funes.agents import agent_named
from funes.wiring import hook_script
from trace_helpers import fixture_module

SETTINGS = """{
  "defaultModel": "grok-4",
  "mcp": {
    "servers": [
      {
        "id": "docs",
        "label": "Docs",
        "enabled": true,
        "transport": "stdio",
        "command": "docs-server",
        "args": ["--stdio"]
      }
    ]
  },
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}]
  }
}
"""
builder = fixture_module("agents/grok/make_grok_db.py")


@pytest.fixture
def grok_home(isolated_env):
    write(isolated_env / ".grok" / "user-settings.json", SETTINGS)
    return isolated_env


def settings(home) -> dict:
    return json.loads((home / ".grok" / "user-settings.json").read_text())


def test_add_registers_the_server_and_a_stop_hook(grok_home):
    assert funes("add", "grok", "--yes").code == 0
    data = settings(grok_home)
    docs, server = data["mcp"]["servers"]
    assert docs["id"] == "docs"
    assert (server["id"], server["enabled"], server["transport"], server["args"]) == ("funes", True, "stdio", ["mcp"])
    assert server["command"].endswith("/funes")
    stop = data["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == "say done"
    assert shlex.split(stop[1]["hooks"][0]["command"]) == [sys.executable, "-I", "-S", hook_script(), "grok"]
    assert stop[1]["hooks"][0]["timeout"] == 15 and data["defaultModel"] == "grok-4"


def test_add_twice_changes_nothing_and_remove_restores_every_byte(grok_home):
    assert_round_trip(grok_home, "grok")
    assert_round_trip(grok_home, "grok", memory="acme/kb")


def test_a_hub_memory_publishes_at_session_boundaries(grok_home):
    assert funes("add", "grok", "acme/kb", "--yes").code == 0
    hooks = settings(grok_home)["hooks"]
    assert set(hooks) == {"Stop", "SessionStart", "SessionEnd"}
    assert shlex.split(hooks["SessionEnd"][0]["hooks"][0]["command"])[-2:] == ["--publish", "acme/kb"]


@pytest.mark.parametrize("text", ['{"mcp": ', '{"mcp": {"servers": {"funes": {}}}}', '{"hooks": {"Stop": 3}}'])
def test_a_malformed_settings_file_is_refused(grok_home, text):
    assert_refused(grok_home, "grok", grok_home / ".grok" / "user-settings.json", text)


def test_the_stop_hook_payload_names_the_session_by_id(isolated_env):
    builder.build(isolated_env / ".grok" / "grok.db")
    agent = agent_named("grok")
    [unit] = agent.hook_units({"hook_event_name": "Stop", "session_id": builder.MAIN, "cwd": "/home/dev/kiln"}, {})
    assert unit.session_id == builder.MAIN
    with pytest.raises(ValueError, match="no Grok CLI session 'gone'"):
        agent.hook_units({"session_id": "gone"}, {})


def test_index_finds_the_database_and_recall_finds_its_turns(memory_home):
    builder.build(memory_home / ".grok" / "grok.db")
    hit = assert_indexed_and_recalled("grok_cli", "the logger now flushes after every reading", builder.MAIN)
    assert hit["turn_uuid"] == f"{builder.MAIN}:9"
