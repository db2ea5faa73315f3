"""`funes add amp` / `funes remove amp` against a real settings.json in a temp HOME, checked
with Amp's own `amp mcp list`, which reads local settings without a network."""

from __future__ import annotations

import json

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, run_cli, snapshot, write

USER_SETTINGS = """{
  "amp.showCosts": false,
  "amp.mcpServers": {
    "context7": {"command": "npx", "args": ["-y", "@upstash/context7-mcp"]}
  },
  "amp.permissions": [{"tool": "Bash", "action": "ask"}]
}
"""


@pytest.fixture
def amp_home(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    write(isolated_env / ".config" / "amp" / "settings.json", USER_SETTINGS)
    return isolated_env


def add(*memory: str) -> None:
    result = funes("add", "amp", *memory, "--yes")
    assert result.code == 0, result.err


def remove() -> None:
    result = funes("remove", "amp")
    assert result.code == 0, result.err


def _settings(home):
    return json.loads((home / ".config" / "amp" / "settings.json").read_text())


def test_add_registers_the_server_beside_the_users(amp_home):
    add()
    settings = _settings(amp_home)
    server = settings["amp.mcpServers"]["funes"]
    assert server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert settings["amp.mcpServers"]["context7"]["args"] == ["-y", "@upstash/context7-mcp"]
    assert settings["amp.showCosts"] is False and settings["amp.permissions"][0]["tool"] == "Bash"
    assert (amp_home / ".config" / "agents" / "skills" / "funes-recall" / "SKILL.md").exists()
    add("acme/kb")
    assert _settings(amp_home)["amp.mcpServers"]["funes"]["args"] == ["mcp", "acme/kb"]


def test_add_twice_changes_nothing_and_remove_restores_every_byte(amp_home):
    assert_round_trip(amp_home, "amp")


def test_no_settings_yet_and_xdg_config_home(amp_home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    before = snapshot(amp_home)
    add()
    assert "funes" in json.loads((tmp_path / "xdg" / "amp" / "settings.json").read_text())["amp.mcpServers"]
    remove()
    assert not (tmp_path / "xdg" / "amp" / "settings.json").exists()  # funes created it: funes removes it
    assert snapshot(amp_home) == before


@pytest.mark.parametrize("text", ['{"amp.mcpServers": {"a": }', '{\n  // a comment\n  "amp.showCosts": true\n}',
                                  '{"amp.mcpServers": "none"}'])
def test_malformed_settings_are_refused(amp_home, text):
    assert_refused(amp_home, "amp", amp_home / ".config" / "amp" / "settings.json", text)


@needs_cli("amp")
def test_amp_itself_lists_the_server(amp_home):
    add()
    listed = run_cli("amp", "mcp", "list", timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split()[1:] for line in listed.stdout.splitlines() if line.startswith("  ")}
    assert rows["funes"][0] == "command" and rows["funes"][1].endswith("/funes") and rows["funes"][2] == "mcp"
    assert "context7" in rows
    remove()
    listed = run_cli("amp", "mcp", "list", timeout=120)
    assert "funes" not in listed.stdout and "context7" in listed.stdout
