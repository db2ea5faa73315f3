"""`funes add crush` / `funes remove crush` against real config files in a temp HOME."""

from __future__ import annotations

import json

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from funes.agents.crush.wiring import config_file, skills_dir
from trace_helpers import fixture_module

CONFIG = """{
  "$schema": "https://charm.land/crush.json",
  "options": {"debug": false},
  "mcp": {
    "filesystem": {"type": "stdio", "command": "node", "args": ["/srv/mcp/fs.js"], "timeout": 120}
  }
}
"""


@pytest.fixture
def crush_home(isolated_env, monkeypatch):
    for name in ("XDG_CONFIG_HOME", "CRUSH_GLOBAL_CONFIG", "CRUSH_SKILLS_DIR"):
        monkeypatch.delenv(name, raising=False)
    write(isolated_env / ".config" / "crush" / "crush.json", CONFIG)
    return isolated_env


def test_add_registers_a_stdio_server_and_the_skill(crush_home):
    assert funes("add", "crush", "--yes").code == 0
    config = json.loads(config_file().read_text())
    server = config["mcp"]["funes"]
    assert server["type"] == "stdio" and server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert config["mcp"]["filesystem"]["timeout"] == 120
    assert (skills_dir() / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(crush_home):
    assert_round_trip(crush_home, "crush")


def test_the_variables_crush_reads_move_the_files(isolated_env, monkeypatch):
    monkeypatch.setenv("CRUSH_GLOBAL_CONFIG", str(isolated_env / "cfg"))
    monkeypatch.setenv("CRUSH_SKILLS_DIR", str(isolated_env / "skills"))
    assert funes("add", "crush", "--yes").code == 0
    assert "funes" in json.loads((isolated_env / "cfg" / "crush.json").read_text())["mcp"]
    assert (isolated_env / "skills" / "funes-recall" / "SKILL.md").is_file()
    assert not (isolated_env / ".config").exists()
    assert funes("remove", "crush").code == 0
    assert_round_trip(isolated_env, "crush")


@pytest.mark.parametrize("text", ['{"mcp": ', '{"mcp": ["funes"]}', '"just a string"'])
def test_a_malformed_config_is_refused_and_left_untouched(crush_home, text):
    assert_refused(crush_home, "crush", config_file(), text)


def test_index_detects_a_project_and_recall_finds_its_turns(memory_home, monkeypatch):
    for name in ("XDG_DATA_HOME", "CRUSH_GLOBAL_DATA"):
        monkeypatch.delenv(name, raising=False)
    project = memory_home / "src" / "shop"
    fixture_module("agents/crush/make_crush_db.py").build(project / ".crush" / "crush.db")
    hit = assert_indexed_and_recalled("crush", "totals now use math.fsum", "6f1c2d3e-0000-4000-8000-00000000main",
                                      str(project))
    assert hit["turn_uuid"] == "m07"
