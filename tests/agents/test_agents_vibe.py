"""`funes add vibe` / `funes remove vibe` against a real config.toml in a temp HOME (funes's
[[mcp_servers]] element among the user's), a Mistral Vibe session indexed and recalled through
the CLI, and Vibe's own config loader reading funes's entry when mistral-vibe is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib

import pytest

from agent_helpers import (assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, needs_py_cli, py_agent,
                           write)
from trace_helpers import FIXTURES

CONFIG = """# Mistral Vibe
active_model = "devstral-medium"

[[mcp_servers]]
name = "fetch_server"
transport = "stdio"
command = "uvx"
args = ["mcp-server-fetch"]

[[mcp_servers]]
name = "my_http_server"
transport = "http"
url = "http://localhost:8000"

[tools.bash]
permission = "ask"
"""


@pytest.fixture
def vibe_home(isolated_env, monkeypatch):
    monkeypatch.delenv("VIBE_HOME", raising=False)
    write(isolated_env / ".vibe" / "config.toml", CONFIG)
    return isolated_env


def servers(home) -> list[dict]:
    return tomllib.loads((home / ".vibe" / "config.toml").read_text())["mcp_servers"]


def test_add_appends_a_server_element_and_the_skill(vibe_home):
    assert funes("add", "vibe", "--yes").code == 0
    listed = servers(vibe_home)
    assert [server["name"] for server in listed] == ["fetch_server", "my_http_server", "funes"]
    assert listed[2]["transport"] == "stdio" and listed[2]["args"] == ["mcp"]
    assert listed[2]["command"].endswith("/funes")
    assert (vibe_home / ".vibe" / "config.toml").read_text().startswith(CONFIG)
    assert (vibe_home / ".vibe" / "skills" / "funes-recall" / "SKILL.md").is_file()


def test_add_twice_changes_nothing_and_remove_restores_every_byte(vibe_home):
    result = assert_round_trip(vibe_home, "vibe")
    assert "funes index --harness vibe" in result.out


def test_an_inline_server_array_is_edited_too(vibe_home):
    write(vibe_home / ".vibe" / "config.toml", 'mcp_servers = [{name = "x", transport = "stdio", command = "y"}]\n')
    assert_round_trip(vibe_home, "vibe")


def test_vibe_home_moves_the_config(isolated_env, monkeypatch):
    monkeypatch.setenv("VIBE_HOME", str(isolated_env / "vh"))
    assert funes("add", "vibe", "--yes").code == 0
    assert [s["name"] for s in tomllib.loads((isolated_env / "vh" / "config.toml").read_text())["mcp_servers"]] == \
        ["funes"]
    assert funes("remove", "vibe").code == 0
    assert not (isolated_env / "vh").exists()


@pytest.mark.parametrize("text", ["[[mcp_servers]\n", 'mcp_servers = "funes"\n', "[mcp_servers]\nname = 1\n"])
def test_a_malformed_config_is_refused(vibe_home, text):
    assert_refused(vibe_home, "vibe", vibe_home / ".vibe" / "config.toml", text)


def test_index_finds_the_sessions_and_recall_finds_their_turns(memory_home, monkeypatch):
    monkeypatch.delenv("VIBE_HOME", raising=False)
    shutil.copytree(FIXTURES / "agents" / "mistral_vibe", memory_home / ".vibe")
    hit = assert_indexed_and_recalled("mistral_vibe", "loader reads files as utf-8-sig byte-order mark",
                                      "session_20251205_101500_7c0e5a11")
    assert hit["workdir"] == "-home-dev-notes"


# Vibe has no command that lists MCP servers: its own config loader (what `vibe` runs at start,
# validating every [[mcp_servers]] element) reads them; the API key only satisfies its check.
VIBE_SERVERS = """
from vibe.core.config.harness_files import init_harness_files_manager
from vibe.core.config import VibeConfig
init_harness_files_manager("user")
for server in VibeConfig.load().mcp_servers:
    print(server.name, server.transport, getattr(server, "command", None), *getattr(server, "args", []))
"""


@needs_py_cli("vibe")
def test_vibes_config_loader_sees_the_registration(vibe_home):
    assert funes("add", "vibe", "--yes").code == 0
    loaded = subprocess.run([str(py_agent("vibe", "python")), "-c", VIBE_SERVERS], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "MISTRAL_API_KEY": "offline"}, cwd=os.environ["HOME"])
    assert loaded.returncode == 0, loaded.stderr
    lines = loaded.stdout.splitlines()
    assert lines[0] == "fetch_server stdio uvx mcp-server-fetch" and lines[1].startswith("my_http_server http")
    assert lines[2].startswith("funes stdio ") and lines[2].endswith("/funes mcp"), lines
