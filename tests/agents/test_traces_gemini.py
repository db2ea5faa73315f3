"""Gemini CLI chats (funes/agents/gemini/parser.py) over tests/fixtures/agents/gemini_cli, whose main
session was recorded from Gemini CLI 0.61.0 against a scripted model and then extended
with the traps the format has (funes/agents/gemini/FORMAT.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.gemini import AGENT
from funes.agents.gemini import parser as gemini
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts, turn

ROOT = FIXTURES / "agents" / "gemini_cli"
CHATS = ROOT / "tmp" / "notes" / "chats"
MAIN = CHATS / "session-2026-12-01T10-22-54614887.jsonl"
MAIN_ID = "54614887-c1a4-4d2a-9a1e-3f0b7c5d2e61"
LEGACY_ID = "01d5e551-0000-4000-8000-00000000a11d"
SUBAGENT_ID = "b7c1d2e3-5555-4aaa-8bbb-0123456789ab"


@pytest.fixture
def home(tmp_path) -> Path:
    """A copy of the fixture Gemini dir, free to change."""
    return Path(shutil.copytree(ROOT, tmp_path / ".gemini"))


def test_discovery_finds_each_session_once_in_its_biggest_file():
    units = {unit.session_id: unit for unit in gemini.discover(ROOT)}
    assert set(units) == {MAIN_ID, LEGACY_ID, SUBAGENT_ID}
    # the near-empty file Gemini starts before resuming a session names the same session
    assert units[MAIN_ID].path == MAIN
    assert units[MAIN_ID].signature == f"{MAIN.stat().st_size}:{MAIN.stat().st_mtime_ns}"
    assert {unit.session_id for unit in gemini.discover(CHATS)} == {MAIN_ID, SUBAGENT_ID}  # any folder inside
    assert [unit.session_id for unit in gemini.discover(MAIN)] == [MAIN_ID]  # or one file


def test_recorded_session_turns_blocks_and_provenance():
    session = sessions_by_id(gemini, ROOT)[MAIN_ID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("gemini_cli", "/home/dev/notes", "-home-dev-notes")
    assert session.branch is None and not session.is_subagent
    first = session.turns[:4]
    assert [shape(t) for t in first] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "run_shell_command")]),
        ("tool", [("tool_result", "run_shell_command")]),
        ("assistant", [("text", None)]),
    ]
    ask, act, result, answer = first
    assert ask.turn_uuid == "66c35e25-c1e0-4f20-898a-ee9ebacbffb8" and ask.ts == "2026-12-01T10:22:28.761Z"
    assert ask.blocks[0].text == "Write a note file please"  # the injected <session_context> turn is gone
    assert act.blocks[0].text == "**Planning the note** I will write it with the shell."
    call = act.blocks[2]
    assert call.command == "echo funes-fixture > note.txt && cat note.txt"
    assert json.loads(call.text)["description"] == "Write a note"
    assert result.turn_uuid == f"{act.turn_uuid}:{call.tool_use_id}"
    assert result.blocks[0].tool_use_id == call.tool_use_id and result.blocks[0].exit_code == 0
    assert "Output: funes-fixture" in result.blocks[0].text
    assert answer.blocks[0].text == "Done: note.txt holds funes-fixture."
    # the result appears once although Gemini also wrote it as a user message and a checkpoint copy
    assert sum("Output: funes-fixture" in text for text in texts(session)) == 2  # two prompts, two runs


def test_tool_calls_name_their_files_commands_and_exit_codes():
    session = sessions_by_id(gemini, ROOT)[MAIN_ID]
    act = turn(session, "a1f0c2d4-0002-4e00-8000-000000000002")
    assert [(b.tool_name, b.files, b.command) for b in act.blocks if b.block_type == "tool_use"] == [
        ("write_file", (FileTouch("/home/dev/notes/README.md", "write"),), None),
        ("replace", (FileTouch("/home/dev/notes/notes.py", "edit"),), None),
        ("run_shell_command", (), "pytest -q"),
    ]
    failing = turn(session, "a1f0c2d4-0002-4e00-8000-000000000002:run_shell_command__3").blocks[0]
    assert failing.exit_code == 1
    assert "1 failed, 4 passed" in failing.text  # masked later by a checkpoint: the full text stays
    reads = turn(session, "a1f0c2d4-0004-4e00-8000-000000000004").blocks[1]
    assert reads.files == (FileTouch("notes.py", "read"), FileTouch("tests/test_notes.py", "read"))


def test_rewound_messages_stay_and_notices_and_commands_are_skipped():
    session = sessions_by_id(gemini, ROOT)[MAIN_ID]
    ids = [t.turn_uuid for t in session.turns]
    assert "a1f0c2d4-0004-4e00-8000-000000000004" in ids  # rewound away later, still said
    assert ids[-2:] == ["a1f0c2d4-0007-4e00-8000-000000000007", "a1f0c2d4-0008-4e00-8000-000000000008"]
    assert "a1f0c2d4-0005-4e00-8000-000000000005" not in ids  # info: "Request cancelled."
    assert "a1f0c2d4-0006-4e00-8000-000000000006" not in ids  # "/compress"
    last = session.turns[-1]
    assert shape(last) == ("assistant", [("thinking", None), ("text", None)])  # thought parts of a checkpoint shape
    assert last.blocks[0].text == "**Scope** Only the typo."


def test_legacy_whole_file_session_and_subagent():
    found = sessions_by_id(gemini, ROOT)
    legacy = found[LEGACY_ID]
    assert legacy.cwd == "/home/dev/old-app"  # hash-named folder: the root whose SHA-256 is projectHash
    assert legacy.repo is None
    assert [t.turn_uuid for t in legacy.turns] == ["l1", "l2", "l2:read_file-1", "l2:run_shell_command-2", "l3"]
    read = turn(legacy, "l2").blocks[2]
    assert read.files == (FileTouch("/home/dev/old-app/webpack.config.js", "read"),)
    assert turn(legacy, "l2:run_shell_command-2").blocks[0].exit_code == 0  # old shape: "Exit Code: 0"
    sub = found[SUBAGENT_ID]
    assert sub.is_subagent and sub.parent_session_id == MAIN_ID and sub.cwd == "/home/dev/notes"
    assert [t.role for t in sub.turns] == ["user", "assistant"]


def test_appends_and_rewrites_keep_turn_ids(home):
    main = home / "tmp" / "notes" / "chats" / MAIN.name
    lines = MAIN.read_bytes().splitlines(keepends=True)
    full = sessions_by_id(gemini, home)[MAIN_ID]
    for cut in range(1, len(lines)):
        main.write_bytes(b"".join(lines[:cut]))
        early = sessions_by_id(gemini, home)[MAIN_ID]
        assert_well_formed(early)
        for old in early.turns:  # every turn keeps its id and the blocks it had, in place
            now = turn(full, old.turn_uuid)
            assert [b.text for b in now.blocks[:len(old.blocks)]] == [b.text for b in old.blocks], old.turn_uuid
    # a legacy file rewritten whole (a turn added, re-indented) keeps the old ids
    legacy = next((home / "tmp").glob("*/chats/*.json"))
    data = json.loads(legacy.read_text())
    before = [t.turn_uuid for t in sessions_by_id(gemini, home)[LEGACY_ID].turns]
    data["messages"].append({"id": "l4", "timestamp": "2025-09-10T09:00:00Z", "type": "user", "content": "thanks"})
    legacy.write_text(json.dumps(data))
    assert [t.turn_uuid for t in sessions_by_id(gemini, home)[LEGACY_ID].turns] == [*before, "l4"]
    # resuming it migrates it to a .jsonl beside it: one session, same ids
    migrated = legacy.with_suffix(".jsonl")
    meta = {k: v for k, v in data.items() if k != "messages"}
    migrated.write_text("".join(json.dumps(r) + "\n" for r in [meta, *data["messages"]]))
    units = [u for u in gemini.discover(home) if u.session_id == LEGACY_ID]
    assert [u.path for u in units] == [migrated]
    assert [t.turn_uuid for t in gemini.parse(units[0]).turns] == [*before, "l4"]


def test_bad_input_costs_only_the_bad_lines(home):
    main = home / "tmp" / "notes" / "chats" / MAIN.name
    good = sessions_by_id(gemini, home)[MAIN_ID]
    with main.open("ab") as out:
        out.write(b"not json\n")
        out.write(b"[1, 2]\n")
        out.write(b'{"id": "w1", "type": "gemini", "content": 5, "toolCalls": "x", "thoughts": {"a": 1}}\n')
        out.write(b'{"id": "w2", "type": "user", "content": [{"text": "caf\xe9 bad byte"}]}\n')
        out.write(b'{"id": "big", "type": "user", "content": "' + b"x" * 5_000_000 + b'"}\n')
        out.write(b'{"id": "w3", "type": "user", "content": "partial')
    session = sessions_by_id(gemini, home)[MAIN_ID]
    assert_well_formed(session)
    assert texts(session)[:len(texts(good))] == texts(good)
    assert turn(session, "w2").blocks[0].text == "caf\ufffd bad byte"
    assert len(turn(session, "big").blocks[0].text) == 5_000_000
    lines = len(MAIN.read_bytes().splitlines())
    assert [(w.line, w.message) for w in session.warnings] == [
        (lines + 1, "not JSON"), (lines + 2, "not a JSON object (list)"),
        (lines + 6, "partial last line (still being written?)"),
    ]
    assert all(w.path == str(main) for w in session.warnings)


def test_truncated_legacy_file_and_vanished_file(tmp_path):
    legacy = tmp_path / "session-x.json"
    legacy.write_text('{"sessionId": "s", "messages": [{"id": "a", "type": "user", "content": "hi"}')
    session = gemini.parse(SourceUnit("gemini_cli", legacy, "s", "1:1"))
    assert session.turns == [] and [w.line for w in session.warnings] == [0]
    with pytest.raises(TraceReadError, match="cannot read"):
        gemini.parse(SourceUnit("gemini_cli", tmp_path / "gone.jsonl", "gone", "1:1"))
    with pytest.raises(TraceReadError, match="cannot read"):
        gemini.parse(SourceUnit("gemini_cli", tmp_path / "gone.json", "gone", "1:1"))


def test_roots_follow_gemini_cli_home(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    assert AGENT.roots() == [tmp_path / ".gemini" / "tmp"]
    monkeypatch.delenv("GEMINI_CLI_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert AGENT.roots() == [tmp_path / "h" / ".gemini" / "tmp"]


def test_a_parsed_session_chunks():
    chunks = list(chunk_session(sessions_by_id(gemini, ROOT)[MAIN_ID]))
    assert {c.harness for c in chunks} == {"gemini_cli"}
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
