"""Kimi CLI sessions (funes/agents/kimi/parser.py) over tests/fixtures/agents/kimi_cli, written in
the shapes kimi-cli 1.49 records (funes/agents/kimi/FORMAT.md): a session folder with its
context.jsonl and wire.jsonl, a subagent, a rotated context file and a pre-folder session file."""

from __future__ import annotations

import shutil

import pytest

from funes.agents.kimi import parser as kimi
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts

ROOT = FIXTURES / "agents" / "kimi_cli"
HASH = "c72527a0c7cc5b564daf6847cc85bea7"  # md5 of /home/dev/notes
SID = "3f1c9a52-7b1e-4c0d-9a8e-51d2c4b7e610"
LEGACY = "0d5e2c11-2222-4333-8444-555566667777"
SUBAGENT = f"{SID}-a1b2c3d4"
MAIN = ROOT / "sessions" / HASH / SID / "context.jsonl"


def test_discovery_finds_sessions_subagents_and_legacy_files_not_rotated_or_wire_files():
    units = {unit.session_id: unit for unit in kimi.discover(ROOT)}
    assert set(units) == {SID, LEGACY, SUBAGENT}
    assert units[SID].path == MAIN
    assert set(units) == {unit.session_id for unit in kimi.discover(ROOT / "sessions")}
    assert [unit.session_id for unit in kimi.discover(MAIN)] == [SID]


def test_recorded_session():
    session = sessions_by_id(kimi, ROOT)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("kimi_cli", "/home/dev/notes", "-home-dev-notes")
    assert [shape(t) for t in session.turns[:4]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "ReadFile"), ("tool_use", "Shell")]),
        ("tool", [("tool_result", "ReadFile")]),
        ("tool", [("tool_result", "Shell")]),
    ]
    ask, act, _, failed = session.turns[:4]
    assert (ask.turn_uuid, ask.parent_uuid, ask.ts) == (f"{SID}:L2", None, "2025-12-05T10:20:00.250Z")
    assert act.parent_uuid == ask.turn_uuid and act.ts == ask.ts  # a turn's replies share its TurnBegin time
    assert act.blocks[3].command == "pytest -q tests/test_loader.py"
    assert failed.blocks[0].tool_use_id == "tool_sh1" and failed.blocks[0].exit_code == 1
    assert "FAILED tests/test_loader.py::test_bom" in failed.blocks[0].text


def test_provenance_and_exit_codes():
    session = sessions_by_id(kimi, ROOT)[SID]
    calls = [b for t in session.turns for b in t.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("ReadFile", (FileTouch("/home/dev/notes/notes/loader.py", "read"),), None),
        ("Shell", (), "pytest -q tests/test_loader.py"),
        ("StrReplaceFile", (FileTouch("/home/dev/notes/notes/loader.py", "edit"),), None),
        ("WriteFile", (FileTouch("/home/dev/notes/CHANGELOG.md", "write"),), None),
        ("Shell", (), "pytest -q"),
    ]
    results = {b.tool_use_id: b.exit_code for t in session.turns for b in t.blocks if b.block_type == "tool_result"}
    assert results == {"tool_rd1": None, "tool_sh1": 1, "tool_ed1": None, "tool_wr1": None, "tool_sh2": 0}


def test_kimis_own_messages_are_skipped_and_the_second_turn_has_its_time():
    session = sessions_by_id(kimi, ROOT)[SID]
    joined = " ".join(texts(session))
    assert "CHECKPOINT" not in joined and "Plan mode is off" not in joined and "You are Kimi" not in joined
    assert "an older question that was cleared" not in joined  # context_1.jsonl: the rotated file
    ask = next(t for t in session.turns if t.blocks[0].text == "Now add a test for it.")
    assert ask.ts == "2025-12-05T10:21:35.750Z" and ask.turn_uuid == f"{SID}:L15"


def test_subagent_and_legacy_sessions():
    found = sessions_by_id(kimi, ROOT)
    agent = found[SUBAGENT]
    assert agent.is_subagent and agent.parent_session_id == SID and agent.cwd == "/home/dev/notes"
    assert [shape(t) for t in agent.turns] == [
        ("user", [("text", None)]), ("assistant", [("tool_use", "Grep")]),
        ("tool", [("tool_result", "Grep")]), ("assistant", [("text", None)])]
    legacy = found[LEGACY]
    assert [t.blocks[0].text for t in legacy.turns] == ["Set up the project.",
                                                        "Created pyproject.toml with a notes entry point."]
    assert legacy.cwd == "/home/dev/notes" and all(t.ts == "" for t in legacy.turns)


def test_appends_keep_turn_ids(tmp_path):
    lines = MAIN.read_bytes().splitlines(keepends=True)
    folder = tmp_path / "sessions" / HASH / SID
    folder.mkdir(parents=True)
    path = folder / "context.jsonl"
    full = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(kimi, ROOT)[SID].turns}
    for cut in range(1, len(lines)):
        path.write_bytes(b"".join(lines[:cut]))
        early = kimi.parse(SourceUnit("kimi_cli", path, SID, "1:1"))
        assert_well_formed(early)
        assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in early.turns)


def test_bad_input_costs_only_the_bad_lines(tmp_path):
    folder = tmp_path / SID
    shutil.copytree(MAIN.parent, folder)
    path = folder / "context.jsonl"
    good = texts(sessions_by_id(kimi, ROOT)[SID])
    with path.open("ab") as out:
        out.write(b"not json\n")
        out.write(b'{"role": "assistant", "content": 7, "tool_calls": [{"function": "x"}]}\n')
        out.write(b'{"role": "tool", "content": [{"type": "text", "text": 5}]}\n')
        out.write(b'{"role": "user", "content": "bad \xff"}\n')
        out.write(b'{"role": "user", "content": "cut')
    with (folder / "wire.jsonl").open("ab") as out:
        out.write(b'{"timestamp": "soon", "message": {"type": "TurnBegin"}}\n{"message": "TurnBegin"}\n')
    session = kimi.parse(SourceUnit("kimi_cli", path, SID, "1:1"))
    assert_well_formed(session)
    assert texts(session)[:len(good)] == good
    assert session.turns[-1].blocks[0].text == "bad \ufffd" and session.turns[-1].ts == ""
    n = len(MAIN.read_bytes().splitlines())
    assert [(w.line, w.message) for w in session.warnings] == [
        (n + 1, "not JSON"), (n + 5, "partial last line (still being written?)")]
    with pytest.raises(TraceReadError, match="cannot read"):
        kimi.parse(SourceUnit("kimi_cli", tmp_path / "gone" / "context.jsonl", "gone", "1:1"))


def test_default_roots_follow_kimi_share_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    assert kimi.default_roots() == [tmp_path / "share" / "sessions"]
    monkeypatch.delenv("KIMI_SHARE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kimi.default_roots() == [tmp_path / ".kimi" / "sessions"]


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(kimi, ROOT)[SID]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
