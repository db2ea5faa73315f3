"""`funes add openhands` / `funes remove openhands` against a real ~/.openhands/mcp.json in a temp
HOME, an OpenHands conversation indexed and recalled through the CLI, and the OpenHands CLI's own
`openhands mcp list` when it is installed (.ci/run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from agent_helpers import (assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, needs_py_cli,
                           py_agent, write)
from trace_helpers import FIXTURES

MCP = """{
  "mcpServers": {
    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}
  }
}
"""


@pytest.fixture
def openhands_home(isolated_env, monkeypatch):
    for name in ("OPENHANDS_PERSISTENCE_DIR", "OPENHANDS_CONVERSATIONS_DIR"):
        monkeypatch.delenv(name, raising=False)
    write(isolated_env / ".openhands" / "mcp.json", MCP)
    return isolated_env


def test_add_registers_the_server_beside_the_users_own(openhands_home):
    assert funes("add", "openhands", "--yes").code == 0
    servers = json.loads((openhands_home / ".openhands" / "mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert servers["fetch"] == {"command": "uvx", "args": ["mcp-server-fetch"]}
    assert "name: funes-recall" in (openhands_home / ".openhands" / "skills" / "funes-recall" / "SKILL.md").read_text()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(openhands_home):
    result = assert_round_trip(openhands_home, "openhands")
    assert "funes index --harness openhands" in result.out


@pytest.mark.parametrize("text", ['{"mcpServers": ', '{"mcpServers": ["funes"]}'])
def test_a_malformed_mcp_file_is_refused(openhands_home, text):
    assert_refused(openhands_home, "openhands", openhands_home / ".openhands" / "mcp.json", text)


def test_the_persistence_dir_variable_moves_the_config(openhands_home, monkeypatch):
    moved = openhands_home / "oh-state"
    write(moved / "mcp.json", MCP)
    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(moved))
    assert funes("add", "openhands", "--yes").code == 0
    assert "funes" in json.loads((moved / "mcp.json").read_text())["mcpServers"]
    # the SDK reads user skills under the home folder whatever the variable says
    assert (openhands_home / ".openhands" / "skills" / "funes-recall" / "SKILL.md").is_file()
    assert (openhands_home / ".openhands" / "mcp.json").read_text() == MCP


def test_index_finds_the_conversation_and_recall_finds_its_turns(memory_home, monkeypatch):
    for name in ("OPENHANDS_PERSISTENCE_DIR", "OPENHANDS_CONVERSATIONS_DIR"):
        monkeypatch.delenv(name, raising=False)
    shutil.copytree(FIXTURES / "agents" / "openhands", memory_home / ".openhands")
    hit = assert_indexed_and_recalled("openhands", "rate limiter refill monotonic clock quokka deploy",
                                      "5f1c0a2e9b7d4c3a8e6f1d2c3b4a5968")
    assert hit["workdir"] == "-home-dev-acme-api"


def _mcp_list() -> subprocess.CompletedProcess:
    """`openhands mcp list`, wide enough that rich wraps no line."""
    return subprocess.run([str(py_agent("openhands", "openhands")), "mcp", "list"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "500", "NO_COLOR": "1"}, cwd=os.environ["HOME"])


def _listed(stdout: str) -> dict[str, list[str]]:
    """Each server's detail lines under its `  • <name> [...]` header."""
    servers: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        if line.startswith("  • "):
            servers[line[4:].split(" [")[0]] = lines = []
        elif servers and line.startswith("    "):
            lines.append(line.strip())
    return servers


@needs_py_cli("openhands")
def test_openhands_mcp_list_sees_the_registration(openhands_home):
    config = openhands_home / ".openhands" / "mcp.json"
    before = config.read_bytes()
    assert funes("add", "openhands", "--yes").code == 0
    listed = _mcp_list()
    assert listed.returncode == 0, listed.stderr
    servers = _listed(listed.stdout)
    assert "  • funes [✓ enabled]" in listed.stdout.splitlines()  # the agent loads enabled servers only
    command = next(line for line in servers["funes"] if line.startswith("Command: "))
    assert command.endswith("/funes") and "Arguments: mcp" in servers["funes"], listed.stdout
    assert "Arguments: mcp-server-fetch" in servers["fetch"]
    assert funes("remove", "openhands").code == 0
    assert config.read_bytes() == before
    after = _mcp_list()
    assert after.returncode == 0 and set(_listed(after.stdout)) == {"fetch"}, after.stdout


USER_SKILLS = """
from openhands.sdk.skills import load_user_skills
print(" ".join(sorted(skill.name for skill in load_user_skills())))
"""


@needs_py_cli("openhands")
def test_the_sdk_loads_the_skill_as_a_user_skill(openhands_home):
    def user_skills() -> list[str]:
        loaded = subprocess.run([str(py_agent("openhands", "python")), "-c", USER_SKILLS], capture_output=True,
                                text=True, timeout=300, env={**os.environ, "OPENHANDS_SUPPRESS_BANNER": "1"},
                                cwd=os.environ["HOME"])
        assert loaded.returncode == 0, loaded.stderr[-2000:]
        return loaded.stdout.split()

    assert funes("add", "openhands", "--yes").code == 0
    assert "funes-recall" in user_skills()
    assert funes("remove", "openhands").code == 0
    assert "funes-recall" not in user_skills()


SDK_READS_THE_FIXTURES = """
import json, pathlib, sys
from openhands.sdk.event.base import Event
from openhands.tools.preset.default import register_default_tools
from openhands.tools.grep import GrepTool  # noqa: F401  (registers GrepAction)
register_default_tools(enable_browser=False)
for path in sorted(pathlib.Path(sys.argv[1]).glob("*/events/event-*.json")):
    text = path.read_text()
    again = json.loads(Event.model_validate_json(text).model_dump_json(exclude_none=True))
    assert again == json.loads(text), path.name
    print(path.name)
"""


@needs_py_cli("openhands")
def test_the_sdk_reads_the_fixture_events_back_unchanged():
    """The fixtures are in the shapes openhands-sdk writes: its own Event model loads each file and
    serializes it back (exclude_none, as its EventLog writes) to the same JSON."""
    root = FIXTURES / "agents" / "openhands" / "conversations"
    loaded = subprocess.run([str(py_agent("openhands", "python")), "-c", SDK_READS_THE_FIXTURES, str(root)],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "OPENHANDS_SUPPRESS_BANNER": "1"})
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert len(loaded.stdout.split()) == len(list(root.glob("*/events/event-*.json"))) == 10
