"""GitHub Copilot CLI wiring (`funes add copilot` / `funes remove copilot`) against real config files in a temp
HOME, and Copilot CLI's own `copilot mcp list` when it is installed."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from agent_helpers import AGENT_CLIS, assert_refused, assert_round_trip, funes, needs_cli, run_cli, write
from funes.wiring import hook_script

MCP_CONFIG = """{
  "mcpServers": {
    "playwright": {"type": "local", "command": "npx", "args": ["@playwright/mcp@latest"], "tools": ["*"]}
  }
}
"""
USER_HOOKS = '{"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./notify.sh"}]}}\n'

def add(*memory: str) -> None:
    result = funes("add", "copilot", *memory, "--yes")
    assert result.code == 0, result.err


def remove() -> None:
    result = funes("remove", "copilot")
    assert result.code == 0, result.err



@pytest.fixture
def copilot_home(isolated_env, monkeypatch):
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    write(isolated_env / ".copilot" / "mcp-config.json", MCP_CONFIG)
    write(isolated_env / ".copilot" / "hooks" / "mine.json", USER_HOOKS)
    return isolated_env


def test_add_registers_the_server_and_a_hooks_file_of_its_own(copilot_home):
    add()
    servers = json.loads((copilot_home / ".copilot" / "mcp-config.json").read_text())["mcpServers"]
    assert servers["funes"]["type"] == "local" and servers["funes"]["tools"] == ["*"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert servers["playwright"]["args"] == ["@playwright/mcp@latest"]
    hooks = json.loads((copilot_home / ".copilot" / "hooks" / "funes.json").read_text())
    assert hooks["version"] == 1 and set(hooks["hooks"]) == {"agentStop", "preCompact"}
    stop = hooks["hooks"]["agentStop"][0]
    assert hooks["hooks"]["preCompact"] == [stop]  # what a compaction drops is indexed first
    assert shlex.split(stop["bash"]) == [sys.executable, "-I", "-S", hook_script(), "copilot"]
    assert stop["timeoutSec"] == 15
    assert (copilot_home / ".copilot" / "hooks" / "mine.json").read_text() == USER_HOOKS
    assert (copilot_home / ".copilot" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(copilot_home):
    assert_round_trip(copilot_home, "copilot")
    assert_round_trip(copilot_home, "copilot", memory="acme/kb")


def test_a_hub_memory_publishes_at_session_boundaries(copilot_home):
    add("acme/kb")
    hooks = json.loads((copilot_home / ".copilot" / "hooks" / "funes.json").read_text())["hooks"]
    assert set(hooks) == {"agentStop", "preCompact", "sessionStart", "sessionEnd"}
    assert shlex.split(hooks["sessionEnd"][0]["bash"])[-2:] == ["--publish", "acme/kb"]


def test_copilot_home_moves_everything(isolated_env, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(isolated_env / "cp"))
    add()
    assert (isolated_env / "cp" / "hooks" / "funes.json").is_file()
    remove()
    assert not (isolated_env / "cp").exists() or not any((isolated_env / "cp").rglob("*.json"))


@pytest.mark.parametrize("text", ['{"mcpServers": {"funes": ', '{"mcpServers": []}', "null"])
def test_a_malformed_mcp_config_is_refused(copilot_home, text):
    assert_refused(copilot_home, "copilot", copilot_home / ".copilot" / "mcp-config.json", text)


@needs_cli("copilot")
def test_copilot_mcp_list_sees_the_registration(copilot_home, monkeypatch):
    # the CLI unpacks itself into a package cache: one outside the test HOME, shared by runs
    monkeypatch.setenv("COPILOT_CACHE_HOME", str(Path(AGENT_CLIS) / "copilot-cache"))
    monkeypatch.setenv("COPILOT_AUTO_UPDATE", "false")
    add()
    listed = run_cli("copilot", "mcp", "list", timeout=300)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")]
    assert sorted(names) == ["funes", "playwright"], listed.stdout
    shown = run_cli("copilot", "mcp", "get", "funes")
    assert "/funes mcp" in shown.stdout, shown.stdout
    remove()
    names = [line.split()[0] for line in run_cli("copilot", "mcp", "list").stdout.splitlines() if line.startswith("  ")]
    assert names == ["playwright"]
