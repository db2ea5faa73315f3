"""Goose: sessions.db and the legacy .jsonl sessions beside it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.goose import parser as goose
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import (AGENT_FIXTURES, assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                          locked_by_a_writer, sessions_by_id, shape)

FIXTURES = AGENT_FIXTURES / "goose"
MAIN = "20260528_1"


@pytest.fixture(autouse=True)
def no_goose_env(monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)


@pytest.fixture
def sessions_dir(isolated_env) -> Path:
    folder = isolated_env / ".local" / "share" / "goose" / "sessions"
    folder.mkdir(parents=True)
    fixture_module("agents/goose/make_goose_db.py").build(folder / "sessions.db")
    for legacy in FIXTURES.glob("*.jsonl"):
        shutil.copyfile(legacy, folder / legacy.name)
    return folder


def test_default_root_and_the_variables_that_move_it(isolated_env, monkeypatch):
    assert goose.default_roots() == [isolated_env / ".local" / "share" / "goose" / "sessions"]
    monkeypatch.setenv("XDG_DATA_HOME", str(isolated_env / "xdg"))
    assert goose.default_roots() == [isolated_env / "xdg" / "goose" / "sessions"]
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(isolated_env / "root"))
    assert goose.default_roots() == [isolated_env / "root" / "data" / "sessions"]
    monkeypatch.setenv("GOOSE_PATH_ROOT", "relative/root")  # Goose ignores a relative root
    assert goose.default_roots() == [isolated_env / "xdg" / "goose" / "sessions"]


def test_discovery_reads_each_session_once(sessions_dir):
    units = list(goose.discover(sessions_dir.parent))  # the data folder works as a root too
    assert [(u.session_id, u.path.name) for u in units] == [
        (MAIN, "sessions.db"), ("20260528_2", "sessions.db"), ("20250219_1", "20250219_1.jsonl")]
    assert [u.session_id for u in goose.discover(sessions_dir / "sessions.db")] == [MAIN, "20260528_2"]


def test_main_session_turns(sessions_dir):
    main = sessions_by_id(goose, sessions_dir)[MAIN]
    assert_well_formed(main)
    assert (main.cwd, main.workdir, main.is_subagent) == ("/home/dev/api", "-home-dev-api", False)
    assert [shape(t) for t in main.turns[:5]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "developer__shell"),
                       ("tool_use", "developer__text_editor")]),
        ("tool", [("tool_result", "developer__shell"), ("tool_result", "developer__text_editor")]),
        ("assistant", [("tool_use", "developer__text_editor"), ("tool_use", "developer__text_editor"),
                       ("tool_use", None)]),
        ("tool", [("tool_result", None), ("tool_result", "developer__text_editor")]),
    ]
    assert [t.ts for t in main.turns[:3]] == ["2026-05-28T20:26:40.000Z", "2026-05-28T20:26:45.000Z",
                                              "2026-05-28T20:26:49.000Z"]
    results = [b.text for b in main.turns[2].blocks]
    assert results == ["FAILED tests/test_upload.py::test_big - Timeout",
                       "def upload(stream):\n    return post(stream, timeout=1)"]  # new and legacy result shapes
    assert main.turns[4].blocks[0].text == "-32603: Tool not found"
    texts = [b.text for t in main.turns for b in t.blocks]
    assert not any(text.startswith("Summary of the conversation") for text in texts)  # agent-only
    assert not any("80% full" in text for text in texts)  # system notification
    assert [t.turn_uuid for t in main.turns][-3:] == [
        main.turns[-3].turn_uuid, main.turns[-3].turn_uuid + "#2", "msg_explicit"]
    assert main.turns[-3].turn_uuid.startswith(f"{MAIN}:1780000040:")


def test_provenance(sessions_dir):
    main = sessions_by_id(goose, sessions_dir)[MAIN]
    uses = {b.tool_use_id: b for t in main.turns for b in t.blocks if b.block_type == "tool_use"}
    assert uses["toolu_1"].command == "pytest tests/test_upload.py -x" and uses["toolu_1"].files == ()
    assert uses["toolu_2"].files == (FileTouch("/home/dev/api/upload.py", "read"),)
    assert uses["toolu_3"].files == (FileTouch("/home/dev/api/upload.py", "edit"),)
    assert uses["toolu_4"].files == (FileTouch("/home/dev/api/NOTES.md", "write"),)
    assert uses["toolu_5"].text == "-32602: could not parse the arguments"


def test_subagent_and_hidden_sessions(sessions_dir):
    found = sessions_by_id(goose, sessions_dir)
    assert "20260528_3" not in found
    assert found["20260528_2"].is_subagent is True
    assert [shape(t) for t in found["20260528_2"].turns] == [("user", [("text", None)]),
                                                            ("assistant", [("text", None)])]


def test_legacy_jsonl_session(sessions_dir):
    legacy = sessions_by_id(goose, sessions_dir)["20250219_1"]
    assert_well_formed(legacy)
    assert legacy.cwd == "/home/dev/old-cli"
    assert [shape(t) for t in legacy.turns] == [
        ("user", [("text", None)]), ("assistant", [("text", None), ("tool_use", "developer__shell")]),
        ("tool", [("tool_result", "developer__shell")])]
    assert legacy.turns[0].ts == "2025-02-19T21:20:00.000Z"


def test_a_legacy_file_and_its_database_import_give_the_same_turn_ids(isolated_env):
    """Goose copies legacy files into a new database: both forms of a session carry
    the same ids, so neither re-indexes the other."""
    folder = isolated_env / "g"
    folder.mkdir()
    legacy = shutil.copyfile(FIXTURES / "20250219_1.jsonl", folder / "20250219_1.jsonl")
    from_file = goose.parse(next(goose.discover(legacy)))
    db = folder / "sessions.db"
    conn = sqlite3.connect(db)
    conn.executescript(fixture_module("agents/goose/make_goose_db.py").SCHEMA)
    with conn:
        conn.execute("INSERT INTO sessions (id, working_dir) VALUES ('20250219_1', '/home/dev/old-cli')")
        for line in legacy.read_text().splitlines()[1:]:
            message = json.loads(line)
            conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES "
                         "('20250219_1', ?, ?, ?)", (message["role"], json.dumps(message["content"]),
                                                     message["created"]))
    conn.close()
    [unit] = goose.discover(db)
    assert [t.turn_uuid for t in goose.parse(unit).turns] == [t.turn_uuid for t in from_file.turns]


def test_a_replaced_conversation_keeps_turn_ids_and_a_new_message_adds_one(sessions_dir):
    db = sessions_dir / "sessions.db"
    before_unit = next(u for u in goose.discover(db) if u.session_id == MAIN)
    before = [t.turn_uuid for t in goose.parse(before_unit).turns]
    conn = sqlite3.connect(db)
    with conn:  # what replace_conversation does: delete every row, insert them again, then one more
        rows = conn.execute("SELECT message_id, role, content_json, created_timestamp, metadata_json FROM messages "
                            "WHERE session_id = ? ORDER BY id", (MAIN,)).fetchall()
        conn.execute("DELETE FROM messages WHERE session_id = ?", (MAIN,))
        for row in [*rows, (None, "assistant", json.dumps([{"type": "text", "text": "Committed."}]), 1780000060,
                            None)]:
            conn.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, "
                         "metadata_json) VALUES (?, ?, ?, ?, ?, ?)", (row[0], MAIN, *row[1:]))
    conn.close()
    after_unit = next(u for u in goose.discover(db) if u.session_id == MAIN)
    assert after_unit.signature != before_unit.signature
    after = [t.turn_uuid for t in goose.parse(after_unit).turns]
    assert after[:-1] == before and len(after) == len(before) + 1


def test_a_grown_legacy_file_changes_its_signature(sessions_dir):
    path = sessions_dir / "20250219_1.jsonl"
    [before] = goose.discover(path)
    with open(path, "a") as handle:
        handle.write(json.dumps({"role": "assistant", "created": 1740000010, "content": [
            {"type": "text", "text": "Ported."}]}) + "\n")
    [after] = goose.discover(path)
    assert after.signature != before.signature
    assert goose.parse(after).turns[-1].blocks[0].text == "Ported."


def test_bad_rows_cost_only_themselves(sessions_dir):
    db = sessions_dir / "sessions.db"
    conn = sqlite3.connect(db)
    with conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (MAIN,))]
        conn.execute("UPDATE messages SET content_json = 'not json' WHERE id = ?", (ids[0],))
        conn.execute("UPDATE messages SET content_json = '{\"type\": \"text\"}' WHERE id = ?", (ids[5],))
        conn.execute("UPDATE messages SET content_json = ? WHERE id = ?",
                     (b'[{"type":"text","text":"caf\xff"}]', ids[7]))
        conn.execute("UPDATE messages SET metadata_json = '[oops' WHERE id = ?", (ids[8],))
        conn.execute("UPDATE messages SET content_json = ? WHERE id = ?",
                     (json.dumps([{"type": "toolRequest", "id": 5, "toolCall": "yes"}, {"type": "text", "text": 3},
                                  {"type": "text", "text": "x" * 3_000_000}]), ids[9]))
    conn.close()
    main = sessions_by_id(goose, sessions_dir)[MAIN]
    assert_well_formed(main)
    assert [(w.line, w.message.split(":")[0]) for w in main.warnings] == [
        (ids[0], f"message {ids[0]}"), (ids[5], f"message {ids[5]}"), (ids[8], f"message {ids[8]}")]
    texts = [b.text for t in main.turns for b in t.blocks]
    assert "caf\ufffd" in texts and "x" * 3_000_000 in texts


def test_bad_legacy_lines_are_counted(sessions_dir):
    path = sessions_dir / "20250219_1.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([lines[0], b"{not json", b"[1]", *lines[1:], b'{"role": "user", "content": [']))
    legacy = goose.parse(next(goose.discover(path)))
    assert [w.line for w in legacy.warnings] == [2, 3, 7]
    assert len(legacy.turns) == 3


def test_unreadable_stores_are_read_errors(sessions_dir, monkeypatch, isolated_env):
    db = sessions_dir / "sessions.db"
    [unit] = [u for u in goose.discover(db) if u.session_id == "20260528_2"]
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            goose.parse(unit)
    assert_corrupt_database_is_a_read_error(goose, isolated_env / "bad" / "sessions.db", isolated_env / "bad")
    with pytest.raises(TraceReadError, match="cannot read"):
        goose.parse(SourceUnit("goose", sessions_dir / "gone.jsonl", "gone", "1:1"))


def test_a_parsed_session_chunks(sessions_dir):
    chunks = list(chunk_session(sessions_by_id(goose, sessions_dir)[MAIN]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
