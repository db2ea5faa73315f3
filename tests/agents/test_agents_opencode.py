"""`funes add opencode` / `funes remove opencode` against real config files in a temp HOME, the
plugin run by node as OpenCode calls it, and `opencode mcp list` seeing the registration."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, needs_cli, run_cli, write
from funes.agents.opencode.wiring import config_dir
from funes.wiring import hook_script
from trace_helpers import fixture_module

CONFIG = """{
  "$schema": "https://opencode.ai/config.json",
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "github": {"type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-github"], "enabled": true}
  }
}
"""


@pytest.fixture
def opencode_home(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write(isolated_env / ".config" / "opencode" / "opencode.json", CONFIG)
    write(isolated_env / ".config" / "opencode" / "plugins" / "mine.js", "export const Mine = async () => ({})\n")
    return isolated_env


def test_add_registers_a_local_server_a_plugin_and_the_skill(opencode_home):
    assert funes("add", "opencode", "--yes").code == 0
    config = json.loads((config_dir() / "opencode.json").read_text())
    server = config["mcp"]["funes"]
    assert server["type"] == "local" and server["enabled"] is True
    assert server["command"][0].endswith("/funes") and server["command"][1:] == ["mcp"]
    assert config["mcp"]["github"]["command"][0] == "npx"
    plugin = (config_dir() / "plugins" / "funes.js").read_text()
    assert "session.idle" in plugin and json.dumps([sys.executable, "-I", "-S", hook_script(), "opencode"]) in plugin
    assert (config_dir() / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(opencode_home):
    assert_round_trip(opencode_home, "opencode")


def test_a_hub_memory_binds_the_publish_command(opencode_home):
    assert funes("add", "opencode", "me/team-memory", "--yes").code == 0
    plugin = (config_dir() / "plugins" / "funes.js").read_text()
    assert '"--publish", "me/team-memory"' in plugin
    assert json.loads((config_dir() / "opencode.json").read_text())["mcp"]["funes"]["command"][1:] == \
        ["mcp", "me/team-memory"]


def test_only_a_jsonc_file_is_edited_in_place(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    jsonc = write(isolated_env / ".config" / "opencode" / "opencode.jsonc",
                  '{\n  "$schema": "https://opencode.ai/config.json"\n}')  # what OpenCode writes on first start
    before = jsonc.read_text()
    assert funes("add", "opencode", "--yes").code == 0
    assert "funes" in json.loads(jsonc.read_text())["mcp"] and not (jsonc.parent / "opencode.json").exists()
    assert funes("remove", "opencode").code == 0
    assert jsonc.read_text() == before


@pytest.mark.parametrize("name,text", [
    ("opencode.json", '{"mcp": {'),
    ("opencode.json", '{"mcp": ["funes"]}'),
    ("opencode.json", "[]"),
])
def test_a_malformed_config_is_refused_and_left_untouched(opencode_home, name, text):
    assert_refused(opencode_home, "opencode", config_dir() / name, text)


def test_a_jsonc_config_with_comments_is_refused(isolated_env, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert_refused(isolated_env, "opencode", isolated_env / ".config" / "opencode" / "opencode.jsonc",
                        '{\n  // my settings\n  "model": "x"\n}\n')


def test_the_plugin_runs_the_hook_with_the_session_id(opencode_home, tmp_path):
    """The plugin module as OpenCode calls it: the factory, then an idle event."""
    assert funes("add", "opencode", "--yes").code == 0
    plugin = config_dir() / "plugins" / "funes.js"
    received = tmp_path / "payload.json"
    recorder = [sys.executable, "-c", f"import sys; open({str(received)!r}, 'w').write(sys.stdin.read())"]
    text = plugin.read_text()
    start = text.index("const BINDING = ") + len("const BINDING = ")
    end = text.index("\n", start)
    plugin.write_text(text[:start] + json.dumps({"index": recorder, "publish": None}) + text[end:])
    driver = (f"const {{ FunesPlugin }} = await import({json.dumps(plugin.as_uri())});\n"
              "const hooks = await FunesPlugin({ directory: '/home/dev/widget' });\n"
              "await hooks.event({ event: { type: 'message.updated', properties: { sessionID: 'ses_other' } } });\n"
              "await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_42' } } });\n")
    subprocess.run(["node", "--input-type=module", "-e", driver], check=True, timeout=60,
                   env={"PATH": "/usr/bin:/bin"})
    for _ in range(100):
        if received.exists() and received.read_text():
            break
        subprocess.run(["sleep", "0.1"])
    assert json.loads(received.read_text()) == {"session_id": "ses_42", "hook_event_name": "session.idle",
                                                "cwd": "/home/dev/widget"}


@needs_cli("opencode")
def test_opencode_mcp_list_connects_to_the_registered_server(isolated_env, monkeypatch):
    """OpenCode starts every enabled server to list it: the user's own is disabled
    here (npx would wait on the network); funes's must answer its handshake."""
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    write(config_dir() / "opencode.json", CONFIG.replace('"enabled": true', '"enabled": false'))
    assert funes("add", "opencode", "--yes").code == 0
    # The plugin is run by the test above; with a plugin present OpenCode first
    # npm-installs its plugin SDK into the config folder (20 s and more, a network wait).
    (config_dir() / "plugins" / "funes.js").unlink()
    listed = run_cli("opencode", "mcp", "list")
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in (listed.stdout + listed.stderr).splitlines() if " funes " in f"{line} "]
    assert len(lines) == 1 and "connected" in lines[0], listed.stdout + listed.stderr
    assert "github" in listed.stdout + listed.stderr


@pytest.mark.slow
def test_a_sweep_indexes_the_database_and_recall_finds_its_turns(memory_home, monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    data = memory_home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    fixture_module("agents/opencode/make_opencode_db.py").build(data / "opencode.db")
    hit = assert_indexed_and_recalled("opencode", "login form is in src/login.tsx", "ses_0main")
    assert hit["turn_uuid"] == "msg_a04" and hit["branch"] == "feature/login"
    status = json.loads(funes("status", "--json").out)
    [listed] = [agent for agent in status["agents"] if agent["name"] == "opencode"]
    assert listed["sessions_on_disk"] == 2 and listed["indexed_sessions"] == 2
