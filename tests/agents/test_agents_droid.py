"""`funes add droid` / `funes remove droid` against real config files in a temp HOME, the Stop
hook's payload naming the session's file, and a Droid session indexed and recalled through the
CLI.  (Droid's own CLI is not run: it installs from Factory's site, not a package registry, and
needs a login.)"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from funes.agents.droid import AGENT
from funes.wiring import hook_script
from paths import FIXTURES

SESSIONS = FIXTURES / "agents" / "factory_droid" / "sessions"
SESSION = "5c0d4e1f-8a2b-4c3d-9e4f-6a7b8c9d0e1f"
MCP = """{
  "mcpServers": {
    "docs": {"type": "stdio", "command": "docs-server", "args": ["--stdio"], "disabled": false}
  }
}
"""
SETTINGS = """{
  "model": "claude-sonnet-4-5",
  "hooks": {
    "PostToolUse": [{"matcher": "Edit|Create", "hooks": [{"type": "command", "command": "/usr/local/bin/fmt"}]}]
  }
}
"""


@pytest.fixture
def droid_home(isolated_env):
    write(isolated_env / ".factory" / "mcp.json", MCP)
    write(isolated_env / ".factory" / "settings.json", SETTINGS)
    return isolated_env


def test_add_registers_the_server_the_stop_hook_and_the_skill(droid_home):
    assert funes("add", "droid", "--yes").code == 0
    servers = json.loads((droid_home / ".factory" / "mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["type"] == "stdio" and servers["funes"]["args"] == ["mcp"] and "docs" in servers
    hooks = json.loads((droid_home / ".factory" / "settings.json").read_text())["hooks"]
    [stop] = hooks["Stop"]
    assert stop["hooks"][0]["command"].startswith(f"{sys.executable} -I -S {hook_script()} droid")
    assert hooks["PostToolUse"][0]["matcher"] == "Edit|Create"
    assert (droid_home / ".factory" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(droid_home):
    assert_round_trip(droid_home, "droid")


@pytest.mark.parametrize("name,text", [("mcp.json", '{"mcpServers": '), ("settings.json", '{"hooks": []}')])
def test_a_malformed_config_is_refused(droid_home, name, text):
    assert_refused(droid_home, "droid", droid_home / ".factory" / name, text)


def test_the_stop_payload_names_the_session_file(isolated_env):
    path = isolated_env / ".factory" / "sessions" / "-home-dev-ledger" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copy(SESSIONS / "-home-dev-ledger" / f"{SESSION}.jsonl", path)
    payload = {"session_id": SESSION, "transcript_path": str(path), "hook_event_name": "Stop"}
    assert [unit.session_id for unit in AGENT.hook_units(payload, {})] == [SESSION]


def test_index_finds_the_sessions_and_recall_finds_their_turns(memory_home):
    shutil.copytree(SESSIONS, memory_home / ".factory" / "sessions")
    hit = assert_indexed_and_recalled("factory_droid", "parsing CSV amounts as Decimal makes the balance check pass",
                                      SESSION)
    assert hit["turn_uuid"] == "m06"
