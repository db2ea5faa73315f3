"""`funes add cline` / `funes remove cline` against real config files in a temp HOME,
and Cline's own `cline config mcp` / `cline config hooks` when it is installed."""

from __future__ import annotations

import json
import shlex
import stat
import sys

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, run_cli, snapshot, write
from funes.wiring import Binding

DEFAULT_SETTINGS = '{\n  "mcpServers": {}\n}'  # what Cline writes when it finds no settings file
USER_SETTINGS = """{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "placeholder"},
      "disabled": false,
      "autoApprove": []
    }
  }
}
"""


@pytest.fixture
def cline_home(isolated_env, monkeypatch):
    for name in ("CLINE_DIR", "CLINE_DATA_DIR", "CLINE_SESSION_DATA_DIR", "CLINE_MCP_SETTINGS_PATH"):
        monkeypatch.delenv(name, raising=False)
    write(isolated_env / ".cline" / "data" / "settings" / "cline_mcp_settings.json", USER_SETTINGS)
    write(isolated_env / ".cline" / "hooks" / "PreToolUse.sh", "#!/bin/sh\necho '{}'\n")
    return isolated_env


def _add(memory=None):
    result = funes("add", "cline", *([memory] if memory else []), "--yes")
    assert result.code == 0, result.err
    return result


def _remove():
    result = funes("remove", "cline")
    assert result.code == 0, result.err
    return result


def _settings(home):
    return json.loads((home / ".cline" / "data" / "settings" / "cline_mcp_settings.json").read_text())


def test_add_registers_the_server_and_the_turn_hook(cline_home):
    _add()
    server = _settings(cline_home)["mcpServers"]["funes"]
    assert server["type"] == "stdio" and server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert _settings(cline_home)["mcpServers"]["github"]["env"] == {"GITHUB_TOKEN": "placeholder"}
    hook = cline_home / ".cline" / "hooks" / "TaskComplete.sh"
    assert stat.S_IMODE(hook.stat().st_mode) == 0o755
    exec_line = hook.read_text().splitlines()[-1]
    assert shlex.split(exec_line) == ["exec", *Binding(None).hook_command("cline")]
    assert shlex.split(exec_line)[1] == sys.executable
    assert not (cline_home / ".cline" / "hooks" / "SessionShutdown.sh").exists()  # only with a Hub memory
    assert (cline_home / ".cline" / "skills" / "funes-recall" / "SKILL.md").exists()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(cline_home):
    assert_round_trip(cline_home, "cline")
    assert not (cline_home / ".cline" / "skills" / "funes-recall").exists()


def test_clines_default_settings_file_round_trips(cline_home):
    path = cline_home / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    path.write_text(DEFAULT_SETTINGS)
    before = snapshot(cline_home)
    _add()
    _remove()
    assert snapshot(cline_home) == before


def test_a_hub_memory_publishes_at_session_shutdown(cline_home):
    _add("acme/kb")
    hook = cline_home / ".cline" / "hooks" / "SessionShutdown.sh"
    assert shlex.split(hook.read_text().splitlines()[-1])[-3:] == ["cline", "--publish", "acme/kb"]
    _add()  # back to the local memory: the publish hook goes
    assert not hook.exists()
    _remove()


def test_a_users_hook_of_the_same_name_is_kept(cline_home):
    own = write(cline_home / ".cline" / "hooks" / "TaskComplete.sh", "#!/bin/sh\nnotify-send done\n")
    added = _add()
    assert own.read_text() == "#!/bin/sh\nnotify-send done\n"
    assert "your own hook" in added.out + added.err
    _remove()
    assert own.read_text() == "#!/bin/sh\nnotify-send done\n"


def test_environment_moves_the_files(cline_home, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "cdir"))
    monkeypatch.setenv("CLINE_MCP_SETTINGS_PATH", str(tmp_path / "mcp.json"))
    _add()
    assert "funes" in json.loads((tmp_path / "mcp.json").read_text())["mcpServers"]
    assert (tmp_path / "cdir" / "hooks" / "TaskComplete.sh").exists()
    _remove()
    assert not (tmp_path / "mcp.json").exists() or "funes" not in (tmp_path / "mcp.json").read_text()


@pytest.mark.parametrize("text", ['{"mcpServers": {"github": {]}}', '["not", "an", "object"]',
                                  '{"mcpServers": ["a list"]}'])
def test_malformed_settings_are_refused_before_anything_is_written(cline_home, text):
    assert_refused(cline_home, "cline", cline_home / ".cline" / "data" / "settings" / "cline_mcp_settings.json", text)


@needs_cli("cline")
def test_cline_itself_lists_the_server_and_the_hook(cline_home):
    _add()
    listed = run_cli("cline", "config", "mcp", "--json", timeout=120)
    assert listed.returncode == 0, listed.stderr
    servers = {entry["name"]: entry for entry in json.loads(listed.stdout.strip().splitlines()[-1])}
    assert servers["funes"]["transportType"] == "stdio" and servers["funes"]["disabled"] is False
    assert "github" in servers
    hooks = run_cli("cline", "config", "hooks", timeout=120)
    assert hooks.returncode == 0, hooks.stderr
    assert f"TaskComplete -> agent_end ({cline_home / '.cline' / 'hooks' / 'TaskComplete.sh'})" in hooks.stdout
    _remove()
    listed = run_cli("cline", "config", "mcp", "--json", timeout=120)
    assert "funes" not in {entry["name"] for entry in json.loads(listed.stdout.strip().splitlines()[-1])}

