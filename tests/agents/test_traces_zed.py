"""Zed's agent panel: threads in <data dir>/threads/threads.db (funes/agents/zed/FORMAT.md), over a
database built by tests/fixtures/agents/zed/make_zed_db.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.zed import AGENT
from funes.agents.zed import parser as zed
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch
from trace_helpers import (assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                           locked_by_a_writer, sessions_by_id, shape)

builder = fixture_module("agents/zed/make_zed_db.py")
MAIN, CHILD, LEGACY = builder.MAIN, builder.CHILD, builder.LEGACY


@pytest.fixture
def db(isolated_env) -> Path:
    return builder.build(isolated_env / "zed" / "threads" / "threads.db")


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the Linux data dir")
def test_the_data_dir_and_what_moves_it(isolated_env, monkeypatch):
    for name in ("XDG_DATA_HOME", "FLATPAK_XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert zed.default_roots() == [isolated_env / ".local" / "share" / "zed" / "threads" / "threads.db"]
    monkeypatch.setenv("XDG_DATA_HOME", str(isolated_env / "xdg"))
    assert zed.default_roots() == [isolated_env / "xdg" / "zed" / "threads" / "threads.db"]
    monkeypatch.setenv("FLATPAK_XDG_DATA_HOME", str(isolated_env / "flat"))
    assert zed.default_roots() == [isolated_env / "flat" / "zed" / "threads" / "threads.db"]


def test_discovery_from_the_data_dir_the_folder_or_the_file(db):
    for root in (db, db.parent, db.parent.parent):
        assert [u.session_id for u in zed.discover(root)] == [LEGACY, CHILD, MAIN]
    assert AGENT.claims_location(db) == 3


def test_a_current_thread(db):
    session = sessions_by_id(zed, db)[MAIN]
    assert_well_formed(session)
    assert (session.cwd, session.branch, session.workdir, session.warnings) == (
        "/home/dev/atlas", "main", "-home-dev-atlas", [])
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read_file"), ("tool_use", "terminal")]),
        ("tool", [("tool_result", "read_file"), ("tool_result", "terminal")]),
        ("assistant", [("tool_use", "edit_file")]),
        ("tool", [("tool_result", "edit_file")]),
        ("assistant", [("text", None)]),
        ("user", [("text", None)]),  # the Resume marker before it is skipped
    ]
    ask = session.turns[0]
    assert ask.blocks[0].text == "Why does the tile cache miss after every deploy?"  # not the mentioned file
    assert (ask.turn_uuid, ask.ts) == (f"{MAIN}:0", "2026-04-10T14:00:00.000Z")
    calls = [b for x in session.turns for b in x.blocks if b.block_type == "tool_use"]
    assert [(b.files, b.command) for b in calls] == [
        ((FileTouch("atlas/src/cache.rs", "read"),), None), ((), "cargo test cache"),
        ((FileTouch("atlas/src/cache.rs", "edit"),), None)]
    assert session.turns[4].blocks[0].text == "Edited atlas/src/cache.rs"  # content as a list of text parts
    assert {c.block_type for c in chunk_session(session)} == {"text", "thinking", "tool_use", "tool_result"}


def test_a_subagent_thread_and_a_first_agent_thread(db):
    found = sessions_by_id(zed, db)
    child = found[CHILD]
    assert (child.parent_session_id, child.is_subagent, child.cwd) == (MAIN, True, "/home/dev/atlas")
    legacy = found[LEGACY]
    assert_well_formed(legacy)
    assert [shape(x) for x in legacy.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "grep")]),
        ("tool", [("tool_result", "grep")])]


def test_a_rewritten_row_changes_the_signature_and_bad_data_costs_only_its_thread(db):
    before = {u.session_id: u.signature for u in zed.discover(db)}
    thread = builder.child_thread()
    thread["messages"].append(builder.user("And the tests?"))
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE threads SET data = ? WHERE id = ?", (json.dumps(thread).encode(), CHILD))
        conn.execute("UPDATE threads SET data = ? WHERE id = ?", (b"\x28\xb5\x2f\xfd garbage", MAIN))
    conn.close()
    after = {u.session_id: u for u in zed.discover(db)}
    assert after[CHILD].signature != before[CHILD]
    assert zed.parse(after[CHILD]).turns[-1].blocks[0].text == "And the tests?"
    broken = zed.parse(after[MAIN])
    assert broken.turns == [] and "data is not readable" in broken.warnings[0].message


def test_unreadable_databases_are_read_errors(db, monkeypatch, isolated_env):
    unit = next(iter(zed.discover(db)))
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            zed.parse(unit)
    assert_corrupt_database_is_a_read_error(zed, isolated_env / "broken" / "threads.db", isolated_env / "broken")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
messages = json_values | st.fixed_dictionaries({"User": json_values | st.fixed_dictionaries(
    {"content": st.lists(json_values | st.fixed_dictionaries({"Text": json_values}), max_size=3)})}) | \
    st.fixed_dictionaries({"Agent": json_values | st.fixed_dictionaries({
        "content": st.lists(json_values | st.fixed_dictionaries({"ToolUse": json_values}) |
                            st.fixed_dictionaries({"Thinking": json_values}), max_size=3),
        "tool_results": json_values})}) | st.fixed_dictionaries({
            "role": json_values, "segments": json_values, "tool_uses": json_values, "tool_results": json_values})


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return builder.build(tmp_path_factory.mktemp("zed-template") / "threads.db")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(threads=st.lists(json_values.map(json.dumps) | st.fixed_dictionaries({
    "messages": st.lists(messages, max_size=4), "initial_project_snapshot": json_values}).map(json.dumps), max_size=3),
    folders=json_values)
def test_odd_threads_parse(tmp_path_factory, template, threads, folders):
    db = tmp_path_factory.mktemp("zed") / "threads.db"
    shutil.copyfile(template, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany("INSERT INTO threads (id, summary, updated_at, data_type, data, folder_paths, "
                         "folder_paths_order) VALUES (?, '', '', 'json', ?, ?, ?)",
                         [(f"odd-{n}", text.encode(), json.dumps(folders), "x,1") for n, text in enumerate(threads)])
    conn.close()
    for unit in zed.discover(db):
        assert_well_formed(zed.parse(unit))
