"""Auggie sessions (funes/agents/auggie/parser.py) over tests/fixtures/agents/auggie, written in the
shapes @augmentcode/auggie 0.36 saves (funes/agents/auggie/FORMAT.md): one JSON document per
session whose chatHistory holds the exchanges, and a backup file that is not a session."""

from __future__ import annotations

import json

import pytest

from funes.agents.auggie import parser as auggie
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts, turn

ROOT = FIXTURES / "agents" / "auggie"
SID = "5b7d2e90-4c1a-4f3b-9e8d-0a1b2c3d4e5f"
OTHER = "9e8d7c6b-5a49-4382-8171-605f4e3d2c1b"
MAIN = ROOT / "sessions" / f"{SID}.json"


def r(n: int, side: str) -> str:
    return f"1f0a9c3e-{n:04d}-4000-8000-{n:012d}:{side}"


def test_discovery_skips_backups():
    units = {unit.session_id: unit for unit in auggie.discover(ROOT)}
    assert set(units) == {SID, OTHER}
    assert units[SID].path == MAIN
    assert set(units) == {unit.session_id for unit in auggie.discover(ROOT / "sessions")}
    assert [unit.session_id for unit in auggie.discover(MAIN)] == [SID]


def test_recorded_session():
    session = sessions_by_id(auggie, ROOT)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("auggie", "/home/dev/notes", "-home-dev-notes")
    assert [shape(t) for t in session.turns[:4]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "view"), ("tool_use", "launch-process")]),
        ("tool", [("tool_result", "view"), ("tool_result", "launch-process")]),
        ("assistant", [("tool_use", "str-replace-editor"), ("tool_use", "save-file"), ("tool_use", "remove-files")]),
    ]
    ask, act, results, _ = session.turns[:4]
    assert (ask.turn_uuid, ask.parent_uuid, ask.ts) == (r(1, "request"), None, "2025-12-05T10:20:14.512Z")
    assert act.turn_uuid == r(1, "response") and act.parent_uuid == ask.turn_uuid and act.ts == ask.ts
    assert results.blocks[1].tool_use_id == "toolu_l1" and results.blocks[1].exit_code == 1
    assert act.blocks[3].command == "pytest -q tests/test_loader.py"


def test_provenance():
    session = sessions_by_id(auggie, ROOT)[SID]
    calls = [b for t in session.turns for b in t.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files) for b in calls] == [
        ("view", (FileTouch("notes/loader.py", "read"),)),
        ("launch-process", ()),
        ("str-replace-editor", (FileTouch("notes/loader.py", "edit"),)),
        ("save-file", (FileTouch("CHANGELOG.md", "write"),)),
        ("remove-files", (FileTouch("notes/loader_old.py", "delete"),)),
    ]


def test_history_summaries_are_skipped_and_plain_exchanges_read():
    found = sessions_by_id(auggie, ROOT)
    session = found[SID]
    assert "Summary of the conversation" not in " ".join(texts(session))
    assert turn(session, r(5, "request")).parent_uuid == r(3, "response")
    assert turn(session, r(5, "response")).blocks[0].text.startswith("Added tests/test_loader.py")  # response_text
    other = found[OTHER]
    assert [t.blocks[0].text for t in other.turns] == ["Set up the project.",
                                                       "Created pyproject.toml with a notes entry point."]
    assert other.cwd == ""


def test_a_rewritten_file_keeps_turn_ids(tmp_path):
    document = json.loads(MAIN.read_text())
    full = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(auggie, ROOT)[SID].turns}
    path = tmp_path / f"{SID}.json"
    for cut in range(len(document["chatHistory"])):
        path.write_text(json.dumps({**document, "chatHistory": document["chatHistory"][:cut]}))
        early = auggie.parse(SourceUnit("auggie", path, SID, "1:1"))
        assert_well_formed(early)
        assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in early.turns)


def test_bad_input_costs_only_the_bad_items(tmp_path):
    document = json.loads(MAIN.read_text())
    good = texts(sessions_by_id(auggie, ROOT)[SID])
    document["chatHistory"] += [7, {"exchange": {"request_nodes": "x", "response_nodes": [{"type": 5, "tool_use": 3}],
                                                 "request_message": ["a"]}},
                                {"exchange": {"request_message": "bad \udcff", "response_nodes": [{"type": 0}]},
                                 "finishedAt": "soon"}]
    path = tmp_path / f"{SID}.json"
    path.write_text(json.dumps(document))
    session = auggie.parse(SourceUnit("auggie", path, SID, "1:1"))
    assert_well_formed(session)
    assert texts(session)[:len(good)] == good
    assert session.turns[-1].ts == "" and session.turns[-1].blocks[0].text.startswith("bad ")
    assert [w.message for w in session.warnings] == ["messages[5]: not an object"]
    path.write_text(MAIN.read_text()[:3000])
    cut = auggie.parse(SourceUnit("auggie", path, SID, "1:1"))
    assert "truncated JSON" in cut.warnings[0].message
    with pytest.raises(TraceReadError, match="cannot read"):
        auggie.parse(SourceUnit("auggie", tmp_path / "gone.json", "gone", "1:1"))


def test_default_roots_are_under_the_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert auggie.default_roots() == [tmp_path / ".augment" / "sessions"]


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(auggie, ROOT)[SID]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
