"""Grok CLI: sessions in ~/.grok/grok.db (funes/agents/grok/FORMAT.md), over a database built by
tests/fixtures/agents/grok/make_grok_db.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.grok import parser as grok
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch
from trace_helpers import (assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                           locked_by_a_writer, sessions_by_id, shape, turn)

builder = fixture_module("agents/grok/make_grok_db.py")
MAIN, OTHER = builder.MAIN, builder.OTHER


@pytest.fixture
def db(isolated_env) -> Path:
    return builder.build(isolated_env / ".grok" / "grok.db")


def t(seq: int) -> str:
    return f"{MAIN}:{seq}"


def test_discovery_one_unit_a_session_with_messages(db, isolated_env):
    assert grok.default_roots() == [isolated_env / ".grok" / "grok.db"]
    assert [u.session_id for u in grok.discover(db.parent)] == [MAIN, OTHER]
    assert [u.session_id for u in grok.discover(db)] == [MAIN, OTHER]


def test_main_session(db):
    session = sessions_by_id(grok, db)[MAIN]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("grok_cli", "/home/dev/kiln", "-home-dev-kiln")
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read_file"), ("tool_use", "bash")]),
        ("tool", [("tool_result", "read_file")]),
        ("tool", [("tool_result", "bash")]),
        ("assistant", [("text", None), ("tool_use", "edit_file"), ("tool_use", "write_file")]),
        ("tool", [("tool_result", "edit_file")]),
        ("user", [("text", None)]),  # its image part dropped
        ("assistant", [("text", None)]),
    ]
    assert (session.turns[0].turn_uuid, session.turns[0].parent_uuid, session.turns[0].ts) == (
        t(2), None, "2026-11-06T14:00:02.000Z")  # the system message (seq 1) is skipped
    assert turn(session, t(3)).parent_uuid == t(2)
    assert json.loads(turn(session, t(7)).blocks[0].text) == {"success": True, "path": "/home/dev/kiln/logger.py"}


def test_provenance(db):
    session = sessions_by_id(grok, db)[MAIN]
    calls = [b for x in session.turns for b in x.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("read_file", (FileTouch("/home/dev/kiln/logger.py", "read"),), None),
        ("bash", (), "pytest -q tests/test_logger.py"),
        ("edit_file", (FileTouch("/home/dev/kiln/logger.py", "edit"),), None),
        ("write_file", (FileTouch("/home/dev/kiln/CHANGES.md", "write"),), None),
    ]


def test_appended_messages_change_the_signature(db):
    before = {u.session_id: u for u in grok.discover(db)}[MAIN]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO messages VALUES (?, 10, 'user', ?, ?)",
                     (MAIN, json.dumps({"role": "user", "content": "And the rotation?"}), builder.at(50)))
    conn.close()
    after = {u.session_id: u for u in grok.discover(db)}[MAIN]
    assert after.signature != before.signature and grok.parse(after).turns[-1].blocks[0].text == "And the rotation?"


def test_bad_rows_cost_only_themselves(db):
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE messages SET message_json = 'not json' WHERE session_id = ? AND seq = 3", (MAIN,))
        conn.execute("UPDATE messages SET message_json = '[1]' WHERE session_id = ? AND seq = 4", (MAIN,))
        conn.execute("UPDATE messages SET message_json = ? WHERE session_id = ? AND seq = 9",
                     (json.dumps({"role": "assistant", "content": [{"type": "text", "text": 7}, "caf\udcff"]}), MAIN))
    conn.close()
    session = sessions_by_id(grok, db)[MAIN]
    assert_well_formed(session)
    assert [(w.line, w.message.split(":")[0]) for w in session.warnings] == [(3, "message 3"), (4, "message 4")]
    assert turn(session, t(9)).blocks[0].text == "caf\ufffd"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
parts = json_values | st.fixed_dictionaries({
    "type": st.sampled_from(["text", "reasoning", "tool-call", "tool-result", "image"]) | json_values,
    "text": json_values, "toolName": json_values, "toolCallId": json_values, "input": json_values,
    "output": json_values | st.fixed_dictionaries({"type": st.sampled_from(["text", "json", "content"]),
                                                   "value": json_values})})
messages = json_values.map(json.dumps) | st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool", "system"]) | json_values,
    "content": json_values | st.lists(parts, max_size=4)}).map(json.dumps)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return builder.build(tmp_path_factory.mktemp("grok-template") / "grok.db")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(messages, max_size=6))
def test_odd_messages_parse(tmp_path_factory, template, rows):
    db = tmp_path_factory.mktemp("grok") / "grok.db"
    shutil.copyfile(template, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany("INSERT INTO messages VALUES (?, ?, 'user', ?, 'x')",
                         [(sid, 100 + n, row) for n, row in enumerate(rows) for sid in (MAIN, "odd")])
    conn.close()
    for unit in grok.discover(db):
        assert_well_formed(grok.parse(unit))


def test_unreadable_databases_are_read_errors(db, monkeypatch, isolated_env):
    [unit, _] = grok.discover(db)
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            grok.parse(unit)
    assert_corrupt_database_is_a_read_error(grok, isolated_env / "broken" / "grok.db", isolated_env / "broken")


def test_a_parsed_session_chunks(db):
    chunks = list(chunk_session(sessions_by_id(grok, db)[MAIN]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
