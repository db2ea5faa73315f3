"""`funes add openclaw` / `funes remove openclaw` against a real openclaw.json in a temp HOME, and
OpenClaw sessions indexed and recalled through the CLI."""

from __future__ import annotations

import json

import pytest

from agent_helpers import (assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, needs_cli, run_cli,
                           write)
from trace_helpers import fixture_module

CONFIG = """{
  "agents": {
    "defaults": {
      "workspace": "~/.openclaw/workspace"
    }
  },
  "mcp": {
    "servers": {
      "docs": {
        "command": "docs-server",
        "args": ["--stdio"]
      }
    }
  }
}
"""


@pytest.fixture(autouse=True)
def no_openclaw_env(monkeypatch):
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_HOME", "OPENCLAW_CONFIG_PATH"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def openclaw_home(isolated_env):
    write(isolated_env / ".openclaw" / "openclaw.json", CONFIG)
    return isolated_env


def test_add_registers_the_server_and_the_skill(openclaw_home):
    assert funes("add", "openclaw", "--yes").code == 0
    config = json.loads((openclaw_home / ".openclaw" / "openclaw.json").read_text())
    server = config["mcp"]["servers"]["funes"]
    assert server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert config["mcp"]["servers"]["docs"]["args"] == ["--stdio"] and "agents" in config
    assert (openclaw_home / ".openclaw" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(openclaw_home):
    result = assert_round_trip(openclaw_home, "openclaw")
    assert "funes index --harness openclaw" in result.out


def test_the_variables_openclaw_reads_move_the_files(isolated_env, monkeypatch):
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(isolated_env / "state"))
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(isolated_env / "cfg" / "oc.json"))
    assert funes("add", "openclaw", "--yes").code == 0
    assert "funes" in json.loads((isolated_env / "cfg" / "oc.json").read_text())["mcp"]["servers"]
    assert (isolated_env / "state" / "skills" / "funes-recall" / "SKILL.md").is_file()
    assert funes("remove", "openclaw").code == 0
    assert not (isolated_env / "cfg").exists() and not (isolated_env / "state").exists()


@pytest.mark.parametrize("text", ['{"mcp": ', '{"mcp": {"servers": ["funes"]}}',
                                  '{\n  // JSON5, as OpenClaw also reads it\n  "mcp": {}\n}'])
def test_a_config_funes_cannot_edit_is_refused(openclaw_home, text):
    assert_refused(openclaw_home, "openclaw", openclaw_home / ".openclaw" / "openclaw.json", text)


def test_index_finds_the_stores_and_recall_finds_their_turns(memory_home):
    builder = fixture_module("agents/openclaw/make_openclaw_state.py")
    builder.build(memory_home / ".openclaw")
    hit = assert_indexed_and_recalled("openclaw", "basil now gets water twice a week", builder.MAIN)
    assert hit["turn_uuid"] == "a10"
    legacy = funes("recall", "draft the invoice email", "--harness", "openclaw", "--json")
    assert json.loads(legacy.out)[0]["session_id"] == builder.WORK


@needs_cli("openclaw")
def test_openclaw_itself_lists_the_server(openclaw_home):
    def servers() -> dict:
        # `mcp list` reads the config only (it connects to no server); each run starts OpenClaw's
        # whole CLI, tens of seconds on a busy machine.
        listed = run_cli("openclaw", "mcp", "list", "--json", timeout=300)
        assert listed.returncode == 0, listed.stderr
        return json.loads(listed.stdout)

    assert funes("add", "openclaw", "--yes").code == 0
    listed = servers()
    assert listed["funes"]["command"].endswith("/funes") and listed["funes"]["args"] == ["mcp"]
    assert listed["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    assert funes("remove", "openclaw").code == 0
    listed = servers()
    assert "funes" not in listed and "docs" in listed
