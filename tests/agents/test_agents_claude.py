"""`funes add claude` / `funes remove claude` in a temp HOME seeded with a user's own Claude Code setup."""

import json
import shlex
import sys
from pathlib import Path

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, run_cli, snapshot, write

from funes.wiring import hook_script
from paths import REAL

# ~/.claude.json as Claude Code writes it (2-space JSON), with a user MCP server and state.
USER_STATE = """{
  "numStartups": 42,
  "installMethod": "npm",
  "autoUpdates": true,
  "firstStartTime": "2026-01-05T09:12:44.018Z",
  "userID": "0f6c0b1d5e2a",
  "projects": {
    "/home/me/src/app": {
      "allowedTools": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true
    }
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "/usr/local/bin/github-mcp-server",
      "args": [
        "stdio"
      ],
      "env": {
        "GITHUB_TOKEN": "placeholder"
      }
    }
  }
}
"""

# ~/.claude/settings.json, hand-edited with 4-space indentation and the user's own hooks.
SETTINGS = """{
    "model": "opus",
    "permissions": {
        "allow": ["Bash(npm test:*)", "Read(~/notes/**)"],
        "deny": ["Read(./.env)"]
    },
    "env": {"DISABLE_TELEMETRY": "1"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "~/.claude/guard.sh"}]
            }
        ],
        "Stop": [
            {
                "hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]
            }
        ]
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}
}
"""


@pytest.fixture
def claude_home(isolated_env):
    write(isolated_env / ".claude.json", USER_STATE)
    write(isolated_env / ".claude" / "settings.json", SETTINGS)
    write(isolated_env / ".claude" / "skills" / "mine" / "SKILL.md", "---\nname: mine\ndescription: x\n---\n")
    return isolated_env


def test_add_registers_the_server_the_stop_hook_and_the_skill(claude_home):
    result = funes("add", "claude", "--yes")
    assert result.code == 0, result.err
    state = json.loads((claude_home / ".claude.json").read_text())
    server = state["mcpServers"]["funes"]
    assert server["type"] == "stdio" and server["args"] == ["mcp"]
    assert Path(server["command"]).name == "funes" and Path(server["command"]).is_absolute()
    assert state["mcpServers"]["github"]["env"] == {"GITHUB_TOKEN": "placeholder"}
    settings = json.loads((claude_home / ".claude" / "settings.json").read_text())
    stop = settings["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == "notify-send 'Claude is done'"  # the user's first, unmoved
    ours = stop[1]["hooks"][0]
    assert shlex.split(ours["command"]) == [sys.executable, "-I", "-S", hook_script(), "claude"]
    assert ours["timeout"] == 15 and ours["type"] == "command"
    # Before a compaction summarises the conversation, the same command indexes what it drops.
    assert settings["hooks"]["PreCompact"] == [{"hooks": [ours]}]
    assert "SessionStart" not in settings["hooks"] and "SessionEnd" not in settings["hooks"]
    skill = (claude_home / ".claude" / "skills" / "funes-recall" / "SKILL.md").read_text()
    assert "name: funes-recall" in skill and "quoted history" in skill
    assert "updated ~/.claude.json" in result.out and "updated ~/.claude/settings.json" in result.out
    assert "created ~/.claude/skills/funes-recall/SKILL.md" in result.out


def test_add_twice_changes_nothing_and_remove_restores_every_byte(claude_home):
    assert_round_trip(claude_home, "claude")


def test_remove_takes_away_the_folders_add_created(isolated_env):
    """Only ~/.claude.json: add creates ~/.claude, its settings and its skills folder;
    remove leaves the home folder as it found it, no empty folder behind."""
    write(isolated_env / ".claude.json", USER_STATE)
    assert_round_trip(isolated_env, "claude")
    assert not (isolated_env / ".claude").exists()


def test_a_hub_memory_adds_publish_hooks_and_a_local_add_drops_them(claude_home):
    assert_round_trip(claude_home, "claude", memory="acme/kb")
    assert funes("add", "claude", "acme/kb", "--yes").code == 0
    settings = json.loads((claude_home / ".claude" / "settings.json").read_text())
    for event in ("SessionStart", "SessionEnd"):
        command = shlex.split(settings["hooks"][event][0]["hooks"][0]["command"])
        assert command[-4:] == [hook_script(), "claude", "--publish", "acme/kb"]
    assert json.loads((claude_home / ".claude.json").read_text())["mcpServers"]["funes"]["args"] == ["mcp", "acme/kb"]
    assert funes("add", "claude", "--yes").code == 0
    settings = json.loads((claude_home / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"PreToolUse", "Stop", "PreCompact"} and len(settings["hooks"]["Stop"]) == 2


def test_a_release_is_read_and_never_published_to(claude_home):
    """`funes add claude org/repo@tag`: the MCP server reads the release; turns are
    indexed in the local memory and no hook publishes to a fixed snapshot."""
    assert funes("add", "claude", "acme/kb@v1.0.0", "--yes").code == 0
    settings = json.loads((claude_home / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"PreToolUse", "Stop", "PreCompact"}
    commands = [hook["command"] for groups in settings["hooks"].values() for group in groups for hook in group["hooks"]]
    assert not any("--publish" in command or "--memory" in command for command in commands)
    assert json.loads((claude_home / ".claude.json").read_text())["mcpServers"]["funes"]["args"] == [
        "mcp", "acme/kb@v1.0.0"]


def test_a_folder_memory_is_indexed_in_place(claude_home, tmp_path):
    assert funes("add", "claude", str(tmp_path / "team-memory"), "--yes").code == 0
    settings = json.loads((claude_home / ".claude" / "settings.json").read_text())
    command = shlex.split(settings["hooks"]["Stop"][1]["hooks"][0]["command"])
    assert command[-2:] == ["--memory", str(tmp_path / "team-memory")]


def test_claude_config_dir_relocates_both_files(isolated_env, monkeypatch):
    config = isolated_env / "elsewhere"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert funes("add", "claude", "--yes").code == 0
    assert "funes" in json.loads((config / ".claude.json").read_text())["mcpServers"]
    assert (config / "settings.json").exists() and (config / "skills" / "funes-recall" / "SKILL.md").exists()
    assert not (isolated_env / ".claude.json").exists()


@pytest.mark.parametrize("name, text", [
    ("settings.json", '{"model": "opus",\n  "hooks": {'),
    ("settings.json", '["not", "an", "object"]'),
    (".claude.json", '{"mcpServers": {"github": {}},}'),
])
def test_a_malformed_config_is_refused_and_left_untouched(claude_home, name, text):
    broken = claude_home / ".claude" / name if name == "settings.json" else claude_home / name
    assert_refused(claude_home, "claude", broken, text)


def test_a_skill_of_the_same_name_that_funes_did_not_write_is_kept(claude_home):
    mine = write(claude_home / ".claude" / "skills" / "funes-recall" / "SKILL.md", "---\nname: other\n---\nmine\n")
    assert funes("add", "claude", "--yes").code == 0
    assert funes("remove", "claude").code == 0
    assert mine.read_text() == "---\nname: other\n---\nmine\n"


@needs_cli("claude")
def test_claude_mcp_sees_the_registration(claude_home):
    assert funes("add", "claude", "--yes").code == 0
    before = snapshot(claude_home)
    listed = run_cli("claude", "mcp", "get", "funes")
    assert listed.returncode == 0, listed.stderr
    assert "User config" in listed.stdout and " mcp" in listed.stdout
    listed = run_cli("claude", "mcp", "list").stdout
    assert "github: /usr/local/bin/github-mcp-server stdio" in listed and "funes: " in listed
    # Claude rewrote its own state file meanwhile; remove still takes out only funes's entry.
    assert snapshot(claude_home) != before
    assert funes("remove", "claude").code == 0
    gone = run_cli("claude", "mcp", "get", "funes")
    assert gone.returncode != 0 and 'No MCP server named "funes"' in gone.stdout + gone.stderr
    assert json.loads((claude_home / ".claude.json").read_text())["numStartups"] == 42


@pytest.mark.slow
def test_add_builds_the_first_index_text_first_when_there_is_none(claude_home):
    transcript = REAL / "claude_session.jsonl"
    write(claude_home / ".claude" / "projects" / "-home-me-app" / "s1.jsonl", transcript.read_text())
    unattended = funes("add", "claude")  # a script without --yes is not asked, and not indexed
    assert unattended.code == 0 and "funes index --harness claude" in unattended.err
    assert not (claude_home / ".funes" / "memory").exists()
    result = funes("add", "claude", "--yes")
    assert result.code == 0, result.err
    assert "nothing to change" in result.out and "First index: 1 Claude Code session(s)" in result.out
    status = json.loads(funes("status", "--json").out)
    assert status["harnesses"]["claude_code"]["sessions"] == 1 and status["pending_by_tier"] == {}
    assert "First index" not in funes("add", "claude", "--yes").out  # there is one now
