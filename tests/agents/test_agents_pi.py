"""`funes add pi` / `funes remove pi` in a temp HOME seeded with a user's own pi setup."""

import json
import sys

import pytest

from agent_helpers import assert_refused, assert_round_trip, funes, needs_cli, pi_harness, run_cli, write

from funes.wiring import hook_script

SETTINGS = """{
  "defaultProvider": "anthropic",
  "defaultModel": "claude-sonnet-4-5",
  "packages": [
    "../../my-pi-ext"
  ],
  "quietStartup": true
}
"""

USER_EXTENSION = """export default function (pi: any) {
  pi.registerTool({ name: "hello", label: "Hello", description: "Says hello",
    parameters: { type: "object", properties: {} }, execute: async () => ({ content: [] }) });
}
"""


@pytest.fixture
def pi_home(isolated_env):
    write(isolated_env / ".pi" / "agent" / "settings.json", SETTINGS)
    write(isolated_env / "my-pi-ext" / "index.ts", USER_EXTENSION)
    write(isolated_env / "my-pi-ext" / "package.json", '{"name": "my-pi-ext", "pi": {"extensions": ["./index.ts"]}}\n')
    return isolated_env


def package(home):
    return home / ".funes" / "integrations" / "pi"


def test_add_lists_the_package_and_writes_its_files(pi_home):
    result = funes("add", "pi", "--yes")
    assert result.code == 0, result.err
    settings = json.loads((pi_home / ".pi" / "agent" / "settings.json").read_text())
    assert settings["packages"] == ["../../my-pi-ext", str(package(pi_home))]
    binding = json.loads((package(pi_home) / "funes.json").read_text())
    assert binding["mcp"][0].endswith("/funes") and binding["mcp"][1:] == ["mcp"]
    assert binding["index"] == [sys.executable, "-I", "-S", hook_script(), "pi"] and binding["publish"] is None
    assert "quoted history" in binding["guidelines"][0]
    for name in ("index.ts", "package.json", "skills/funes-recall/SKILL.md"):
        assert (package(pi_home) / name).is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(pi_home):
    assert_round_trip(pi_home, "pi")


def test_an_entry_pi_install_wrote_counts_as_funes_and_goes_on_remove(pi_home):
    settings = pi_home / ".pi" / "agent" / "settings.json"
    # `pi install <folder>` records the folder relative to the settings file.
    write(settings, SETTINGS.replace('"../../my-pi-ext"', '"../../my-pi-ext",\n    "../../.funes/integrations/pi"'))
    assert funes("add", "pi", "--yes").code == 0
    assert json.loads(settings.read_text())["packages"] == ["../../my-pi-ext", "../../.funes/integrations/pi"]
    assert funes("remove", "pi").code == 0
    assert settings.read_text() == SETTINGS


def test_a_hub_memory_binds_the_publish_hook(pi_home):
    assert funes("add", "pi", "acme/kb", "--yes").code == 0
    binding = json.loads((package(pi_home) / "funes.json").read_text())
    assert binding["mcp"][1:] == ["mcp", "acme/kb"]
    assert binding["publish"][-3:] == ["pi", "--publish", "acme/kb"]


@pytest.mark.parametrize("text", ['{"packages": [\n', '{"packages": "npm:x"}'])
def test_a_malformed_config_is_refused_and_left_untouched(pi_home, text):
    assert_refused(pi_home, "pi", pi_home / ".pi" / "agent" / "settings.json", text)


@needs_cli("pi")
def test_pi_list_sees_the_package(pi_home):
    assert funes("add", "pi", "--yes").code == 0
    listed = run_cli("pi", "list")
    assert listed.returncode == 0, listed.stderr
    assert str(package(pi_home)) in listed.stdout and "my-pi-ext" in listed.stdout
    assert funes("remove", "pi").code == 0
    assert str(package(pi_home)) not in run_cli("pi", "list").stdout


@needs_cli("pi")
def test_pi_loads_the_extension_tools_events_and_skill(pi_home):
    assert funes("add", "pi", "acme/kb", "--yes").code == 0
    loaded = pi_harness({"action": "describe"}, cwd=pi_home)
    assert loaded["errors"] == []
    assert str(package(pi_home) / "index.ts") in loaded["extensions"]
    assert {"recall", "get", "status", "hello"} <= set(loaded["tools"])
    assert {"agent_end", "session_before_compact", "session_start", "session_shutdown"} <= set(loaded["events"])
    assert "funes-recall" in loaded["skills"]
    assert any("quoted history" in guideline for guideline in loaded["guidelines"])
