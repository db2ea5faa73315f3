"""`funes add codex` / `funes remove codex` in a temp HOME seeded with a user's own Codex setup."""

import json
import shlex
import sys
import tomllib

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, run_cli, snapshot, write

from funes.wiring import hook_script

CONFIG = """# Codex settings
model = "gpt-5-codex"   # the default
approval_policy = "on-request"

[profiles.fast]
model = "gpt-5-mini"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "placeholder" }

[hooks.state."{hooks}:stop:0:0"]
trusted_hash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
"""

HOOKS = """{
  "description": "my hooks",
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {"type": "command", "command": "say done", "timeout": 5}
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "shell",
        "hooks": [{"type": "command", "command": "~/bin/guard"}]
      }
    ]
  }
}
"""


@pytest.fixture
def codex_home(isolated_env):
    hooks = isolated_env / ".codex" / "hooks.json"
    write(isolated_env / ".codex" / "config.toml", CONFIG.replace("{hooks}", str(hooks)))
    write(hooks, HOOKS)
    return isolated_env


def read(codex_home):
    config = tomllib.loads((codex_home / ".codex" / "config.toml").read_text())
    hooks = json.loads((codex_home / ".codex" / "hooks.json").read_text())
    return config, hooks


def test_add_registers_the_server_and_appends_the_stop_hook_last(codex_home):
    result = funes("add", "codex", "--yes")
    assert result.code == 0, result.err
    config, hooks = read(codex_home)
    server = config["mcp_servers"]["funes"]
    assert server["command"].endswith("/funes") and server["args"] == ["mcp"]
    assert server["startup_timeout_sec"] == 30 and server["tool_timeout_sec"] == 120
    assert config["mcp_servers"]["github"]["env"] == {"GITHUB_TOKEN": "placeholder"}
    stop = hooks["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == "say done"  # the user's group keeps position 0 (and its trust)
    assert shlex.split(stop[1]["hooks"][0]["command"]) == [sys.executable, "-I", "-S", hook_script(), "codex"]
    assert hooks["hooks"]["PreCompact"] == [{"hooks": [stop[1]["hooks"][0]]}]  # indexed before a compaction
    assert hooks["description"] == "my hooks" and set(hooks) == {"description", "hooks"}
    assert "/hooks" in result.out and "trust" in result.out  # the step the user must take
    assert (codex_home / ".agents" / "skills" / "funes-recall" / "SKILL.md").exists()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(codex_home):
    assert_round_trip(codex_home, "codex")


def test_remove_takes_the_trust_codex_recorded_for_funes_and_keeps_the_users(codex_home):
    before = snapshot(codex_home)
    assert funes("add", "codex", "--yes").code == 0
    config_path = codex_home / ".codex" / "config.toml"
    hooks = codex_home / ".codex" / "hooks.json"
    # What Codex writes once the user trusts funes's hooks in /hooks (Stop after the user's
    # group, PreCompact alone).
    with config_path.open("a") as config:
        config.write(f'\n[hooks.state."{hooks}:stop:1:0"]\ntrusted_hash = "sha256:{"2" * 64}"\n')
        config.write(f'\n[hooks.state."{hooks}:pre_compact:0:0"]\ntrusted_hash = "sha256:{"3" * 64}"\n')
    assert "trust it" not in funes("add", "codex", "--yes").out
    assert funes("remove", "codex").code == 0
    assert snapshot(codex_home) == before


def test_groups_the_user_adds_after_funes_keep_their_order_and_are_flagged(codex_home):
    assert funes("add", "codex", "--yes").code == 0
    hooks_path = codex_home / ".codex" / "hooks.json"
    hooks = json.loads(hooks_path.read_text())
    hooks["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "later"}]})
    hooks_path.write_text(json.dumps(hooks, indent=2))
    assert "nothing to change" in funes("add", "codex", "--yes").out  # funes's group is not moved to the end
    result = funes("remove", "codex")
    assert "review them once in /hooks" in result.out
    stop = json.loads(hooks_path.read_text())["hooks"]["Stop"]
    assert [group["hooks"][0]["command"] for group in stop] == ["say done", "later"]


def test_a_hub_memory_publishes_at_session_start_only(codex_home):
    assert funes("add", "codex", "acme/kb", "--yes").code == 0
    _, hooks = read(codex_home)
    start = shlex.split(hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"])
    assert start[-3:] == ["codex", "--publish", "acme/kb"]
    assert "SessionEnd" not in hooks["hooks"]  # Codex has no such event
    assert funes("remove", "codex").code == 0


@pytest.mark.parametrize("name, text", [
    ("config.toml", 'model = "gpt-5"\n[mcp_servers.github\ncommand = "npx"\n'),
    ("hooks.json", '{"hooks": {"Stop": [}}'),
    ("hooks.json", '{"hooks": ["Stop"]}'),
])
def test_a_malformed_config_is_refused_and_left_untouched(codex_home, name, text):
    assert_refused(codex_home, "codex", codex_home / ".codex" / name, text)


@needs_cli("codex")
def test_codex_mcp_sees_the_registration(codex_home):
    assert funes("add", "codex", "--yes").code == 0
    listed = run_cli("codex", "mcp", "list")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert sorted(names) == ["funes", "github"]
    shown = run_cli("codex", "mcp", "get", "funes")
    assert "startup_timeout_sec: 30" in shown.stdout and "/funes" in shown.stdout
    assert funes("remove", "codex").code == 0
    names = [line.split()[0] for line in run_cli("codex", "mcp", "list").stdout.splitlines()[1:] if line.strip()]
    assert names == ["github"]
