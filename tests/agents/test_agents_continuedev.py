"""`funes add continuedev` / `funes remove continuedev` against a real config.yaml in a temp HOME,
and a Continue session indexed and recalled through the CLI.  (`cn` has no command that lists MCP
servers without a model and a login, so Continue's own CLI is not run.)"""

from __future__ import annotations

import shutil

import pytest
from ruamel.yaml import YAML

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from paths import FIXTURES

CONFIG = """name: Local Config
version: 1.0.0
schema: v1
models:
  - name: Claude Sonnet
    provider: anthropic
    model: claude-sonnet-4-5
    apiKey: ${{ secrets.ANTHROPIC_API_KEY }}
mcpServers:
  # the docs server
  - name: docs
    command: docs-server
    args:
      - --stdio
"""


@pytest.fixture
def continue_home(isolated_env, monkeypatch):
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)
    write(isolated_env / ".continue" / "config.yaml", CONFIG)
    return isolated_env


def servers(home):
    return YAML(typ="safe").load((home / ".continue" / "config.yaml").read_text())["mcpServers"]


def test_add_appends_the_server_and_installs_the_skill(continue_home):
    result = funes("add", "continuedev", "--yes")
    assert result.code == 0, result.err
    docs, ours = servers(continue_home)
    assert docs["name"] == "docs" and ours["name"] == "funes" and ours["type"] == "stdio"
    assert ours["command"].endswith("funes") and ours["args"] == ["mcp"]
    assert (continue_home / ".continue" / "skills" / "funes-recall" / "SKILL.md").is_file()
    assert "# the docs server" in (continue_home / ".continue" / "config.yaml").read_text()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(continue_home):
    result = assert_round_trip(continue_home, "continuedev")
    assert "funes index --harness continue_dev" in result.out


def test_a_config_without_servers_gets_the_list_and_loses_it_on_remove(isolated_env, monkeypatch):
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(isolated_env / "cg"))
    config = write(isolated_env / "cg" / "config.yaml", "name: Local Config\nversion: 1.0.0\nschema: v1\n")
    assert funes("add", "cn", "--yes").code == 0
    assert [s["name"] for s in YAML(typ="safe").load(config.read_text())["mcpServers"]] == ["funes"]
    assert funes("remove", "cn").code == 0
    assert config.read_text() == "name: Local Config\nversion: 1.0.0\nschema: v1\n"


def test_without_a_config_add_says_to_start_continue_first(isolated_env, monkeypatch):
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)
    result = funes("add", "continuedev", "--yes")
    assert result.code != 0 and "start Continue once" in result.err
    assert not (isolated_env / ".continue").exists()


@pytest.mark.parametrize("text", ["mcpServers: [", "mcpServers:\n  funes: {}\n"])
def test_a_malformed_config_is_refused(continue_home, text):
    assert_refused(continue_home, "continuedev", continue_home / ".continue" / "config.yaml", text)


def test_index_finds_the_sessions_and_recall_finds_their_turns(memory_home, monkeypatch):
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)
    shutil.copytree(FIXTURES / "agents" / "continue_dev" / "sessions", memory_home / ".continue" / "sessions")
    hit = assert_indexed_and_recalled("continue_dev", "inject a random.Random into retry and seed it",
                                      "3f2b8c1e-6d4a-4f5b-9c7e-2a1b0c9d8e7f")
    assert hit["turn_uuid"] == "3f2b8c1e-6d4a-4f5b-9c7e-2a1b0c9d8e7f:7"
