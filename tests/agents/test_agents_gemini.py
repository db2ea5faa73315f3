"""`funes add gemini` / `funes remove gemini` against real settings files in a temp HOME,
and Gemini CLI's own `gemini mcp list` when it is installed."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, run_cli, write
from funes.wiring import hook_script

SETTINGS = """{
  // comments are not JSON: a user's JSONC file is refused, see below
}"""
USER_SETTINGS = """{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@github/github-mcp-server"], "trust": false}
  },
  "hooks": {
    "AfterAgent": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "notify-send done", "timeout": 5000}]}
    ]
  }
}
"""


@pytest.fixture
def gemini_home(isolated_env, monkeypatch):
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    write(isolated_env / ".gemini" / "settings.json", USER_SETTINGS)
    return isolated_env


def add(*memory: str) -> None:
    result = funes("add", "gemini", *memory, "--yes")
    assert result.code == 0, result.err


def remove() -> None:
    result = funes("remove", "gemini")
    assert result.code == 0, result.err


def settings(home: Path) -> dict:
    return json.loads((home / ".gemini" / "settings.json").read_text())


def test_add_registers_the_server_and_an_after_agent_hook(gemini_home):
    add()
    data = settings(gemini_home)
    server = data["mcpServers"]["funes"]
    assert server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert data["mcpServers"]["github"]["args"] == ["-y", "@github/github-mcp-server"]
    groups = data["hooks"]["AfterAgent"]
    assert groups[0]["hooks"][0]["command"] == "notify-send done"  # the user's group stays first
    handler = groups[1]["hooks"][0]
    assert shlex.split(handler["command"]) == [sys.executable, "-I", "-S", hook_script(), "gemini"]
    assert handler["timeout"] == 15_000  # milliseconds, as Gemini reads it
    assert data["hooks"]["PreCompress"] == [{"hooks": [handler]}]  # indexed before /compress summarises
    assert data["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert (gemini_home / ".gemini" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(gemini_home):
    assert_round_trip(gemini_home, "gemini")


def test_a_hub_memory_publishes_at_session_start_and_end(gemini_home):
    add("acme/kb")
    hooks = settings(gemini_home)["hooks"]
    for event in ("SessionStart", "SessionEnd"):
        assert shlex.split(hooks[event][0]["hooks"][0]["command"])[-3:] == ["gemini", "--publish", "acme/kb"]
    assert settings(gemini_home)["mcpServers"]["funes"]["args"] == ["mcp", "acme/kb"]
    remove()
    assert "SessionStart" not in settings(gemini_home)["hooks"]


def test_gemini_cli_home_moves_the_settings(isolated_env, monkeypatch):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(isolated_env / "elsewhere"))
    add()
    assert "funes" in json.loads((isolated_env / "elsewhere" / ".gemini" / "settings.json").read_text())["mcpServers"]
    assert not (isolated_env / ".gemini").exists()
    remove()
    assert not (isolated_env / "elsewhere" / ".gemini" / "settings.json").exists()  # funes created it, funes took it


@pytest.mark.parametrize("text", [SETTINGS, '{"mcpServers": ["funes"]}', '{"hooks": {"AfterAgent": {}}}', "[]"])
def test_a_malformed_settings_file_is_refused(gemini_home, text):
    assert_refused(gemini_home, "gemini", gemini_home / ".gemini" / "settings.json", text)


@needs_cli("gemini")
def test_gemini_mcp_list_sees_the_registration(gemini_home, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "offline")  # `mcp list` loads settings that name an auth type
    # Gemini disables every MCP server, user-level ones too, in a folder the user has not trusted
    write(gemini_home / ".gemini" / "trustedFolders.json", json.dumps({str(gemini_home): "TRUST_FOLDER"}))
    add()
    # `mcp list` gives a server 5 s to answer unless its entry sets `timeout`: a slow or
    # shared CPU must not decide the outcome, so the entry gets Gemini's own default for
    # a server's requests (10 minutes), as a user on such a machine would set it.
    settings_file = gemini_home / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["mcpServers"]["funes"]["timeout"] = 600_000
    settings_file.write_text(json.dumps(settings))
    listed = run_cli("gemini", "mcp", "list", timeout=660)
    out = listed.stdout + listed.stderr
    assert listed.returncode == 0, out
    line = next(line for line in out.splitlines() if "funes:" in line)
    assert "mcp (stdio)" in line and "Connected" in line, out  # Gemini started funes's server and it answered
    assert any("github:" in line for line in out.splitlines())
    remove()
    listed = run_cli("gemini", "mcp", "list", timeout=180)
    assert "funes:" not in listed.stdout + listed.stderr
