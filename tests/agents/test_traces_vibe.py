"""Mistral Vibe session logs (funes/agents/vibe/parser.py) over tests/fixtures/agents/mistral_vibe,
written in the shapes mistral-vibe 2.18 records (funes/agents/vibe/FORMAT.md): a session folder
with messages.jsonl and meta.json, and a subagent's folder under its agents/."""

from __future__ import annotations

import shutil

import pytest

from funes.agents.vibe import parser as vibe
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts, turn

ROOT = FIXTURES / "agents" / "mistral_vibe" / "logs" / "session"
SID = "session_20251205_101500_7c0e5a11"
SUB = "explore_20251205_101630_e2f4a6b8"
MAIN = ROOT / SID / "messages.jsonl"


def test_discovery_finds_sessions_and_subagents():
    units = {unit.session_id: unit for unit in vibe.discover(ROOT)}
    assert set(units) == {SID, SUB}
    assert units[SID].path == MAIN
    assert [unit.session_id for unit in vibe.discover(MAIN)] == [SID]


def test_recorded_session():
    session = sessions_by_id(vibe, ROOT)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir, session.branch) == (
        "mistral_vibe", "/home/dev/notes", "-home-dev-notes", "fix/bom")
    assert [shape(t) for t in session.turns[:4]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read"), ("tool_use", "bash")]),
        ("tool", [("tool_result", "read")]),
        ("tool", [("tool_result", "bash")]),
    ]
    ask, act, _, failed = session.turns[:4]
    assert (ask.turn_uuid, ask.parent_uuid, ask.ts) == ("m-01", None, "2025-12-05T10:15:00.123Z")
    assert act.parent_uuid == "m-01" and failed.turn_uuid == f"{SID}:L3"  # tool messages have no message_id
    assert failed.blocks[0].tool_use_id == "call_b1" and failed.blocks[0].exit_code == 1
    assert all(t.ts == ask.ts for t in session.turns)  # messages carry no time: the session's start


def test_provenance_and_exit_codes():
    session = sessions_by_id(vibe, ROOT)[SID]
    calls = [b for t in session.turns for b in t.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("read", (FileTouch("/home/dev/notes/notes/loader.py", "read"),), None),
        ("bash", (), "pytest -q tests/test_loader.py"),
        ("edit", (FileTouch("/home/dev/notes/notes/loader.py", "edit"),), None),
        ("write_file", (FileTouch("/home/dev/notes/CHANGELOG.md", "write"),), None),
        ("bash", (), "pytest -q"),
        ("task", (), None),
    ]
    results = {b.tool_use_id: b.exit_code for t in session.turns for b in t.blocks if b.block_type == "tool_result"}
    assert results == {"call_r1": None, "call_b1": 1, "call_e1": None, "call_w1": None, "call_b2": 0,
                       "call_t1": None}


def test_injected_messages_are_skipped():
    session = sessions_by_id(vibe, ROOT)[SID]
    assert "80% of your context window" not in " ".join(texts(session))
    assert turn(session, "m-13").parent_uuid == "m-11"


def test_subagent_session():
    agent = sessions_by_id(vibe, ROOT)[SUB]
    assert agent.is_subagent and agent.parent_session_id == SID and agent.cwd == "/home/dev/notes"
    assert [shape(t) for t in agent.turns] == [
        ("user", [("text", None)]), ("assistant", [("tool_use", "grep")]),
        ("tool", [("tool_result", "grep")]), ("assistant", [("text", None)])]


def test_appends_keep_turn_ids(tmp_path):
    lines = MAIN.read_bytes().splitlines(keepends=True)
    path = tmp_path / SID / "messages.jsonl"
    path.parent.mkdir()
    full = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(vibe, ROOT)[SID].turns}
    for cut in range(1, len(lines)):
        path.write_bytes(b"".join(lines[:cut]))
        early = vibe.parse(SourceUnit("mistral_vibe", path, SID, "1:1"))
        assert_well_formed(early)
        assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in early.turns)


def test_bad_input_costs_only_the_bad_lines(tmp_path):
    folder = tmp_path / SID
    shutil.copytree(MAIN.parent, folder, ignore=shutil.ignore_patterns("agents"))
    path = folder / "messages.jsonl"
    good = texts(sessions_by_id(vibe, ROOT)[SID])
    with path.open("ab") as out:
        out.write(b"not json\n")
        out.write(b'{"role": "assistant", "content": 7, "tool_calls": [{"function": "x"}]}\n')
        out.write(b'{"role": "tool", "name": "bash", "content": ["returncode: 0"]}\n')
        out.write(b'{"role": "user", "content": "bad \xff", "message_id": "w1"}\n')
        out.write(b'{"role": "user", "content": "cut')
    session = vibe.parse(SourceUnit("mistral_vibe", path, SID, "1:1"))
    assert_well_formed(session)
    assert texts(session)[:len(good)] == good
    assert turn(session, "w1").blocks[0].text == "bad \ufffd"
    n = len(MAIN.read_bytes().splitlines())
    assert [(w.line, w.message) for w in session.warnings] == [
        (n + 1, "not JSON"), (n + 5, "partial last line (still being written?)")]
    (folder / "meta.json").write_text("{not json")
    assert vibe.parse(SourceUnit("mistral_vibe", path, SID, "1:1")).cwd == ""  # a broken meta.json costs the cwd
    with pytest.raises(TraceReadError, match="cannot read"):
        vibe.parse(SourceUnit("mistral_vibe", tmp_path / "gone" / "messages.jsonl", "gone", "1:1"))


def test_default_roots_follow_vibe_home(monkeypatch, tmp_path):
    monkeypatch.setenv("VIBE_HOME", str(tmp_path / "vh"))
    assert vibe.default_roots() == [tmp_path / "vh" / "logs" / "session"]


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(vibe, ROOT)[SID]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
