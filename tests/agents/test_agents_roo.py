"""`funes add roo` / `funes remove roo` against real settings files in a temp HOME: every
installed copy gets the server; add twice changes nothing; remove restores every byte."""

from __future__ import annotations

import json

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, snapshot, write

DEFAULT = '{\n  "mcpServers": {}\n}'
USER = """{
\t"mcpServers": {
\t\t"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
\t\t\t"alwaysAllow": ["read_file"], "disabled": false}
\t}
}
"""


@pytest.fixture
def roo_home(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    storage = isolated_env / ".config" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline"
    write(storage / "settings" / "mcp_settings.json", USER)
    cursor = isolated_env / ".config" / "Cursor" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline"
    write(cursor / "settings" / "mcp_settings.json", DEFAULT)
    (isolated_env / ".vscode-mock" / "global-storage").mkdir(parents=True)  # the Roo CLI, never started
    return isolated_env


def add() -> str:
    result = funes("add", "roo", "--yes")
    assert result.code == 0, result.err
    return result.out + result.err


def remove() -> None:
    result = funes("remove", "roo")
    assert result.code == 0, result.err


def _settings(home, editor="Code", base=".config"):
    path = home / base / editor / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "settings" / "mcp_settings.json"
    return json.loads(path.read_text())


def test_add_registers_the_server_in_every_copy(roo_home):
    printed = add()
    for editor in ("Code", "Cursor"):
        server = _settings(roo_home, editor)["mcpServers"]["funes"]
        assert server["command"].endswith("/funes") and server["args"] == ["mcp"] and server["type"] == "stdio"
    assert _settings(roo_home)["mcpServers"]["filesystem"]["alwaysAllow"] == ["read_file"]
    assert not (roo_home / ".vscode-mock" / "global-storage" / "settings").exists()  # Roo writes it on first start
    assert (roo_home / ".roo" / "skills" / "funes-recall" / "SKILL.md").exists()
    assert "no hooks" in printed


def test_add_twice_changes_nothing_and_remove_restores_every_byte(roo_home):
    assert_round_trip(roo_home, "roo")


def test_no_roo_settings_is_an_error_that_writes_nothing(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (isolated_env / ".config" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline").mkdir(parents=True)
    before = snapshot(isolated_env)
    refused = funes("add", "roo", "--yes")
    assert refused.code == 1 and refused.err.startswith("funes: no Roo Code settings on this machine"), refused.err
    assert len(refused.err.strip().splitlines()) == 1
    assert snapshot(isolated_env) == before


def test_malformed_settings_are_refused(roo_home):
    path = roo_home / ".config" / "Cursor" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "settings"
    assert_refused(roo_home, "roo", path / "mcp_settings.json", '{"mcpServers": {,}}')
