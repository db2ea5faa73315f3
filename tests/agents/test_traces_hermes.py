"""Hermes state.db sessions (funes.agents.hermes.parser), built by tests/fixtures/make_hermes_db.py."""

from __future__ import annotations

import json
import sqlite3

import pytest

from funes.errors import TraceReadError
from funes.agents.hermes import parser as hermes
from funes.traces import sqlite as sqlite_store
from trace_helpers import (assert_well_formed, build_hermes_db, hermes_builder, locked_by_a_writer, sessions_by_id,
                          shape)

BUILDER = hermes_builder()


@pytest.fixture
def current_db(tmp_path):
    return build_hermes_db(tmp_path / ".hermes" / "state.db")


def _insert(db, **row):
    conn = sqlite3.connect(db)
    with conn:
        columns = ", ".join(row)
        conn.execute(f"INSERT INTO messages ({columns}) VALUES ({', '.join('?' for _ in row)})", tuple(row.values()))
    conn.close()


@pytest.mark.parametrize("legacy", [False, True], ids=["schema30", "legacy"])
def test_expected_turn_counts(tmp_path, legacy):
    db = build_hermes_db(tmp_path / "state.db", legacy=legacy)
    expected = BUILDER.EXPECTED_TURNS_LEGACY if legacy else BUILDER.EXPECTED_TURNS
    sessions = sessions_by_id(hermes, db)
    assert {sid: len(s.turns) for sid, s in sessions.items()} == expected  # s_empty has no unit
    for session in sessions.values():
        assert_well_formed(session)
        assert session.warnings == []


def test_main_session(current_db):
    units = {u.session_id: u for u in hermes.discover(current_db.parent)}  # the folder works too
    assert units["s_main"].signature == "7:7"  # max message id : message count
    session = hermes.parse(units["s_main"])
    assert (session.harness, session.session_id, session.source_path) == ("hermes", "s_main", str(current_db))
    assert (session.cwd, session.workdir, session.branch) == ("/home/dev/proj", "-home-dev-proj", "main")
    assert not session.is_subagent and session.parent_session_id is None
    # the system row (id 1) and the hidden row (id 6) are skipped
    assert [t.turn_uuid for t in session.turns] == ["2", "3", "4", "5", "7"]
    assert [t.parent_uuid for t in session.turns] == [None, "2", "3", "4", "5"]
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "terminal")]),
        ("tool", [("tool_result", "terminal")]),
        ("user", [("text", None)]),
        ("assistant", [("text", None)]),
    ]
    ask, act, result, screenshot, answer = session.turns
    assert ask.ts == "2026-05-28T20:26:42.000Z"
    assert result.ts == "2026-05-28T20:26:42.500Z"  # earlier than the row before it: id order wins
    assert act.blocks[0].text == "Run the test in a loop to see the failure rate."
    assert json.loads(act.blocks[2].text) == {"command": "pytest -k test_parse --count 5"}
    assert act.blocks[2].tool_use_id == result.blocks[0].tool_use_id == "call_1"
    assert result.blocks[0].text == "2 failed, 3 passed"
    assert screenshot.blocks[0].text == "Here is the CI screenshot."  # multimodal: text parts only
    assert answer.blocks[0].text == "The test depends on dict ordering; sort the keys."


def test_compaction_and_subagents(current_db):
    sessions = sessions_by_id(hermes, current_db)
    child = sessions["s_rot_child"]
    assert child.parent_session_id == "s_rot_parent" and not child.is_subagent  # a continuation
    assert [t.blocks[0].text for t in child.turns] == ["Now list the open questions.", "1. Embedding model. 2. Retention."]
    inplace = sessions["s_inplace"]
    assert [t.turn_uuid for t in inplace.turns] == ["13", "14", "15", "16"]  # the re-inserted copies are gone
    assert inplace.workdir == "hermes" and inplace.cwd == ""
    sub = sessions["s_sub"]
    assert sub.is_subagent and sub.parent_session_id == "s_main"


def test_genuine_repeats_survive_when_the_schema_marks_archived_rows(tmp_path):
    current = build_hermes_db(tmp_path / "current.db")
    legacy = build_hermes_db(tmp_path / "legacy.db", legacy=True)
    for db in (current, legacy):
        for _ in range(2):
            _insert(db, session_id="s_rot_parent", role="user", content="yes", timestamp=BUILDER.T0 + 150)
    assert [t.blocks[0].text for t in sessions_by_id(hermes, current)["s_rot_parent"].turns][-2:] == ["yes", "yes"]
    # without archive markers a repeat cannot be told from a re-inserted copy
    assert [t.blocks[0].text for t in sessions_by_id(hermes, legacy)["s_rot_parent"].turns][-2:] == ["It proposes a Lance-backed memory.", "yes"]


def test_new_rows_keep_earlier_turn_ids(current_db):
    before = sessions_by_id(hermes, current_db)["s_main"]
    _insert(current_db, session_id="s_main", role="user", content="thanks, fixed", timestamp=BUILDER.T0 + 9)
    [unit] = [u for u in hermes.discover(current_db) if u.session_id == "s_main"]
    assert unit.signature == "22:8"
    after = hermes.parse(unit)
    assert after.turns[: len(before.turns)] == before.turns
    assert (after.turns[-1].turn_uuid, after.turns[-1].parent_uuid) == ("22", "7")


def test_profiles_are_swept(tmp_path):
    home = tmp_path / ".hermes"
    build_hermes_db(home / "state.db")
    build_hermes_db(home / "profiles" / "work" / "state.db", legacy=True)
    assert hermes.databases(home) == [home / "state.db", home / "profiles" / "work" / "state.db"]
    units = list(hermes.discover(home))
    assert len(units) == 10 and {u.path for u in units} == set(hermes.databases(home))


def test_odd_values_do_not_cost_the_session(current_db):
    _insert(current_db, session_id="s_sub", role="assistant", content=b"\xff\xfebytes", tool_calls="not json",
            timestamp="yesterday")
    _insert(current_db, session_id="s_sub", role="user", content="\x00json:[oops", timestamp=1)
    _insert(current_db, session_id="s_sub", role="user", content=12, timestamp="not a time")
    conn = sqlite3.connect(current_db)
    with conn:  # invalid UTF-8 stored as TEXT
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s_sub', 'user', CAST(x'41ff42' AS TEXT), 2)")
    conn.close()
    session = sessions_by_id(hermes, current_db)["s_sub"]
    assert [t.turn_uuid for t in session.turns] == ["20", "21", "22", "24", "25"]
    assert session.turns[2].blocks[0].text == "\ufffd\ufffdbytes"  # a BLOB, decoded; its tool_calls lost
    assert session.turns[3].blocks[0].text == "12"
    assert session.turns[4].blocks[0].text == "A\ufffdB"
    assert [w.line for w in session.warnings] == [22, 23]  # row ids: bad tool_calls JSON, bad multimodal JSON


def test_read_only_and_nothing_left_beside_the_database(current_db, monkeypatch):
    """A live database (Hermes has it open: its WAL exists) is read mode=ro, so rows
    still in the WAL are seen; a closed one immutable=1, so the read creates no -wal
    or -shm in Hermes's folder.  Neither changes a byte of the database."""
    uris = []
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite_store.sqlite3, "connect", lambda database, **kw: uris.append(database) or real_connect(database, **kw))
    before = current_db.read_bytes()
    beside = sorted(path.name for path in current_db.parent.iterdir())
    count = len(sessions_by_id(hermes, current_db))
    assert uris and all(uri.startswith("file:") and uri.endswith("?mode=ro&immutable=1") for uri in uris)
    assert sorted(path.name for path in current_db.parent.iterdir()) == beside
    assert current_db.read_bytes() == before
    uris.clear()
    hermes_process = real_connect(current_db)
    try:
        assert hermes_process.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        hermes_process.execute("PRAGMA wal_autocheckpoint=0")  # the new session stays in the WAL
        hermes_process.execute("INSERT INTO sessions (id, source, started_at) VALUES ('s_new', 'cli', 1)")
        hermes_process.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s_new', 'user', 'hi', 2)")
        hermes_process.commit()
        assert len(sessions_by_id(hermes, current_db)) == count + 1
        assert uris and all(uri.endswith("?mode=ro") for uri in uris)
    finally:
        hermes_process.close()


def test_transient_errors_are_retried(current_db, monkeypatch):
    failures = iter([sqlite3.OperationalError("disk I/O error"), sqlite3.OperationalError("database is locked")])
    real_connect = sqlite3.connect

    def flaky_connect(database, **kwargs):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_connect(database, **kwargs)

    monkeypatch.setattr(sqlite_store.sqlite3, "connect", flaky_connect)
    monkeypatch.setattr(sqlite_store, "RETRY_BACKOFF_S", 0.001)
    assert len(list(hermes.discover(current_db))) == 5


def test_locked_database_is_a_read_error(current_db, monkeypatch):
    [unit] = [u for u in hermes.discover(current_db) if u.session_id == "s_main"]
    with locked_by_a_writer(current_db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            hermes.parse(unit)
        with pytest.raises(TraceReadError, match="locked"):
            list(hermes.discover(current_db))


@pytest.mark.parametrize("content", [b"", b"SQLite format 3\x00" + b"\x07" * 5000, b"not a database at all" * 100])
def test_corrupt_database_is_a_read_error(tmp_path, content):
    db = tmp_path / "state.db"
    db.write_bytes(content)
    with pytest.raises(TraceReadError):
        list(hermes.discover(db))
    with pytest.raises(TraceReadError):
        hermes.parse(hermes.SourceUnit("hermes", db, "s_main", "1:1"))


def test_database_of_another_program(tmp_path):
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(TraceReadError, match="not a Hermes"):
        list(hermes.discover(db))
