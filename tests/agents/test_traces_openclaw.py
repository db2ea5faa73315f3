"""OpenClaw: pi-format entries in each agent's SQLite store and in legacy JSON Lines files
(funes/agents/openclaw/FORMAT.md), over a state folder built by
tests/fixtures/agents/openclaw/make_openclaw_state.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.openclaw import parser as openclaw
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch
from trace_helpers import (assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                           locked_by_a_writer, sessions_by_id, shape, turn)

builder = fixture_module("agents/openclaw/make_openclaw_state.py")
MAIN, CHILD, LEGACY, WORK = builder.MAIN, builder.CHILD, builder.LEGACY, builder.WORK


@pytest.fixture(autouse=True)
def no_openclaw_env(monkeypatch):
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_HOME", "OPENCLAW_CONFIG_PATH"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def state(isolated_env) -> Path:
    return builder.build(isolated_env / ".openclaw")


def store(state: Path) -> Path:
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def test_the_state_folder_and_what_moves_it(isolated_env, monkeypatch):
    assert openclaw.default_roots() == [isolated_env / ".openclaw" / "agents"]
    monkeypatch.setenv("OPENCLAW_HOME", str(isolated_env / "oh"))
    assert openclaw.default_roots() == [isolated_env / "oh" / ".openclaw" / "agents"]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(isolated_env / "st"))
    assert openclaw.default_roots() == [isolated_env / "st" / "agents"]
    monkeypatch.setenv("OPENCLAW_STATE_DIR", "undefined")  # OpenClaw reads that as unset
    assert openclaw.default_roots() == [isolated_env / "oh" / ".openclaw" / "agents"]


def test_discovery_reads_the_store_and_only_unimported_files(state):
    units = list(openclaw.discover(state))
    assert [(u.session_id, u.path.name) for u in units] == [
        (MAIN, "openclaw-agent.sqlite"), (CHILD, "openclaw-agent.sqlite"),
        (LEGACY, f"{LEGACY}.jsonl"), (WORK, f"{WORK}.jsonl")]  # MAIN's imported file is not read twice
    assert [u.session_id for u in openclaw.discover(state / "agents")] == [u.session_id for u in units]
    assert [u.session_id for u in openclaw.discover(state / "agents" / "work")] == [WORK]
    assert [u.session_id for u in openclaw.discover(store(state))] == [MAIN, CHILD]


def test_main_session_from_the_store(state):
    session = sessions_by_id(openclaw, state)[MAIN]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir, session.is_subagent) == (
        "openclaw", "/home/dev/garden", "-home-dev-garden", False)
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read"), ("tool_use", "exec")]),
        ("tool", [("tool_result", "read")]),
        ("tool", [("tool_result", "exec")]),
        ("assistant", [("text", None), ("tool_use", "edit"), ("tool_use", "write")]),
        ("tool", [("tool_result", "edit")]),  # stored as a zstd frame
        ("user", [("tool_use", "bash"), ("tool_result", "bash")]),  # the user's !ls
        ("assistant", [("text", None)]),
    ]
    assert [(t.turn_uuid, t.parent_uuid) for t in session.turns][:2] == [("a1", None), ("a2", "a1")]
    assert turn(session, "a9").parent_uuid == "a6"  # through the compaction and custom entries
    assert turn(session, "a1").ts == builder.stamp(1)


def test_provenance(state):
    session = sessions_by_id(openclaw, state)[MAIN]
    calls = [b for t in session.turns for b in t.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("read", (FileTouch("/home/dev/garden/schedule.yaml", "read"),), None),
        ("exec", (), "grep -c dry sensors.log"),
        ("edit", (FileTouch("/home/dev/garden/schedule.yaml", "edit"),), None),
        ("write", (FileTouch("/home/dev/garden/NOTES.md", "write"),), None),
        ("bash", (), "ls beds"),
    ]
    assert turn(session, "a4").blocks[0].exit_code == 2  # details.exitCode


def test_subagent_and_legacy_sessions(state):
    found = sessions_by_id(openclaw, state)
    child = found[CHILD]
    assert child.is_subagent and child.parent_session_id == MAIN
    legacy, work = found[LEGACY], found[WORK]
    assert [b.text for t in legacy.turns for b in t.blocks] == ["Set up the garden notes.", "Created NOTES.md."]
    assert (work.cwd, work.is_subagent) == ("/home/dev/office", False)


def test_appended_events_change_the_signature(state):
    before = {u.session_id: u for u in openclaw.discover(store(state))}[MAIN]
    conn = sqlite3.connect(store(state))
    with conn:
        event = builder.message("a11", "a10", 11, builder.user("And the roses?"))
        conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, 12, ?, 1)",
                     (MAIN, json.dumps(event)))
    conn.close()
    after = {u.session_id: u for u in openclaw.discover(store(state))}[MAIN]
    assert after.signature != before.signature
    assert openclaw.parse(after).turns[-1].blocks[0].text == "And the roses?"


def test_bad_events_cost_only_themselves(state):
    conn = sqlite3.connect(store(state))
    with conn:
        conn.execute("UPDATE transcript_events SET event_json = 'not json' WHERE session_id = ? AND seq = 3", (MAIN,))
        conn.execute("UPDATE transcript_events SET event_json = '[1]' WHERE session_id = ? AND seq = 4", (MAIN,))
        conn.execute("UPDATE transcript_events SET event_json = NULL, event_zstd = X'28b52ffd00' "
                     "WHERE session_id = ? AND seq = 5", (MAIN,))
        conn.execute("UPDATE transcript_events SET event_json = ? WHERE session_id = ? AND seq = 11", (json.dumps(
            {"type": "message", "id": "a10", "parentId": "a9", "message": {"role": "assistant", "content": 7}}), MAIN))
    conn.close()
    session = sessions_by_id(openclaw, state)[MAIN]
    assert_well_formed(session)
    assert [(w.line, w.message.split(":")[0]) for w in session.warnings] == [(3, "event 3"), (4, "event 4"),
                                                                             (5, "event 5")]
    assert {"a2", "a3", "a4", "a10"}.isdisjoint({t.turn_uuid for t in session.turns})


def test_a_frame_that_does_not_record_its_size_is_read_too(state):
    import zstandard

    event = builder.message("a10", "a9", 10, builder.assistant({"type": "text", "text": "Roses get water at dawn."}))
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(json.dumps(event).encode())
    assert zstandard.frame_content_size(frame) == -1
    conn = sqlite3.connect(store(state))
    with conn:
        conn.execute("UPDATE transcript_events SET event_json = NULL, event_zstd = ?, event_utf8_bytes = 1, "
                     "navigation_json = '{}' WHERE session_id = ? AND seq = 11", (frame, MAIN))
    conn.close()
    assert turn(sessions_by_id(openclaw, state)[MAIN], "a10").blocks[0].text == "Roses get water at dawn."


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
odd_events = json_values.map(json.dumps) | st.binary(max_size=30) | st.fixed_dictionaries({
    "type": st.sampled_from(["message", "session", "compaction"]) | json_values, "id": json_values,
    "parentId": json_values, "timestamp": json_values, "cwd": json_values,
    "message": json_values | st.fixed_dictionaries({
        "role": st.sampled_from(["user", "assistant", "toolResult", "bashExecution"]) | json_values,
        "content": json_values, "toolName": json_values, "details": json_values, "command": json_values}),
}).map(json.dumps)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return store(builder.build(tmp_path_factory.mktemp("openclaw-template") / ".openclaw"))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(odd_events, max_size=6))
def test_odd_events_parse(tmp_path_factory, template, events):
    db = tmp_path_factory.mktemp("openclaw") / "openclaw-agent.sqlite"
    shutil.copyfile(template, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany("INSERT INTO transcript_events (session_id, seq, event_json, event_zstd, created_at) "
                         "VALUES (?, ?, ?, ?, 1)",  # bytes go where compressed events go: a broken frame
                         [(sid, 100 + n, None if isinstance(event, bytes) else event,
                           event if isinstance(event, bytes) else None)
                          for n, event in enumerate(events) for sid in (MAIN, "odd")])
    conn.close()
    for unit in openclaw.discover(db):
        assert_well_formed(openclaw.parse(unit))


def test_unreadable_stores_are_read_errors(state, monkeypatch, isolated_env):
    [unit, _] = openclaw.discover(store(state))
    with locked_by_a_writer(store(state), monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            openclaw.parse(unit)
    broken = isolated_env / "broken" / "agents" / "main"
    assert_corrupt_database_is_a_read_error(openclaw, broken / "agent" / "openclaw-agent.sqlite", broken)


def test_a_parsed_session_chunks(state):
    chunks = list(chunk_session(sessions_by_id(openclaw, state)[MAIN]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
