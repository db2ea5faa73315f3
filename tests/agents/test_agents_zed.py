"""`funes add zed` / `funes remove zed` against a real settings.json (JSON with comments, as Zed
writes it) in a temp HOME, and a Zed thread indexed and recalled through the CLI.  (Zed is an editor
installed from its own site, not a package registry: its own UI is not run.)"""

from __future__ import annotations

import json
import re
import sys

import pytest

from agent_helpers import assert_indexed_and_recalled, assert_refused, assert_round_trip, funes, write
from trace_helpers import fixture_module

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the XDG layout")

SETTINGS = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "theme": "One Dark", // picked in the theme selector
  "context_servers": {
    /* the docs server */
    "docs": {"source": "custom", "command": "docs-server", "args": ["--stdio"], "env": {}}
  }
}
"""


@pytest.fixture
def zed_home(isolated_env, monkeypatch):
    for name in ("XDG_CONFIG_HOME", "FLATPAK_XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    write(isolated_env / ".config" / "zed" / "settings.json", SETTINGS)
    return isolated_env


def _uncommented(text: str) -> dict:
    return json.loads(re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.DOTALL))


def test_add_registers_a_custom_context_server_and_keeps_the_comments(zed_home):
    assert funes("add", "zed", "--yes").code == 0
    text = (zed_home / ".config" / "zed" / "settings.json").read_text()
    servers = _uncommented(text)["context_servers"]
    assert servers["funes"]["source"] == "custom" and servers["funes"]["args"] == ["mcp"] and "docs" in servers
    assert text.startswith("// Zed settings") and "/* the docs server */" in text


def test_add_twice_changes_nothing_and_remove_restores_every_byte(zed_home):
    result = assert_round_trip(zed_home, "zed")
    assert "funes index --harness zed" in result.out


@pytest.mark.parametrize("text", ['{"context_servers": {', '{"context_servers": [],}', '{"context_servers": []}'])
def test_a_malformed_settings_file_is_refused(zed_home, text):
    assert_refused(zed_home, "zed", zed_home / ".config" / "zed" / "settings.json", text)


def test_index_finds_the_threads_and_recall_finds_their_turns(memory_home, monkeypatch):
    for name in ("XDG_DATA_HOME", "FLATPAK_XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    builder = fixture_module("agents/zed/make_zed_db.py")
    home = memory_home / ("Library/Application Support/Zed" if sys.platform == "darwin" else ".local/share/zed")
    builder.build(home / "threads" / "threads.db")
    hit = assert_indexed_and_recalled("zed", "the key embedded the build id so every deploy started cold",
                                      builder.MAIN)
    assert hit["turn_uuid"] == f"{builder.MAIN}:3"
