"""`funes add kilo` / `funes remove kilo` against real config files in a temp HOME, and a Kilo CLI
session indexed and recalled through the CLI.  (`kilo mcp list` is not run: the npm registry this
project installs from lacks the platform package of every published @kilocode/cli.)"""

from __future__ import annotations

import json
import sys

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from funes.wiring import hook_script
from trace_helpers import fixture_module

CONFIG = """{
  "$schema": "https://app.kilo.ai/config.json",
  "model": "kilo/kilo-auto",
  "mcp": {
    "docs": {"type": "local", "command": ["docs-server", "--stdio"], "enabled": false}
  }
}
"""


@pytest.fixture
def kilo_home(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    write(isolated_env / ".config" / "kilo" / "kilo.json", CONFIG)
    return isolated_env


def test_add_registers_a_local_server_a_plugin_and_the_skill(kilo_home):
    assert funes("add", "kilo", "--yes").code == 0
    folder = kilo_home / ".config" / "kilo"
    servers = json.loads((folder / "kilo.json").read_text())["mcp"]
    assert servers["funes"]["type"] == "local" and servers["funes"]["command"][1:] == ["mcp"]
    assert servers["docs"]["enabled"] is False
    plugin = (folder / "plugins" / "funes.js").read_text()
    assert "session.idle" in plugin and json.dumps([sys.executable, "-I", "-S", hook_script(), "kilo"]) in plugin
    assert (folder / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(kilo_home):
    assert_round_trip(kilo_home, "kilo")


@pytest.mark.parametrize("existing", ["kilo.jsonc", "opencode.json"])
def test_the_file_kilo_mcp_add_would_edit_is_edited(isolated_env, monkeypatch, existing):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    config = write(isolated_env / ".config" / "kilo" / existing, '{\n  "$schema": "https://app.kilo.ai/config.json"\n}')
    assert funes("add", "kilo", "--yes").code == 0
    assert "funes" in json.loads(config.read_text())["mcp"]
    assert not (config.parent / "kilo.json").exists() or existing == "kilo.json"
    assert funes("remove", "kilo").code == 0


@pytest.mark.parametrize("text", ['{"mcp": {', '{"mcp": ["funes"]}', "[]"])
def test_a_malformed_config_is_refused_and_left_untouched(kilo_home, text):
    assert_refused(kilo_home, "kilo", kilo_home / ".config" / "kilo" / "kilo.json", text)


def test_index_finds_the_database_and_recall_finds_its_turns(memory_home, monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("KILO_DB", raising=False)
    builder = fixture_module("agents/kilo_code/make_kilo_db.py")
    builder.build(memory_home / ".local" / "share" / "kilo" / "kilo.db")
    hit = assert_indexed_and_recalled("kilo_code", "summing Decimals keeps invoice totals exact", builder.MAIN)
    assert hit["turn_uuid"] == "msg_k03"

