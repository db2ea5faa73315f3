"""`funes add forge` / `funes remove forge` against a real .mcp.json in a temp HOME, and a Forge
conversation indexed and recalled through the CLI."""

from __future__ import annotations

import json

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from trace_helpers import fixture_module

MCP = """{
  "mcpServers": {
    "docs": {
      "command": "docs-server",
      "args": ["--stdio"],
      "disable": false
    }
  }
}
"""


@pytest.fixture
def forge_home(isolated_env, monkeypatch):
    monkeypatch.delenv("FORGE_CONFIG", raising=False)
    write(isolated_env / ".forge" / ".mcp.json", MCP)
    return isolated_env


def test_add_registers_the_server_and_the_skill(forge_home):
    assert funes("add", "forge", "--yes").code == 0
    servers = json.loads((forge_home / ".forge" / ".mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert servers["docs"]["args"] == ["--stdio"]
    assert (forge_home / ".forge" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(forge_home):
    result = assert_round_trip(forge_home, "forge")
    assert "funes index --harness forge" in result.out


def test_forge_config_moves_the_home(isolated_env, monkeypatch):
    monkeypatch.setenv("FORGE_CONFIG", str(isolated_env / "fc"))
    assert funes("add", "forge", "--yes").code == 0
    assert "funes" in json.loads((isolated_env / "fc" / ".mcp.json").read_text())["mcpServers"]
    assert funes("remove", "forge").code == 0
    assert not (isolated_env / "fc").exists()


@pytest.mark.parametrize("text", ['{"mcpServers": ', '{"mcpServers": ["funes"]}', '"servers"'])
def test_a_malformed_mcp_file_is_refused(forge_home, text):
    assert_refused(forge_home, "forge", forge_home / ".forge" / ".mcp.json", text)


def test_index_finds_the_database_and_recall_finds_its_turns(memory_home, monkeypatch):
    monkeypatch.delenv("FORGE_CONFIG", raising=False)
    builder = fixture_module("agents/forge/make_forge_db.py")
    builder.build(memory_home / ".forge" / ".forge.db")
    hit = assert_indexed_and_recalled("forge", "totals now use math.fsum and round half up", builder.MAIN)
    assert hit["turn_uuid"] == f"{builder.MAIN}:13"
