"""`funes add kimi` / `funes remove kimi` against a real mcp.json in a temp HOME, and a Kimi CLI
session indexed and recalled through the CLI, and kimi-cli's own `kimi mcp list` when it is
installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from agent_helpers import (assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, needs_py_cli, py_agent,
                           write)
from trace_helpers import FIXTURES

MCP = """{
  "mcpServers": {
    "context7": {
      "url": "https://mcp.context7.com/mcp",
      "transport": "http"
    }
  }
}"""


@pytest.fixture
def kimi_home(isolated_env, monkeypatch):
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    write(isolated_env / ".kimi" / "mcp.json", MCP)
    return isolated_env


def test_add_registers_the_server_and_the_skill(kimi_home):
    assert funes("add", "kimi", "--yes").code == 0
    servers = json.loads((kimi_home / ".kimi" / "mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert servers["context7"]["url"] == "https://mcp.context7.com/mcp"
    assert (kimi_home / ".kimi" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(kimi_home):
    result = assert_round_trip(kimi_home, "kimi")
    assert "funes index --harness kimi" in result.out


def test_kimi_share_dir_moves_the_mcp_file(isolated_env, monkeypatch):
    monkeypatch.setenv("KIMI_SHARE_DIR", str(isolated_env / "share"))
    assert funes("add", "kimi", "--yes").code == 0
    assert "funes" in json.loads((isolated_env / "share" / "mcp.json").read_text())["mcpServers"]
    assert funes("remove", "kimi").code == 0
    assert not (isolated_env / "share").exists()


@pytest.mark.parametrize("text", ['{"mcpServers": ', '{"mcpServers": ["funes"]}', '"servers"'])
def test_a_malformed_mcp_file_is_refused(kimi_home, text):
    assert_refused(kimi_home, "kimi", kimi_home / ".kimi" / "mcp.json", text)


def test_index_finds_the_sessions_and_recall_finds_their_turns(memory_home, monkeypatch):
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    shutil.copytree(FIXTURES / "agents" / "kimi_cli", memory_home / ".kimi")
    hit = assert_indexed_and_recalled("kimi_cli", "loader opens files as utf-8-sig byte-order mark",
                                      "3f1c9a52-7b1e-4c0d-9a8e-51d2c4b7e610")
    assert hit["workdir"] == "-home-dev-notes"


@needs_py_cli("kimi")
def test_kimi_mcp_list_sees_the_registration(kimi_home):
    assert funes("add", "kimi", "--yes").code == 0
    listed = subprocess.run([str(py_agent("kimi", "kimi")), "mcp", "list"], capture_output=True, text=True,
                            timeout=120, env=os.environ.copy(), cwd=os.environ["HOME"])
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.strip().startswith("funes "))
    assert "(stdio):" in line and line.rstrip().endswith("/funes mcp"), listed.stdout
    assert "context7 (http): https://mcp.context7.com/mcp" in listed.stdout
    assert funes("remove", "kimi").code == 0
