"""`funes add kiro` / `funes remove kiro` against a real mcp.json in a temp HOME.  Kiro CLI is
closed source and ships no npm/PyPI package, so its own `kiro-cli mcp list` is not run."""

from __future__ import annotations

import json

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, snapshot, write

MCP = """{
  "mcpServers": {
    "aws-docs": {"command": "uvx", "args": ["awslabs.aws-documentation-mcp-server"], "disabled": false,
                 "autoApprove": ["search"]}
  }
}
"""


def add(*memory: str) -> str:
    result = funes("add", "kiro", *memory, "--yes")
    assert result.code == 0, result.err
    return result.out + result.err


def remove() -> None:
    result = funes("remove", "kiro")
    assert result.code == 0, result.err


@pytest.fixture
def kiro_home(isolated_env, monkeypatch):
    monkeypatch.delenv("KIRO_HOME", raising=False)
    write(isolated_env / ".kiro" / "settings" / "mcp.json", MCP)
    return isolated_env


def test_add_registers_the_server_beside_the_users(kiro_home):
    before = snapshot(kiro_home)
    printed = add()
    after = snapshot(kiro_home)
    servers = json.loads((kiro_home / ".kiro" / "settings" / "mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert servers["funes"]["disabled"] is False
    assert servers["aws-docs"]["autoApprove"] == ["search"]
    assert {path for path in after if after[path] != before.get(path, 0)} == {".kiro/settings/mcp.json"}  # no hook
    assert not (kiro_home / ".kiro" / "agents").exists()
    assert "funes index" in printed


def test_add_twice_changes_nothing_and_remove_restores_every_byte(kiro_home):
    assert_round_trip(kiro_home, "kiro")
    assert_round_trip(kiro_home, "kiro", memory="acme/kb")


def test_kiro_home_moves_the_config(isolated_env, monkeypatch):
    monkeypatch.setenv("KIRO_HOME", str(isolated_env / "k"))
    add()
    assert (isolated_env / "k" / "settings" / "mcp.json").is_file()
    remove()
    assert not (isolated_env / "k" / "settings" / "mcp.json").exists()


@pytest.mark.parametrize("text", ['{"mcpServers": {', '{"mcpServers": "none"}', "[]"])
def test_a_malformed_mcp_json_is_refused(kiro_home, text):
    assert_refused(kiro_home, "kiro", kiro_home / ".kiro" / "settings" / "mcp.json", text)
