"""Qwen Code chats (funes/agents/qwen/parser.py) over tests/fixtures/agents/qwen_code, whose main
session was recorded by Qwen Code 0.24.4 against a scripted model (resumed once with -c)
and then extended with the records the format has (funes/agents/qwen/FORMAT.md)."""

from __future__ import annotations

import shutil

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.qwen import parser as qwen
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts, turn

ROOT = FIXTURES / "agents" / "qwen_code"
PROJECT = ROOT / "projects" / "-home-dev-notes"
SID = "f402a6ae-a31c-4946-8d72-df92cbdc035d"
MAIN = PROJECT / "chats" / f"{SID}.jsonl"
ARCHIVED = "0b5c0000-1111-4222-8333-444455556666"
AGENT = "agent-explore-7f3c"


def u(n: int) -> str:
    return f"9a000000-0000-4000-8000-{n:012d}"


def test_discovery_main_archived_and_subagent_sessions():
    units = {unit.session_id: unit for unit in qwen.discover(ROOT)}
    assert set(units) == {SID, ARCHIVED, AGENT}  # .jsonl.stream and .meta.json are not sessions
    assert units[SID].path == MAIN
    assert set(units) == {unit.session_id for unit in qwen.discover(ROOT / "projects")}
    assert [unit.session_id for unit in qwen.discover(MAIN)] == [SID]


def test_recorded_session():
    session = sessions_by_id(qwen, ROOT)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir, session.branch) == (
        "qwen_code", "/home/dev/notes", "-home-dev-notes", "feature/notes")
    assert [shape(t) for t in session.turns[:4]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "run_shell_command")]),
        ("tool", [("tool_result", "run_shell_command")]),
        ("assistant", [("text", None)]),
    ]
    ask, act, result, _ = session.turns[:4]
    assert (ask.turn_uuid, ask.parent_uuid, ask.ts) == ("844b5c6c-12f9-46b1-a83d-682b4c761113", None,
                                                        "2026-12-01T10:15:56.215Z")
    assert act.parent_uuid == ask.turn_uuid  # through the telemetry records in between
    assert act.blocks[2].command == "echo funes-fixture > note.txt && cat note.txt"
    assert result.blocks[0].tool_use_id == act.blocks[2].tool_use_id == "call_1796120159"
    assert result.blocks[0].exit_code == 0 and "Output: funes-fixture" in result.blocks[0].text
    assert session.turns[4].blocks[0].text == "Thanks, and now?"  # the -c resume appended to the same file


def test_provenance_of_edits_writes_notebooks_reads_and_commands():
    session = sessions_by_id(qwen, ROOT)[SID]
    calls = [b for b in turn(session, u(2)).blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("edit", (FileTouch("/home/dev/notes/notes.py", "edit"),), None),
        ("write_file", (FileTouch("/home/dev/notes/CHANGELOG.md", "write"),), None),
        ("notebook_edit", (FileTouch("/home/dev/notes/explore.ipynb", "edit"),), None),
        ("read_file", (FileTouch("/home/dev/notes/notes.py", "read"),), None),
        ("run_shell_command", (), "pytest -q"),
    ]
    assert turn(session, u(7)).blocks[0].exit_code == 1  # from toolCallResult.resultDisplay
    assert turn(session, u(5)).blocks[0].tool_name == "notebook_edit"


def test_system_and_synthetic_records_are_skipped_and_rewinds_branch():
    session = sessions_by_id(qwen, ROOT)[SID]
    ids = {t.turn_uuid for t in session.turns}
    assert not ids & {u(8), u(9), u(10), u(13)}  # /compress, compression checkpoint, notification, rewind
    assert "Summary: the typo was fixed" not in " ".join(texts(session))
    assert turn(session, u(11)).blocks[0].text == "Why does the test still fail?"  # the reminder part dropped
    assert turn(session, u(12)).parent_uuid == u(11)
    assert turn(session, u(14)).parent_uuid == u(7)  # the rewound branch continues from the tool result
    assert turn(session, u(15)).blocks[0].text == "Updated tests/test_notes.py."


def test_subagent_and_archived_sessions():
    found = sessions_by_id(qwen, ROOT)
    agent = found[AGENT]
    assert agent.is_subagent and agent.parent_session_id == SID and agent.branch == "feature/notes"
    assert [shape(t) for t in agent.turns] == [
        ("user", [("text", None)]), ("assistant", [("tool_use", "grep_search")]),
        ("tool", [("tool_result", "grep_search")]), ("assistant", [("text", None)])]
    archived = found[ARCHIVED]
    assert [t.blocks[0].text for t in archived.turns] == ["Set up the project.", "Created pyproject.toml."]
    assert archived.branch is None and not archived.is_subagent


def test_appends_keep_turn_ids(tmp_path):
    lines = MAIN.read_bytes().splitlines(keepends=True)
    path = tmp_path / f"{SID}.jsonl"
    full = {t.turn_uuid: [b.text for b in t.blocks] for t in sessions_by_id(qwen, ROOT)[SID].turns}
    for cut in range(1, len(lines)):
        path.write_bytes(b"".join(lines[:cut]))
        early = qwen.parse(SourceUnit("qwen_code", path, SID, "1:1"))
        assert_well_formed(early)
        assert all(full[t.turn_uuid] == [b.text for b in t.blocks] for t in early.turns)


def test_bad_input_costs_only_the_bad_lines(tmp_path):
    path = tmp_path / f"{SID}.jsonl"
    shutil.copyfile(MAIN, path)
    good = texts(sessions_by_id(qwen, ROOT)[SID])
    with path.open("ab") as out:
        out.write(b"not json\n")
        out.write(b'{"uuid": "w1", "type": "assistant", "message": {"parts": "x"}}\n')
        out.write(b'{"uuid": "w2", "type": "tool_result", "message": {"parts": [{"functionResponse": 7}]}}\n')
        out.write(b'{"uuid": "w3", "type": "user", "message": {"role": "user", "parts": [{"text": "bad \xff"}]}}\n')
        out.write(b'{"uuid": "w4", "type": "user", "message": {"parts": [{"text": "cut')
    session = qwen.parse(SourceUnit("qwen_code", path, SID, "1:1"))
    assert_well_formed(session)
    assert texts(session)[:len(good)] == good
    assert turn(session, "w3").blocks[0].text == "bad \ufffd"
    n = len(MAIN.read_bytes().splitlines())
    assert [(w.line, w.message) for w in session.warnings] == [
        (n + 1, "not JSON"), (n + 5, "partial last line (still being written?)")]
    with pytest.raises(TraceReadError, match="cannot read"):
        qwen.parse(SourceUnit("qwen_code", tmp_path / "gone.jsonl", "gone", "1:1"))


def test_default_roots_follow_qwen_runtime_dir_then_qwen_home(monkeypatch, tmp_path):
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qh"))
    monkeypatch.delenv("QWEN_RUNTIME_DIR", raising=False)
    assert qwen.default_roots() == [tmp_path / "qh" / "projects"]
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(tmp_path / "rt"))
    assert qwen.default_roots() == [tmp_path / "rt" / "projects"]


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(qwen, ROOT)[SID]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
