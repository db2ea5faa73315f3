"""`funes add goose` / `funes remove goose` against real config files in a temp HOME."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from ruamel.yaml import YAML

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from funes.agents.goose.wiring import config_file, plugins_dir
from funes.wiring import hook_script
from trace_helpers import fixture_module

CONFIG = """# goose settings
GOOSE_PROVIDER: anthropic
GOOSE_MODEL: claude-sonnet-4-5
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  github:
    enabled: true
    type: stdio
    name: github
    cmd: npx
    args: [-y, "@modelcontextprotocol/server-github"]
    envs: {}
    timeout: 300
"""


@pytest.fixture
def goose_home(isolated_env, monkeypatch):
    for name in ("XDG_CONFIG_HOME", "GOOSE_PATH_ROOT"):
        monkeypatch.delenv(name, raising=False)
    write(isolated_env / ".config" / "goose" / "config.yaml", CONFIG)
    return isolated_env


def test_add_registers_a_stdio_extension_and_a_stop_hook(goose_home):
    assert funes("add", "goose", "--yes").code == 0
    config = YAML(typ="safe").load(config_file().read_text())
    extension = config["extensions"]["funes"]
    assert (extension["type"], extension["name"], extension["enabled"], extension["args"]) == \
        ("stdio", "funes", True, ["mcp"])
    assert extension["cmd"].endswith("/funes") and extension["description"]
    assert config["extensions"]["github"]["cmd"] == "npx" and config["GOOSE_MODEL"] == "claude-sonnet-4-5"
    hooks = json.loads((plugins_dir() / "funes" / "hooks" / "hooks.json").read_text())
    [group] = hooks["hooks"]["Stop"]
    assert group["hooks"][0]["type"] == "command" and shlex.split(group["hooks"][0]["command"]) == \
        [sys.executable, "-I", "-S", hook_script(), "goose"]
    assert set(hooks["hooks"]) == {"Stop"}


def test_add_twice_changes_nothing_and_remove_restores_every_byte(goose_home):
    assert_round_trip(goose_home, "goose")


def test_a_hub_memory_publishes_at_session_start_and_end(goose_home):
    assert funes("add", "goose", "me/team-memory", "--yes").code == 0
    hooks = json.loads((plugins_dir() / "funes" / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"Stop", "SessionStart", "SessionEnd"}
    assert hooks["SessionEnd"][0]["hooks"][0]["command"].endswith("--publish me/team-memory")


def test_goose_path_root_moves_both_files(isolated_env, monkeypatch):
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(isolated_env / "gr"))
    assert funes("add", "goose", "--yes").code == 0
    assert "funes" in (isolated_env / "gr" / "config" / "config.yaml").read_text()
    assert (isolated_env / "gr" / ".agents" / "plugins" / "funes" / "hooks" / "hooks.json").is_file()
    assert not (isolated_env / ".config").exists() and not (isolated_env / ".agents").exists()
    assert funes("remove", "goose").code == 0
    assert_round_trip(isolated_env, "goose")


@pytest.mark.parametrize("text", ["extensions: [a, b]\n", "extensions:\n  funes: [\n", "- a list\n"])
def test_a_malformed_config_is_refused_and_left_untouched(goose_home, text):
    assert_refused(goose_home, "goose", config_file(), text)


def test_a_sweep_indexes_the_database_and_recall_finds_its_turns(memory_home, monkeypatch):
    for name in ("XDG_DATA_HOME", "GOOSE_PATH_ROOT"):
        monkeypatch.delenv(name, raising=False)
    sessions = memory_home / ".local" / "share" / "goose" / "sessions"
    sessions.mkdir(parents=True)
    fixture_module("agents/goose/make_goose_db.py").build(sessions / "sessions.db")
    hit = assert_indexed_and_recalled("goose", "upload timeout raised to 30 s test passes", "20260528_1")
    assert hit["text"].startswith("Raised the upload timeout") or "Raised the upload timeout" in hit["text"]
