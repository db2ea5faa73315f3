"""`funes add hermes` / `funes remove hermes` in a temp HOME seeded with a user's own Hermes setup.

Hermes installs with pip, not npm, so no Hermes CLI runs here: the checks read its
files the way Hermes does (config.yaml with a YAML parser, the consent allow-list
matched on the exact (event, command) pair)."""

import json
import shlex
import sys

import pytest
from ruamel.yaml import YAML

from agent_helpers import assert_refused, assert_round_trip, funes, write

from funes.wiring import hook_script

CONFIG = """# Hermes Agent configuration
model:
  default: anthropic/claude-sonnet-4.5   # main model
  provider: openrouter

toolsets:
- hermes-cli

mcp_servers:
  github:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-github"]
    env:
      GITHUB_TOKEN: "placeholder"

hooks:
  pre_tool_call:
    - matcher: "terminal"
      command: "~/.hermes/agent-hooks/guard.sh"
      timeout: 10
  post_llm_call:
    - command: "~/.hermes/agent-hooks/log-turn.sh"

# Terminal backend
terminal:
  backend: local
  timeout: 180
"""

ALLOWLIST = """{
  "approvals": [
    {
      "approved_at": "2026-03-01T10:00:00Z",
      "command": "~/.hermes/agent-hooks/guard.sh",
      "event": "pre_tool_call",
      "script_mtime_at_approval": null
    },
    {
      "approved_at": "2026-03-01T10:00:05Z",
      "command": "~/.hermes/agent-hooks/log-turn.sh",
      "event": "post_llm_call",
      "script_mtime_at_approval": null
    }
  ]
}
"""


@pytest.fixture
def hermes_home(isolated_env):
    write(isolated_env / ".hermes" / "config.yaml", CONFIG)
    write(isolated_env / ".hermes" / "shell-hooks-allowlist.json", ALLOWLIST)
    return isolated_env


def read(home):
    config = YAML(typ="safe").load((home / ".hermes" / "config.yaml").read_text())
    approvals = json.loads((home / ".hermes" / "shell-hooks-allowlist.json").read_text())["approvals"]
    return config, approvals


def approved(approvals, event, command):
    """Hermes' own test: an exact (event, command) match."""
    return any(entry.get("event") == event and entry.get("command") == command for entry in approvals)


def test_add_registers_the_server_the_turn_hook_and_its_consent(hermes_home):
    result = funes("add", "hermes", "--yes")
    assert result.code == 0, result.err
    config, approvals = read(hermes_home)
    server = config["mcp_servers"]["funes"]
    assert server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert config["mcp_servers"]["github"]["env"] == {"GITHUB_TOKEN": "placeholder"}
    turn = config["hooks"]["post_llm_call"]
    assert turn[0] == {"command": "~/.hermes/agent-hooks/log-turn.sh"}
    ours = turn[1]
    assert shlex.split(ours["command"]) == [sys.executable, "-I", "-S", hook_script(), "hermes"]  # no shell: shlex
    assert ours["timeout"] == 30
    assert approved(approvals, "post_llm_call", ours["command"])  # runs from the first turn, even off a TTY
    assert approved(approvals, "pre_tool_call", "~/.hermes/agent-hooks/guard.sh")
    assert set(config["hooks"]) == {"pre_tool_call", "post_llm_call"}
    assert (hermes_home / ".hermes" / "skills" / "funes-recall" / "SKILL.md").exists()
    assert (hermes_home / ".hermes" / "config.yaml").read_text().startswith(CONFIG.split("mcp_servers:")[0])


def test_add_twice_changes_nothing_and_remove_restores_every_byte(hermes_home):
    assert_round_trip(hermes_home, "hermes")


def test_a_hub_memory_publishes_at_session_start_and_finalize(hermes_home):
    assert funes("add", "hermes", "acme/kb", "--yes").code == 0
    config, approvals = read(hermes_home)
    for event in ("on_session_start", "on_session_finalize"):
        command = config["hooks"][event][0]["command"]
        assert shlex.split(command)[-3:] == ["hermes", "--publish", "acme/kb"]
        assert approved(approvals, event, command)
    assert "on_session_end" not in config["hooks"]  # it fires after every turn
    assert funes("add", "hermes", "--yes").code == 0
    config, approvals = read(hermes_home)
    assert set(config["hooks"]) == {"pre_tool_call", "post_llm_call"}
    assert not any("--publish" in entry["command"] for entry in approvals)
    assert funes("remove", "hermes").code == 0


def test_a_new_allowlist_is_private(isolated_env):
    assert funes("add", "hermes", "--yes").code == 0
    allowlist = isolated_env / ".hermes" / "shell-hooks-allowlist.json"
    assert allowlist.stat().st_mode & 0o777 == 0o600


def test_hermes_home_relocates_every_file(isolated_env, monkeypatch):
    profile = isolated_env / ".hermes" / "profiles" / "work"
    monkeypatch.setenv("HERMES_HOME", str(profile))
    assert funes("add", "hermes", "--yes").code == 0
    assert "funes" in YAML(typ="safe").load((profile / "config.yaml").read_text())["mcp_servers"]
    assert (profile / "shell-hooks-allowlist.json").exists()
    assert not (isolated_env / ".hermes" / "config.yaml").exists()


@pytest.mark.parametrize("name, text", [
    ("config.yaml", "model:\n  default: x\n hooks: [\n"),
    ("config.yaml", "- just\n- a list\n"),
    ("shell-hooks-allowlist.json", '{"approvals": [}'),
])
def test_a_malformed_config_is_refused_and_left_untouched(hermes_home, name, text):
    assert_refused(hermes_home, "hermes", hermes_home / ".hermes" / name, text)
