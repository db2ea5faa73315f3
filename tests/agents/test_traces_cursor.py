"""Cursor: the agent's JSONL transcripts and the IDE's state.vscdb key-value store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
import funes.agents.cursor as cursor_agent
from funes.agents.cursor import parser as cursor
from funes.traces.model import FileTouch
from trace_helpers import (AGENT_FIXTURES, assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                          locked_by_a_writer, sessions_by_id, shape)

builder = fixture_module("agents/cursor/make_cursor_vscdb.py")
PROJECTS = AGENT_FIXTURES / "cursor" / "projects"
MAIN = "5b2f7c1e-9a0d-4c3b-8e21-6f4a1d2c3b10"
CHILD = "a17e4d2c-3f6b-4e8a-9c10-2b5d7e9f1a33"
FLAT = "0c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f"


@pytest.fixture(autouse=True)
def linux_paths(monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setattr(cursor_agent.sys, "platform", "linux")


@pytest.fixture
def home(isolated_env) -> Path:
    shutil.copytree(PROJECTS, isolated_env / ".cursor" / "projects")
    builder.build(isolated_env / ".config" / "Cursor" / "User")
    return isolated_env


def test_default_roots_per_platform(isolated_env, monkeypatch):
    assert cursor.default_roots() == [isolated_env / ".config" / "Cursor" / "User", isolated_env / ".cursor" / "projects"]
    monkeypatch.setattr(cursor_agent.sys, "platform", "darwin")
    assert cursor.default_roots()[0] == isolated_env / "Library" / "Application Support" / "Cursor" / "User"


def test_discovery_of_both_stores(home):
    ide, cli = cursor.default_roots()
    assert [u.session_id for u in cursor.discover(ide)] == [builder.MODERN, builder.LEGACY]
    assert sorted(u.session_id for u in cursor.discover(cli)) == sorted([MAIN, CHILD, FLAT])
    one = next(cursor.discover(cli / "home-dev-notes" / "agent-transcripts" / MAIN / f"{MAIN}.jsonl"))
    assert one.session_id == MAIN


def test_transcript_turns_and_provenance(home):
    main = sessions_by_id(cursor, home / ".cursor" / "projects")[MAIN]
    assert_well_formed(main)
    assert [t.turn_uuid for t in main.turns] == [f"{MAIN}:{i}" for i in (0, 1, 3, 4, 5)]  # line 2: turn_ended
    assert [shape(t) for t in main.turns[:3]] == [
        ("user", [("text", None)]),
        ("assistant", [("text", None), ("tool_use", "Shell"), ("tool_use", "Read")]),
        ("assistant", [("text", None), ("tool_use", "StrReplace"), ("tool_use", "Subagent")]),
    ]
    first = main.turns[0]
    assert first.blocks[0].text == "Why does the markdown export drop footnotes?"  # tags stripped
    assert first.ts == "2026-05-28T20:26:40.000Z" and main.turns[1].ts == ""  # no times but the tag
    assert main.cwd == "/home/dev/notes" and main.workdir == "-home-dev-notes"  # from the Shell call
    uses = [b for t in main.turns for b in t.blocks if b.block_type == "tool_use"]
    assert uses[0].command == "rg -n footnote src/export"
    assert [b.files for b in uses[1:3]] == [(FileTouch("/home/dev/notes/src/export/markdown.ts", "read"),),
                                            (FileTouch("/home/dev/notes/src/export/markdown.ts", "edit"),)]
    assert uses[-1].files == (FileTouch("/home/dev/notes/src/export/legacy.ts", "delete"),)


def test_subagent_and_flat_transcripts(home):
    found = sessions_by_id(cursor, home / ".cursor" / "projects")
    child = found[CHILD]
    assert (child.is_subagent, child.parent_session_id) == (True, MAIN)
    flat = found[FLAT]
    assert flat.turns[0].blocks[0].text == "rename the notes table"  # string content, still tagged
    assert flat.workdir == "-home-dev-notes"  # no shell call: the project folder's name


def test_an_appended_transcript_keeps_old_ids(home):
    path = home / ".cursor" / "projects" / "home-dev-notes" / "agent-transcripts" / f"{FLAT}.jsonl"
    [before] = cursor.discover(path)
    old = [t.turn_uuid for t in cursor.parse(before).turns]
    with open(path, "a") as handle:
        handle.write(json.dumps({"role": "user", "message": {"content": [
            {"type": "text", "text": "<user_query>and the index</user_query>"}]}}) + "\n")
    [after] = cursor.discover(path)
    assert after.signature != before.signature
    assert [t.turn_uuid for t in cursor.parse(after).turns] == [*old, f"{FLAT}:2"]


def test_ide_composer(home):
    modern = sessions_by_id(cursor, home / ".config" / "Cursor" / "User")[builder.MODERN]
    assert_well_formed(modern)
    assert [t.turn_uuid for t in modern.turns] == ["b1", "b2", "b3", "b3:result", "b4", "b4:result", "b5", "b6"]
    assert [shape(t) for t in modern.turns[1:4]] == [
        ("assistant", [("thinking", None), ("text", None)]),
        ("assistant", [("tool_use", "read_file")]),
        ("tool", [("tool_result", "read_file")]),
    ]
    assert modern.turns[1].ts == "2026-05-28T20:26:45.120Z"
    assert modern.cwd == builder.FOLDER and modern.workdir == "-home-dev-atlas-project"
    b3, b4, b5 = modern.turns[2].blocks[0], modern.turns[4].blocks[0], modern.turns[6].blocks[1]
    assert b3.files == (FileTouch("src/cache/key.ts", "read"),) and b3.tool_use_id == "toolu_r1"
    assert b4.command == "npm test -- cache"
    assert b5.files == (FileTouch("src/cache/key.ts", "edit"),)
    assert "b5:result" not in [t.turn_uuid for t in modern.turns]  # the call has no result yet


def test_ide_legacy_inline_composer(home):
    legacy = sessions_by_id(cursor, home / ".config" / "Cursor" / "User")[builder.LEGACY]
    assert [(t.turn_uuid, t.role) for t in legacy.turns] == [("l1", "user"), ("l2", "assistant")]
    assert legacy.cwd == ""


def test_a_rewritten_bubble_changes_the_signature_and_keeps_ids(home):
    db = home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    before = next(u for u in cursor.discover(db) if u.session_id == builder.MODERN)
    conn = sqlite3.connect(db)
    with conn:  # Cursor writes a bubble again as it streams: the key's row is replaced
        conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{builder.MODERN}:b6", json.dumps(
            {"type": 1, "bubbleId": "b6", "text": "Ship it, and tag a release"})))
    conn.close()
    after = next(u for u in cursor.discover(db) if u.session_id == builder.MODERN)
    assert after.signature != before.signature
    session = cursor.parse(after)
    assert session.turns[-1].turn_uuid == "b6" and session.turns[-1].blocks[0].text == "Ship it, and tag a release"


def test_bad_values_cost_only_themselves(home):
    db = home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE cursorDiskKV SET value = 'not json' WHERE key = ?", (f"bubbleId:{builder.MODERN}:b2",))
        conn.execute("UPDATE cursorDiskKV SET value = '[1]' WHERE key = ?", (f"bubbleId:{builder.MODERN}:b4",))
        conn.execute("UPDATE cursorDiskKV SET value = ? WHERE key = ?",
                     (b'{"type":1,"text":"caf\xff"}', f"bubbleId:{builder.MODERN}:b6"))
        conn.execute("UPDATE cursorDiskKV SET value = ? WHERE key = ?", (json.dumps(
            {"type": 2, "text": 5, "thinking": "x", "toolFormerData": {"name": ["x"], "rawArgs": 7}}),
            f"bubbleId:{builder.MODERN}:b5"))
        conn.execute("UPDATE cursorDiskKV SET value = 'garbage' WHERE key = ?", (f"composerData:{builder.LEGACY}",))
    conn.close()
    found = sessions_by_id(cursor, db)
    modern = found[builder.MODERN]
    assert_well_formed(modern)
    assert [w.message.split(":")[0] for w in modern.warnings] == ["bubble b2", "bubble b4"]
    assert all(w.line > 0 for w in modern.warnings)
    assert modern.turns[-1].blocks[0].text == "caf\ufffd"
    assert found[builder.LEGACY].turns == [] and "not JSON" in found[builder.LEGACY].warnings[0].message


def test_bad_transcript_lines_are_counted(home):
    path = home / ".cursor" / "projects" / "home-dev-notes" / "agent-transcripts" / f"{FLAT}.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([b"{oops", lines[0], b'{"role": "assistant", "message": {"content": 5}}',
                                 lines[1], b'{"role": "user", "message": {"content": [{"type": "text", "te']))
    session = cursor.parse(next(cursor.discover(path)))
    assert [w.line for w in session.warnings] == [1, 5]
    assert [t.role for t in session.turns] == ["user", "assistant"]


def test_unreadable_stores_are_read_errors(home, monkeypatch, isolated_env):
    db = home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    unit = next(cursor.discover(db))
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            cursor.parse(unit)
    assert_corrupt_database_is_a_read_error(cursor, isolated_env / "broken" / "globalStorage" / "state.vscdb",
                                            isolated_env / "broken")


def test_parsed_sessions_chunk(home):
    chunks = [c for s in sessions_by_id(cursor, home / ".config" / "Cursor" / "User").values() for c in chunk_session(s)]
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}


def test_the_cursor_home_is_a_root_too(home):
    assert sorted(u.session_id for u in cursor.discover(home / ".cursor")) == sorted([MAIN, CHILD, FLAT])
