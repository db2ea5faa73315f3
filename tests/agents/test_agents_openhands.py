"""`funes add openhands` / `funes remove openhands` against a real ~/.openhands/mcp.json in a temp
HOME, and an OpenHands conversation indexed and recalled through the CLI."""

from __future__ import annotations

import json
import shutil

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from trace_helpers import FIXTURES

MCP = """{
  "mcpServers": {
    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}
  }
}
"""


@pytest.fixture
def openhands_home(isolated_env):
    write(isolated_env / ".openhands" / "mcp.json", MCP)
    return isolated_env


def test_add_registers_the_server_beside_the_users_own(openhands_home):
    assert funes("add", "openhands", "--yes").code == 0
    servers = json.loads((openhands_home / ".openhands" / "mcp.json").read_text())["mcpServers"]
    assert servers["funes"]["command"].endswith("/funes") and servers["funes"]["args"] == ["mcp"]
    assert servers["fetch"] == {"command": "uvx", "args": ["mcp-server-fetch"]}


def test_add_twice_changes_nothing_and_remove_restores_every_byte(openhands_home):
    result = assert_round_trip(openhands_home, "openhands")
    assert "funes index --harness openhands" in result.out


@pytest.mark.parametrize("text", ['{"mcpServers": ', '{"mcpServers": ["funes"]}'])
def test_a_malformed_mcp_file_is_refused(openhands_home, text):
    assert_refused(openhands_home, "openhands", openhands_home / ".openhands" / "mcp.json", text)


def test_index_finds_the_conversation_and_recall_finds_its_turns(memory_home):
    shutil.copytree(FIXTURES / "agents" / "openhands", memory_home / ".openhands")
    hit = assert_indexed_and_recalled("openhands", "rate limiter refill monotonic clock quokka deploy",
                                      "5f1c0a2e9b7d4c3a8e6f1d2c3b4a5968")
    assert hit["workdir"] == "-home-dev-acme-api"
