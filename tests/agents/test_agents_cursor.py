"""`funes add cursor` / `funes remove cursor` against real config files in a temp HOME."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from funes.wiring import hook_script
from trace_helpers import AGENT_FIXTURES, fixture_module


def cursor_dir():
    return Path.home() / ".cursor"

MCP = """{
  "mcpServers": {
    "linear": {"url": "https://mcp.linear.app/sse"},
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]}
  }
}
"""
HOOKS = """{
  "version": 1,
  "hooks": {
    "stop": [{"command": "./hooks/notify.sh"}],
    "beforeShellExecution": [{"command": "./hooks/guard.sh"}]
  }
}
"""


@pytest.fixture
def cursor_home(isolated_env):
    write(isolated_env / ".cursor" / "mcp.json", MCP)
    write(isolated_env / ".cursor" / "hooks.json", HOOKS)
    return isolated_env


def test_add_registers_the_server_and_appends_a_stop_hook(cursor_home):
    assert funes("add", "cursor", "--yes").code == 0
    servers = json.loads((cursor_dir() / "mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert set(servers) == {"linear", "fs", "funes"}
    hooks = json.loads((cursor_dir() / "hooks.json").read_text())
    assert hooks["version"] == 1
    assert hooks["hooks"]["stop"][0] == {"command": "./hooks/notify.sh"}
    assert shlex.split(hooks["hooks"]["stop"][1]["command"]) == [sys.executable, "-I", "-S", hook_script(), "cursor"]
    assert (cursor_dir() / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(cursor_home):
    assert_round_trip(cursor_home, "cursor")


def test_files_funes_created_go_again_on_remove(isolated_env):
    first = assert_round_trip(isolated_env, "cursor")
    assert first.out.count("created") >= 3, first.out
    assert not (isolated_env / ".cursor").exists()


def test_a_users_bare_hooks_file_stays(isolated_env):
    write(isolated_env / ".cursor" / "hooks.json", '{"version": 1}\n')
    assert_round_trip(isolated_env, "cursor")


@pytest.mark.parametrize("name,text", [
    ("mcp.json", '{"mcpServers": '),
    ("mcp.json", '{"mcpServers": ["funes"]}'),
    ("hooks.json", '{"version": 1, "hooks": {"stop": {"command": "x"}}}'),
    ("hooks.json", '{"version": 1, "hooks": []}'),
])
def test_a_malformed_config_is_refused_and_left_untouched(cursor_home, name, text):
    assert_refused(cursor_home, "cursor", cursor_dir() / name, text)


def test_a_sweep_indexes_the_ide_store_and_the_transcripts(memory_home, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    fixture_module("agents/cursor/make_cursor_vscdb.py").build(memory_home / ".config" / "Cursor" / "User")
    shutil.copytree(AGENT_FIXTURES / "cursor" / "projects", memory_home / ".cursor" / "projects")
    hit = assert_indexed_and_recalled("cursor", "cache key includes the build id", "c0ffee00-0000-4000-8000-0000000modern")
    assert hit["turn_uuid"] == "b2"
    recalled = json.loads(funes("recall", "Renamed it to notes_v2", "--harness", "cursor", "--json").out)
    assert recalled[0]["session_id"] == "0c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f"
