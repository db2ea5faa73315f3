"""GitHub Copilot CLI sessions (funes/agents/copilot/parser.py) over tests/fixtures/agents/copilot_cli,
whose main session was recorded by Copilot CLI 1.0.102 (BYOK, a scripted local model,
resumed once) and then extended with the events the format has
(funes/agents/copilot/FORMAT.md)."""

from __future__ import annotations

import shutil

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.copilot import parser as copilot
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts, turn

ROOT = FIXTURES / "agents" / "copilot_cli"
SID = "4f1d2e93-8f48-4961-abc9-53f422e9159f"
MAIN = ROOT / "session-state" / SID / "events.jsonl"
FLAT = "7e1e0000-aaaa-4bbb-8ccc-ddddeeeeffff"
NO_START = "5a5a5a5a-1111-4222-8333-999999999999"


def e(n: int) -> str:
    return f"c0000000-0000-4000-8000-{n:012d}"


def test_discovery_of_session_folders_and_the_flat_layout():
    units = {unit.session_id: unit for unit in copilot.discover(ROOT)}
    assert set(units) == {SID, FLAT, NO_START}
    assert units[SID].path == MAIN
    assert {u.session_id for u in copilot.discover(ROOT / "session-state")} == set(units)
    assert [u.session_id for u in copilot.discover(MAIN.parent)] == [SID]  # a session folder
    assert [u.session_id for u in copilot.discover(MAIN)] == [SID]


def test_recorded_session():
    session = sessions_by_id(copilot, ROOT)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir, session.branch, session.repo) == (
        "copilot_cli", "/home/dev/cop", "-home-dev-cop", "topic/copilot", "acme/cop")  # the first context wins
    assert [shape(t) for t in session.turns[:4]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "bash")]),
        ("tool", [("tool_result", "bash")]),
        ("assistant", [("text", None)]),
    ]
    ask, act, result, _ = session.turns[:4]
    assert (ask.turn_uuid, ask.ts) == ("1c30fc27-ad12-40f4-84ee-2d4a8f5a62e0", "2026-12-01T10:18:15.310Z")
    assert ask.blocks[0].text == "Write a note file please"  # not the transformedContent with <current_datetime>
    assert act.blocks[2].command == "echo funes-fixture > note.txt && cat note.txt"
    assert result.blocks[0].tool_use_id == act.blocks[2].tool_use_id == "call_1796120295"
    assert result.blocks[0].exit_code == 0 and result.parent_uuid == act.turn_uuid
    # the resumed prompt: same reasoning text as the first response, kept for both
    assert [b.block_type for b in session.turns[5].blocks] == ["thinking", "text", "tool_use"]


def test_tool_provenance_including_apply_patch_and_exit_codes():
    session = sessions_by_id(copilot, ROOT)[SID]
    calls = [b for b in turn(session, e(5)).blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("view", (FileTouch("/home/dev/cop/src/util.py", "read"),), None),
        ("edit", (FileTouch("/home/dev/cop/src/util.py", "edit"),), None),
        ("create", (FileTouch("/home/dev/cop/src/names.py", "write"),), None),
        ("apply_patch", (FileTouch("src/app.py", "edit"), FileTouch("src/old_util.py", "delete")), None),
        ("bash", (), "pytest -q tests/test_util.py"),
    ]
    assert calls[3].text.startswith("*** Begin Patch")  # a custom tool's raw input, verbatim
    assert turn(session, e(11)).blocks[0].exit_code == 2
    failed = turn(session, e(10)).blocks[0]
    assert (failed.tool_name, failed.text) == ("apply_patch", "Patch failed: src/old_util.py not found")


def test_reasoning_once_ephemeral_and_bookkeeping_events_skipped():
    session = sessions_by_id(copilot, ROOT)[SID]
    ids = [t.turn_uuid for t in session.turns]
    assert shape(turn(session, e(3))) == ("assistant", [("thinking", None)])
    assert [b.block_type for b in turn(session, e(5)).blocks][0] == "text"  # its reasoningText repeats e(3)
    assert not set(ids) & {e(1), e(4), e(6), e(12), e(14), e(15)}  # resume, delta, start, subagent, compaction, rewind
    assert "Summary: helper renamed" not in " ".join(texts(session))
    assert turn(session, e(13)).blocks[0].text == "The tests live in test/, not tests/."  # a subagent's message
    assert ids[-1] == e(16)


def test_older_layouts_and_workspace_yaml():
    found = sessions_by_id(copilot, ROOT)
    assert found[FLAT].cwd == "/home/dev/old" and [t.role for t in found[FLAT].turns] == ["user", "assistant"]
    bare = found[NO_START]  # no session.start: cwd, branch and repo from workspace.yaml
    assert (bare.cwd, bare.branch, bare.repo) == ("/home/dev/migrate", "main", "acme/migrate")


def test_appends_and_rewind_rewrites_keep_turn_ids(tmp_path):
    lines = MAIN.read_bytes().splitlines(keepends=True)
    path = tmp_path / SID / "events.jsonl"
    path.parent.mkdir()
    full = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(copilot, ROOT)[SID].turns}
    for cut in range(1, len(lines) + 1):
        path.write_bytes(b"".join(lines[:cut]))
        early = copilot.parse(SourceUnit("copilot_cli", path, SID, "1:1"))
        assert_well_formed(early)
        assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in early.turns)
    # /rewind rewrites the file with the lines before the rewind point, then appends
    kept = [line for line in lines if e(5).encode() not in line]
    path.write_bytes(b"".join(kept[:-3]) + lines[-1])
    rewound = copilot.parse(SourceUnit("copilot_cli", path, SID, "1:1"))
    assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in rewound.turns)


def test_bad_input_costs_only_the_bad_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copyfile(MAIN, path)
    good = texts(sessions_by_id(copilot, ROOT)[SID])
    with path.open("ab") as out:
        out.write(b"\x00\x01 not json\n")
        out.write(b'{"type": "assistant.message", "data": "x", "id": "w1"}\n')
        out.write(b'{"type": "assistant.message", "data": {"content": 7, "toolRequests": {"a": 1}}, "id": "w2"}\n')
        out.write(b'{"type": "tool.execution_complete", "data": {"toolCallId": 5, "result": [1]}, "id": "w3"}\n')
        out.write(b'{"type": "user.message", "data": {"content": "non-UTF-8 \xfe"}, "id": "w4"}\n')
        out.write(b'{"type": "user.message", "data": {"content": "half')
    session = copilot.parse(SourceUnit("copilot_cli", path, SID, "1:1"))
    assert_well_formed(session)
    assert texts(session)[:len(good)] == good
    assert turn(session, "w4").blocks[0].text == "non-UTF-8 \ufffd"
    n = len(MAIN.read_bytes().splitlines())
    assert [(w.line, w.message) for w in session.warnings] == [
        (n + 1, "not JSON"), (n + 6, "partial last line (still being written?)")]
    with pytest.raises(TraceReadError, match="cannot read"):
        copilot.parse(SourceUnit("copilot_cli", tmp_path / "gone" / "events.jsonl", "gone", "1:1"))


def test_default_roots_follow_copilot_home_and_the_legacy_xdg_state(monkeypatch, tmp_path):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "c"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert copilot.default_roots() == [tmp_path / "c" / "session-state"]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert copilot.default_roots() == [tmp_path / "c" / "session-state", tmp_path / "state" / ".copilot" / "session-state"]


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(copilot, ROOT)[SID]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
