"""Codebuff: each chat's chat-messages.json (funes/agents/codebuff/FORMAT.md), over
tests/fixtures/agents/codebuff, written for funes in the CLI's shapes."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.codebuff import parser as codebuff
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts

ROOT = FIXTURES / "agents" / "codebuff"
MAIN, OTHER = "2026-11-04T10-20-30.456Z", "2026-11-05T08-00-00.000Z"
MAIN_FILE = ROOT / "projects" / "shop" / "chats" / MAIN / "chat-messages.json"


def test_discovery_one_chat_a_unit(isolated_env):
    assert codebuff.default_roots() == [isolated_env / ".config" / "manicode" / "projects"]
    units = {u.session_id: u for u in codebuff.discover(ROOT)}
    assert set(units) == {MAIN, OTHER} and units[MAIN].path == MAIN_FILE  # run-state.json is not read
    assert [u.session_id for u in codebuff.discover(MAIN_FILE)] == [MAIN]


def test_main_chat():
    session = sessions_by_id(codebuff, ROOT)[MAIN]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("codebuff", "/home/dev/shop", "-home-dev-shop")
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read_files"), ("tool_result", "read_files"),
                       ("tool_use", "run_terminal_command"), ("tool_result", "run_terminal_command"),
                       ("tool_use", "find_files"), ("tool_result", "find_files"), ("text", None),  # the spawned agent
                       ("tool_use", "str_replace"), ("tool_result", "str_replace"),
                       ("tool_use", "write_file"), ("tool_result", "write_file"), ("text", None)]),
        ("user", [("tool_use", "run_terminal_command"), ("tool_result", "run_terminal_command")]),  # !git status
        ("user", [("text", None)]),  # the error message between is skipped
        ("assistant", [("text", None)]),
    ]
    ask = session.turns[0]
    assert (ask.turn_uuid, ask.parent_uuid, ask.ts) == ("user-1793787630456", None, "2026-11-04T10:20:30.456Z")
    assert session.turns[1].parent_uuid == ask.turn_uuid
    assert session.turns[-1].ts == "2026-11-04T10:22:01.000Z"  # from the id: the timestamp is a display time
    assert not any("iVBOR" in text for text in texts(session))


def test_provenance():
    session = sessions_by_id(codebuff, ROOT)[MAIN]
    calls = [b for t in session.turns for b in t.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("read_files", (FileTouch("src/cart.ts", "read"), FileTouch("src/money.ts", "read")), None),
        ("run_terminal_command", (), "bun test cart"),
        ("find_files", (), None),
        ("str_replace", (FileTouch("src/cart.ts", "edit"),), None),
        ("write_file", (FileTouch("src/money.ts", "write"),), None),
        ("run_terminal_command", (), "git status"),
    ]
    results = [b.exit_code for t in session.turns for b in t.blocks if b.tool_name == "run_terminal_command"
               and b.block_type == "tool_result"]
    assert results == [1, 0]


def test_a_chat_without_a_working_directory_is_named_by_its_project():
    other = sessions_by_id(codebuff, ROOT)[OTHER]
    assert (other.cwd, other.workdir, [t.ts for t in other.turns]) == (
        "", "blog", ["2026-11-05T08:00:00.000Z"] * 2)  # the chat's start: ids without times


def test_a_file_cut_mid_write_keeps_its_complete_messages(tmp_path):
    path = tmp_path / "projects" / "shop" / "chats" / MAIN / "chat-messages.json"
    path.parent.mkdir(parents=True)
    text = MAIN_FILE.read_text()
    path.write_text(text[:text.index('"id": "user-1793787720000"')])
    session = codebuff.parse(SourceUnit("codebuff", path, MAIN, "1:1"))
    assert_well_formed(session)
    assert len(session.turns) == 3 and "truncated JSON" in session.warnings[0].message


message_shapes = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["id", "variant", "content", "blocks", "type", "toolName", "input", "output", "outputRaw",
                         "textType", "metadata", "timestamp", "paths", "command"]) | st.text(max_size=6),
        children, max_size=5),
    max_leaves=14)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(message_shapes, max_size=5), position=st.integers(0, 5))
def test_odd_messages_cost_only_themselves(tmp_path_factory, items, position):
    folder = tmp_path_factory.mktemp("cb") / MAIN
    folder.mkdir()
    clean = json.loads(MAIN_FILE.read_text())
    (folder / "chat-messages.json").write_text(json.dumps(clean[:position] + items + clean[position:]))
    session = codebuff.parse(SourceUnit("codebuff", folder / "chat-messages.json", MAIN, "1:1"))
    assert_well_formed(session)
    good = texts(sessions_by_id(codebuff, ROOT)[MAIN])
    assert all(text in texts(session) for text in good)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=2000))
def test_random_bytes(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("cb") / "chat-messages.json"
    path.write_bytes(content)
    assert_well_formed(codebuff.parse(SourceUnit("codebuff", path, "x", "0:0")))


def test_a_vanished_file_is_a_read_error(tmp_path):
    with pytest.raises(TraceReadError, match="cannot read"):
        codebuff.parse(SourceUnit("codebuff", tmp_path / "gone" / "chat-messages.json", "gone", "1:1"))


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(codebuff, ROOT)[MAIN]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}


def test_index_and_recall_through_the_cli(memory_home):
    from agent_helpers import assert_indexed_and_recalled

    shutil.copytree(ROOT / "projects", memory_home / ".config" / "manicode" / "projects")
    hit = assert_indexed_and_recalled("codebuff", "addCents rounds half up at each step", MAIN)
    assert hit["turn_uuid"] == "ai-1793787721000-9c1d"
