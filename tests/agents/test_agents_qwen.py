"""Qwen Code wiring (`funes add qwen` / `funes remove qwen`) against real settings files in a temp HOME,
and Qwen Code's own `qwen mcp list` when it is installed."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, run_cli, write
from funes.wiring import hook_script

USER_SETTINGS = """{
  "$version": 2,
  "model": {"name": "qwen3-coder-plus"},
  "mcpServers": {"docs": {"command": "docs-server", "args": ["--stdio"]}},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}]
  }
}
"""

def add(*memory: str) -> None:
    result = funes("add", "qwen", *memory, "--yes")
    assert result.code == 0, result.err


def remove() -> None:
    result = funes("remove", "qwen")
    assert result.code == 0, result.err



@pytest.fixture
def qwen_home(isolated_env, monkeypatch):
    monkeypatch.delenv("QWEN_HOME", raising=False)
    write(isolated_env / ".qwen" / "settings.json", USER_SETTINGS)
    return isolated_env


def settings(home: Path) -> dict:
    return json.loads((home / ".qwen" / "settings.json").read_text())


def test_add_registers_the_server_and_a_stop_hook(qwen_home):
    add()
    data = settings(qwen_home)
    assert data["mcpServers"]["funes"]["command"].endswith("/funes") and data["mcpServers"]["funes"]["args"] == ["mcp"]
    assert data["mcpServers"]["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    stop = data["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == "say done"
    assert shlex.split(stop[1]["hooks"][0]["command"]) == [sys.executable, "-I", "-S", hook_script(), "qwen"]
    assert stop[1]["hooks"][0]["timeout"] == 15  # seconds, as Qwen reads it
    assert data["hooks"]["PreCompact"] == [{"hooks": [stop[1]["hooks"][0]]}]  # indexed before a compaction
    assert data["$version"] == 2
    assert (qwen_home / ".qwen" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(qwen_home):
    assert_round_trip(qwen_home, "qwen")
    assert_round_trip(qwen_home, "qwen", memory="acme/kb")


def test_a_hub_memory_publishes_at_session_boundaries(qwen_home):
    add("acme/kb")
    hooks = settings(qwen_home)["hooks"]
    assert set(hooks) == {"Stop", "PreCompact", "SessionStart", "SessionEnd"}
    assert shlex.split(hooks["SessionEnd"][0]["hooks"][0]["command"])[-2:] == ["--publish", "acme/kb"]


def test_qwen_home_moves_the_settings(isolated_env, monkeypatch):
    monkeypatch.setenv("QWEN_HOME", str(isolated_env / "q"))
    add()
    assert "funes" in json.loads((isolated_env / "q" / "settings.json").read_text())["mcpServers"]
    remove()
    assert not (isolated_env / "q" / "settings.json").exists()


@pytest.mark.parametrize("text", ['{"mcpServers": ', '{"hooks": {"Stop": {"x": 1}}}', '"settings"'])
def test_a_malformed_settings_file_is_refused(qwen_home, text):
    assert_refused(qwen_home, "qwen", qwen_home / ".qwen" / "settings.json", text)


@needs_cli("qwen")
def test_qwen_mcp_list_sees_the_registration(qwen_home):
    add()
    listed = run_cli("qwen", "mcp", "list", timeout=180)
    out = listed.stdout + listed.stderr
    assert listed.returncode == 0, out
    line = next(line for line in out.splitlines() if "funes:" in line)
    assert "/funes mcp (stdio)" in line and "Connected" in line, out  # Qwen started funes's server
    assert any("docs" in line for line in out.splitlines()), out
    remove()
    assert "funes" not in run_cli("qwen", "mcp", "list", timeout=180).stdout
