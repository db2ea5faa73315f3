"""Kiro CLI conversations (funes/agents/kiro/parser.py): the session files of
tests/fixtures/agents/kiro_cli and the SQLite stores tests/fixtures/make_kiro_db.py builds
(funes/agents/kiro/FORMAT.md)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.kiro import parser as kiro
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, locked_by_a_writer, sessions_by_id, shape, texts, turn

SESSIONS = FIXTURES / "agents" / "kiro_cli" / "sessions" / "cli"
SID = "3c2b1a00-7777-4888-9999-aaaabbbbcccc"
SESSION_FILE = SESSIONS / f"{SID}.jsonl"

_spec = importlib.util.spec_from_file_location("make_kiro_db", FIXTURES / "make_kiro_db.py")
BUILDER = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(BUILDER)


@pytest.fixture
def db(tmp_path) -> Path:
    return BUILDER.build(tmp_path / "kiro-cli" / "data.sqlite3")


# ---------------------------------------------------------------- session files

def test_session_file_turns_blocks_and_provenance():
    [unit] = kiro.discover(SESSIONS)
    assert unit.session_id == SID and unit.path == SESSION_FILE
    session = kiro.parse(unit)
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("kiro_cli", "/home/dev/shop", "-home-dev-shop")
    assert [t.turn_uuid for t in session.turns] == ["p-1", "a-1", "r-1", "a-2", "r-2", "a-3", "p-2", "a-4"]
    assert [shape(t) for t in session.turns[:5]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "shell")]),
        ("tool", [("tool_result", "shell")]),
        ("assistant", [("text", None), ("tool_use", "read"), ("tool_use", "write")]),
        ("tool", [("tool_result", "read"), ("tool_result", "write")]),
    ]
    ask, act, lint = session.turns[:3]
    assert ask.ts == "2026-06-07T15:10:00.250Z"
    assert act.ts == ask.ts  # assistant records carry no time: the prompt's
    assert act.blocks[2].command == "ruff check ."
    assert (lint.blocks[0].exit_code, lint.blocks[0].text) == (1, "shop/cart.py:3:1: F401 unused import")
    read, write = turn(session, "a-2").blocks[1:]
    assert read.files == (FileTouch("/home/dev/shop/shop/cart.py", "read"),)
    assert write.files == (FileTouch("/home/dev/shop/shop/cart.py", "edit"),)
    assert turn(session, "p-2").blocks[0].text == "thanks"  # the image part is left out
    assert turn(session, "p-2").ts == "2026-06-07T15:12:00.000Z"


def test_session_file_appends_and_bad_lines(tmp_path):
    lines = SESSION_FILE.read_bytes().splitlines(keepends=True)
    path = tmp_path / f"{SID}.jsonl"
    shutil.copyfile(SESSION_FILE.with_suffix(".json"), path.with_suffix(".json"))
    full = {t.turn_uuid: [b.text for b in t.blocks] for t in kiro.parse(SourceUnit("kiro_cli", SESSION_FILE, SID, "1"))
            .turns}
    for cut in range(1, len(lines)):
        path.write_bytes(b"".join(lines[:cut]))
        early = kiro.parse(SourceUnit("kiro_cli", path, SID, "1:1"))
        assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in early.turns)
    path.write_bytes(b"".join(lines) + b'not json\n{"kind": "Prompt", "data": {"content": "x"}}\n'
                     b'{"kind": "AssistantMessage", "data": {"content": [{"kind": "toolUse", "data": 3}]}}\n'
                     b'{"kind": "Prompt", "data": {"message_id": "p-9", "content": [{"kind": "text", "data": "\xff ok"}]}}\n'
                     b'{"kind": "Prompt", "data": {"content": [{"kind": "text", "data": "cut')
    session = kiro.parse(SourceUnit("kiro_cli", path, SID, "1:1"))
    assert_well_formed(session)
    assert turn(session, "p-9").blocks[0].text == "\ufffd ok"
    assert [w.line for w in session.warnings] == [len(lines) + 1, len(lines) + 5]
    path.with_suffix(".json").unlink()  # the sidecar gone: the session still reads, without a cwd
    assert kiro.parse(SourceUnit("kiro_cli", path, SID, "1:1")).cwd == ""
    with pytest.raises(TraceReadError, match="cannot read"):
        kiro.parse(SourceUnit("kiro_cli", tmp_path / "gone.jsonl", "gone", "1:1"))


# ---------------------------------------------------------------- SQLite

def test_database_units_one_per_conversation(db):
    units = {unit.session_id: unit for unit in kiro.discover(db)}
    assert set(units) == set(BUILDER.EXPECTED_TURNS)  # the old table's copy of conv-other is read once
    assert units["conv-main"].signature.startswith(f"{BUILDER.T0 + 141_500}:")
    assert set(units) == {unit.session_id for unit in kiro.discover(db.parent)}  # the folder works too
    found = sessions_by_id(kiro, db)
    assert {cid: len(s.turns) for cid, s in found.items()} == BUILDER.EXPECTED_TURNS
    for session in found.values():
        assert_well_formed(session)
        assert session.warnings == []


def test_conversation_turns_ids_and_provenance(db):
    session = sessions_by_id(kiro, db)["conv-main"]
    assert (session.cwd, session.workdir, session.source_path) == ("/home/dev/api", "-home-dev-api", str(db))
    ask, act, results, answer = session.turns[:4]
    assert shape(ask) == ("user", [("text", None)]) and ask.ts == "2026-06-01T07:00:00.123Z"
    assert ask.turn_uuid.startswith("conv-main:user:")
    assert act.turn_uuid == "m-1" and act.ts == "2026-06-01T07:00:02.500Z"
    assert [(b.tool_name, b.files, b.command) for b in act.blocks[1:]] == [
        ("fs_read", (FileTouch("/home/dev/api/app/health.py", "read"),), None),  # Directory reads no file
        ("execute_bash", (), "pytest tests/test_health.py -q"),
    ]
    assert shape(results) == ("tool", [("tool_result", "fs_read"), ("tool_result", "execute_bash")])
    assert results.blocks[1].exit_code == 1 and results.blocks[1].text == "1 failed"
    assert answer.blocks[0].text == "db.ping() raises when the pool is empty."
    writes = turn(session, "m-3").blocks
    assert [b.files for b in writes] == [(FileTouch("/home/dev/api/app/health.py", "edit"),),
                                         (FileTouch("/home/dev/api/CHANGES.md", "write"),)]


def test_amazon_q_store(tmp_path):
    db = BUILDER.build(tmp_path / "amazon-q" / "data.sqlite3", amazon_q=True)
    found = sessions_by_id(kiro, db)
    assert {cid: len(s.turns) for cid, s in found.items()} == BUILDER.EXPECTED_TURNS_AMAZON_Q
    assert found["conv-old"].cwd == "/home/dev/legacy"


def test_rewritten_rows_keep_turn_ids_through_growth_and_compaction(db):
    before = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(kiro, db)["conv-main"].turns}
    signature = {u.session_id: u.signature for u in kiro.discover(db)}["conv-main"]
    grown = [*BUILDER.MAIN_HISTORY, {"user": BUILDER.prompt(BUILDER.API, "And the docs?", "2026-06-01T09:05:00Z"),
                                     "assistant": BUILDER.response("m-5", "Documented in README.")}]
    BUILDER.set_history(db, "conv-main", grown, BUILDER.T0 + 300_000)
    assert {u.session_id: u.signature for u in kiro.discover(db)}["conv-main"] != signature
    after = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(kiro, db)["conv-main"].turns}
    assert {k: after[k] for k in before} == before and len(after) == len(before) + 2
    BUILDER.set_history(db, "conv-main", grown[2:], BUILDER.T0 + 400_000)  # /compact drops the oldest entries
    compacted = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(kiro, db)["conv-main"].turns}
    assert all(after[k] == v for k, v in compacted.items()) and len(compacted) == 6


def test_odd_rows_cost_only_themselves(db):
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO conversations_v2 VALUES ('/x', 'conv-bad', 'not json', 1, 2)")
        conn.execute("INSERT INTO conversations_v2 VALUES ('/x', 'conv-shapes', ?, 1, 3)", (json.dumps({"history": [
            7, {"user": {"content": {"Prompt": {"prompt": 5}}}, "assistant": {"ToolUse": {"tool_uses": "x"}}},
            {"user": {"content": {"Prompt": {"prompt": "still here"}}, "timestamp": "garbage"},
             "assistant": {"Response": {"message_id": "ok-1", "content": "fine"}}}]}),))
        conn.execute("INSERT INTO conversations_v2 VALUES ('/x', 'conv-bytes', CAST(? AS BLOB), 1, 4)",
                     (b'{"history": [{"user": {"content": {"Prompt": {"prompt": "caf\xe9"}}}}]}',))
    conn.close()
    found = sessions_by_id(kiro, db)
    assert found["conv-bad"].turns == [] and "not JSON" in found["conv-bad"].warnings[0].message
    shapes = found["conv-shapes"]
    assert_well_formed(shapes)
    assert [b.text for t in shapes.turns for b in t.blocks] == ["still here", "fine"]
    assert found["conv-bytes"].turns[0].blocks[0].text == "caf\ufffd"
    assert len(found["conv-main"].turns) == BUILDER.EXPECTED_TURNS["conv-main"]


def test_the_database_is_read_only_and_a_lock_is_a_read_error(db, monkeypatch):
    before = db.read_bytes()
    sessions_by_id(kiro, db)
    assert db.read_bytes() == before and not db.with_name(db.name + "-wal").exists()
    [unit] = [u for u in kiro.discover(db) if u.session_id == "conv-main"]
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            kiro.parse(unit)
        with pytest.raises(TraceReadError, match="locked"):
            list(kiro.discover(db))


@pytest.mark.parametrize("content", [b"SQLite format 3\x00" + b"\x07" * 5000, b"not a database" * 100])
def test_corrupt_or_foreign_database_is_a_read_error(tmp_path, content):
    path = tmp_path / "data.sqlite3"
    path.write_bytes(content)
    with pytest.raises(TraceReadError, match="cannot read"):
        list(kiro.discover(path))
    other = tmp_path / "other.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(TraceReadError, match="not a Kiro CLI database"):
        list(kiro.discover(other))


def test_default_roots(monkeypatch, tmp_path):
    monkeypatch.setenv("KIRO_HOME", str(tmp_path / "k"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert kiro.default_roots() == [tmp_path / "k" / "sessions" / "cli", tmp_path / "data" / "kiro-cli" / "data.sqlite3",
                                    tmp_path / "data" / "amazon-q" / "data.sqlite3"]


def test_parsed_sessions_chunk(db):
    chunks = [*chunk_session(sessions_by_id(kiro, db)["conv-main"]),
              *chunk_session(kiro.parse(SourceUnit("kiro_cli", SESSION_FILE, SID, "1")))]
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
    assert texts(sessions_by_id(kiro, db)["conv-other"]) == ["Which bundler do we use?", "Vite, configured in vite.config.ts."]
