"""`funes add auggie` / `funes remove auggie` against a real settings.json in a temp HOME, an Auggie
session indexed and recalled through the CLI, and Auggie's own `auggie mcp list` when it is
installed."""

from __future__ import annotations

import json
import shutil

import pytest

from agent_helpers import (assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, needs_cli, run_cli,
                           write)
from trace_helpers import FIXTURES

SETTINGS = """{
  "model": "claude-sonnet-4-5",
  "mcpServers": {
    "docs": {"command": "docs-server", "args": ["--stdio"]}
  }
}
"""


@pytest.fixture
def augment_home(isolated_env):
    write(isolated_env / ".augment" / "settings.json", SETTINGS)
    return isolated_env


def test_add_registers_the_server_and_the_skill(augment_home):
    assert funes("add", "auggie", "--yes").code == 0
    data = json.loads((augment_home / ".augment" / "settings.json").read_text())
    funes_server = data["mcpServers"]["funes"]
    assert funes_server["command"].endswith("/funes") and funes_server["args"] == ["mcp"]
    assert data["mcpServers"]["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    assert data["model"] == "claude-sonnet-4-5"
    assert (augment_home / ".augment" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(augment_home):
    result = assert_round_trip(augment_home, "auggie")
    assert "funes index --harness auggie" in result.out


@pytest.mark.parametrize("text", ['{"mcpServers": ', '{"mcpServers": ["funes"]}', '"settings"'])
def test_a_malformed_settings_file_is_refused(augment_home, text):
    assert_refused(augment_home, "auggie", augment_home / ".augment" / "settings.json", text)


def test_index_finds_the_sessions_and_recall_finds_their_turns(memory_home):
    shutil.copytree(FIXTURES / "agents" / "auggie", memory_home / ".augment")
    hit = assert_indexed_and_recalled("auggie", "loader reads files as utf-8-sig byte-order mark",
                                      "5b7d2e90-4c1a-4f3b-9e8d-0a1b2c3d4e5f")
    assert hit["workdir"] == "-home-dev-notes"


@needs_cli("auggie")
def test_auggie_mcp_list_sees_the_registration(augment_home):
    assert funes("add", "auggie", "--yes").code == 0
    listed = run_cli("auggie", "mcp", "list", timeout=120)
    out = listed.stdout + listed.stderr
    assert listed.returncode == 0, out
    line = next(line for line in out.splitlines() if " funes " in f" {line} ")
    assert "stdio" in line and "/funes mcp" in line, out
    assert any(" docs " in f" {line} " for line in out.splitlines()), out
    assert funes("remove", "auggie").code == 0
    assert " funes " not in run_cli("auggie", "mcp", "list", timeout=120).stdout
