"""Cline sessions (funes/agents/cline/parser.py): the SDK's messages files and classic task folders,
over tests/fixtures/agents/cline (format note: funes/agents/cline/FORMAT.md)."""

from __future__ import annotations

import json
import shutil

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.cline import parser as cline
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts

SID = "1784300000000_k7q2m"
TASK = "1767225600000"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A copy of the fixtures: ``sdk/sessions`` and ``classic/data`` as Cline lays them out."""
    for name in ("CLINE_DIR", "CLINE_DATA_DIR", "CLINE_SESSION_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "cline"
    shutil.copytree(FIXTURES / "agents" / "cline", root)
    return root


def _messages_file(home):
    return home / "sdk" / "sessions" / SID / f"{SID}.messages.json"


def _history_file(home):
    return home / "classic" / "data" / "tasks" / TASK / "api_conversation_history.json"


def test_discovery_finds_sessions_subagents_and_classic_tasks(home):
    units = list(cline.discover(home))
    assert [(u.session_id, u.path.name) for u in units] == [
        (SID, f"{SID}.messages.json"),
        (f"{SID}__explorer", "explorer.messages.json"),  # the SDK's own sub-session id
        (TASK, "api_conversation_history.json"),
    ]  # the compaction sidecar and the manifest are not sessions
    assert all(u.harness == "cline" for u in units)
    assert units[0].signature == f"{_messages_file(home).stat().st_size}:{_messages_file(home).stat().st_mtime_ns}"
    # a single file, or a task folder, is a root too
    assert [u.session_id for u in cline.discover(_messages_file(home))] == [SID]
    assert [u.session_id for u in cline.discover(_history_file(home).parent)] == [TASK]
    assert [u.session_id for u in cline.discover(_history_file(home).with_name("ui_messages.json"))] == [TASK]


def test_default_roots_follow_the_environment(tmp_path, monkeypatch):
    home = tmp_path / "home"
    roots = cline.default_roots()
    assert roots[:2] == [home / ".cline" / "data" / "sessions", home / ".cline" / "data" / "tasks"]
    assert home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" in roots
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "c"))
    assert cline.default_roots()[0] == tmp_path / "c" / "data" / "sessions"
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path / "d"))
    assert cline.default_roots()[:2] == [tmp_path / "d" / "sessions", tmp_path / "d" / "tasks"]
    monkeypatch.setenv("CLINE_SESSION_DATA_DIR", str(tmp_path / "s"))
    assert cline.default_roots()[0] == tmp_path / "s"


def test_sdk_session_turns_blocks_and_provenance(home):
    session = sessions_by_id(cline, home)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("cline", "/home/dev/shop", "-home-dev-shop")
    assert session.parent_session_id is None and not session.is_subagent
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read_files")]),
        ("tool", [("tool_result", "read_files")]),
        ("assistant", [("text", None), ("tool_use", "editor"), ("tool_use", "editor")]),
        ("tool", [("tool_result", "editor"), ("tool_result", "editor")]),
        ("assistant", [("tool_use", "run_commands")]),
        ("tool", [("tool_result", "run_commands")]),
        ("assistant", [("text", None), ("tool_use", "apply_patch"), ("tool_use", "run_commands")]),
        ("tool", [("tool_result", "apply_patch"), ("tool_result", "run_commands")]),
        ("assistant", [("text", None)]),  # the image part is dropped
        ("user", [("text", None)]),
    ]
    ask, read, read_result, edit, edit_result, run, run_result, patch, patch_result, done, thanks = session.turns
    assert [t.turn_uuid for t in (ask, read, done, thanks)] == ["msg_mrc001_1", "msg_Qm3kTz1a", f"{SID}:m9",
                                                                 "msg_mrc002_1"]
    assert read.parent_uuid == "msg_mrc001_1"
    assert (ask.ts, read.ts, thanks.ts) == ("2026-07-20T09:00:00.000Z", "2026-07-20T09:00:04.000Z",
                                            "2026-07-20T09:01:00.000Z")
    # the runtime's <user_input mode=…> wrapper and mode notices are not what the user said;
    # the attached file's content is not indexed
    assert ask.blocks[0].text.startswith("The cart total is off by a cent") and "<user_input" not in ask.blocks[0].text
    assert thanks.blocks[0].text == "thanks"
    assert read.blocks[2].files == (FileTouch("/home/dev/shop/src/cart.ts", "read"),
                                    FileTouch("/home/dev/shop/test/cart.test.ts", "read"))
    assert json.loads(read.blocks[2].text)["files"][0]["end_line"] == 40
    assert read_result.blocks[0].tool_use_id == "toolu_01ReadCart"
    assert read_result.blocks[0].text == ("1 | export function total(items) { return items.reduce((a, b) => a + b, 0) }"
                                          "\nError reading file: ENOENT: no such file or directory")
    assert [b.files for b in edit.blocks[1:]] == [(FileTouch("/home/dev/shop/src/cart.ts", "edit"),),
                                                  (FileTouch("/home/dev/shop/test/cart.test.ts", "write"),)]
    assert [b.text for b in edit_result.blocks] == ["Edited /home/dev/shop/src/cart.ts",
                                                    "Created /home/dev/shop/test/cart.test.ts"]
    assert run.blocks[0].command == "npm test -- cart"
    assert (run_result.blocks[0].exit_code, run_result.blocks[0].text.splitlines()[-1]) == (
        1, "Command exited with code 1")
    assert patch.blocks[1].files == (FileTouch("/home/dev/shop/src/index.ts", "edit"),
                                     FileTouch("/home/dev/shop/src/cart.old.ts", "delete"))
    assert patch.blocks[2].command == "npm test -- cart"  # structured {command, args}
    assert [b.exit_code for b in patch_result.blocks] == [None, 0]


def test_sdk_subagent_file_names_its_root(home):
    sub = sessions_by_id(cline, home)[f"{SID}__explorer"]
    assert (sub.parent_session_id, sub.is_subagent, sub.cwd) == (SID, True, "/home/dev/shop")
    assert [t.turn_uuid for t in sub.turns] == ["msg_sub0001", "msg_sub0002", "msg_sub0003", "msg_sub0004"]
    assert sub.turns[2].blocks[0].tool_name == "search_codebase"


def test_classic_task_xml_tools_thinking_and_environment(home):
    session = sessions_by_id(cline, home)[TASK]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.cwd, session.workdir) == ("/home/dev/api", "-home-dev-api")  # from state/taskHistory.json
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("tool_use", "read_file")]),
        ("tool", [("tool_result", "read_file")]),
        ("assistant", [("text", None), ("tool_use", "replace_in_file")]),
        ("tool", [("tool_result", "replace_in_file")]),
        ("assistant", [("text", None), ("tool_use", "execute_command")]),
        ("tool", [("tool_result", "execute_command")]),
        ("assistant", [("tool_use", "attempt_completion")]),
        ("tool", [("tool_result", "attempt_completion")]),
    ]
    task, read, read_result, edit, edit_result, run, run_result, complete, feedback = session.turns
    assert task.blocks[0].text == ("The /health endpoint returns 500 when the database is down. "
                                   "Make it return 503.")  # <task> unwrapped, environment details gone
    assert read.blocks[0].text == "I need to see how /health is implemented."
    call = read.blocks[1]
    assert (json.loads(call.text), call.files) == ({"path": "src/server.py"}, (FileTouch("src/server.py", "read"),))
    assert call.tool_use_id == read_result.blocks[0].tool_use_id == f"{read.turn_uuid}:x0"
    # the older two-part result: header and output in one block, environment details dropped
    assert read_result.blocks[0].text == ("[read_file for 'src/server.py'] Result:\n@app.get('/health')\n"
                                          "def health():\n    db.ping()\n    return {'ok': True}")
    assert edit.blocks[1].files == (FileTouch("src/server.py", "edit"),)
    assert "------- SEARCH" in json.loads(edit.blocks[1].text)["diff"]
    assert edit_result.blocks[0].tool_use_id == edit.blocks[1].tool_use_id
    assert (run.blocks[1].tool_use_id, run.blocks[1].command) == ("toolu_01Pytest", "pytest tests/test_health.py")
    assert run_result.blocks[0].tool_use_id == "toolu_01Pytest"
    assert feedback.blocks[0].text.endswith("<feedback>\nalso log the error\n</feedback>")
    # times: the panel's messages for messages without ts, the messages' own ts after
    assert [t.ts for t in session.turns] == [
        "2026-01-01T00:00:01.000Z", "2026-01-01T00:00:06.000Z", "2026-01-01T00:00:10.000Z",
        "2026-01-01T00:00:15.000Z", "2026-01-01T00:00:20.000Z", "2026-01-01T00:01:00.000Z",
        "2026-01-01T00:01:10.000Z", "2026-01-01T00:01:15.000Z", "2026-01-01T00:01:30.000Z"]
    assert all(t.turn_uuid.startswith(f"{TASK}:") for t in session.turns)


def test_classic_task_cwd_falls_back_to_environment_details(home):
    (home / "classic" / "data" / "state" / "taskHistory.json").unlink()
    session = sessions_by_id(cline, home)[TASK]
    assert session.cwd == "/home/dev/api"


def test_sdk_rewrite_keeps_ids_and_adds_new_turns(home):
    path = _messages_file(home)
    before = sessions_by_id(cline, home)[SID]
    envelope = json.loads(path.read_text())
    envelope["messages"].append({"id": "msg_late01", "role": "assistant", "ts": 1784538100000,
                                 "content": [{"type": "text", "text": "You're welcome."}]})
    envelope["updated_at"] = "2026-07-20T09:02:00.000Z"
    path.write_text(json.dumps(envelope))  # rewritten whole, formatted differently
    after = sessions_by_id(cline, home)[SID]
    assert [t.turn_uuid for t in after.turns] == [t.turn_uuid for t in before.turns] + ["msg_late01"]
    assert texts(after)[: len(texts(before))] == texts(before)


def test_classic_rewrite_insertion_and_rewind_keep_unchanged_ids(home):
    path = _history_file(home)
    before = [t.turn_uuid for t in sessions_by_id(cline, home)[TASK].turns]
    messages = json.loads(path.read_text())
    messages.insert(2, {"role": "user", "content": [{"type": "text", "text": "[TASK RESUMPTION] resumed"}]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "Logged the error as well."}]})
    path.write_text(json.dumps(messages))
    after = [t.turn_uuid for t in sessions_by_id(cline, home)[TASK].turns]
    assert len(after) == len(before) + 2 and set(before) <= set(after)  # nothing renamed, nothing twice
    path.write_text(json.dumps(messages[:4]))  # a rewind drops the tail
    rewound = [t.turn_uuid for t in sessions_by_id(cline, home)[TASK].turns]
    assert rewound == [before[0], before[1], after[2], before[2]]


def test_repeated_messages_get_distinct_ids(home):
    path = _history_file(home)
    yes = {"role": "user", "content": "yes"}
    path.write_text(json.dumps([yes, {"role": "assistant", "content": "ok"}, yes]))
    ids = [t.turn_uuid for t in sessions_by_id(cline, home)[TASK].turns]
    assert len(set(ids)) == 3 and ids[2] == ids[0] + "#2"


def test_truncated_messages_file_keeps_complete_messages(home):
    path = _messages_file(home)
    text = path.read_text()
    path.write_text(text[: text.index('"msg_Hb2nWc3c"') + 20])  # caught mid-write
    session = sessions_by_id(cline, home)[SID]
    assert [t.turn_uuid for t in session.turns] == ["msg_mrc001_1", "msg_Qm3kTz1a", "msg_Zr7yPq2b_tool_toolu_01ReadCart"]
    assert [w.message for w in session.warnings] == ["truncated JSON (still being written?): kept 3 complete items"]
    assert str(session.warnings[0]).startswith(f"{path}:")


@pytest.mark.parametrize(("content", "warning"), [
    ("not json at all", "not JSON (Expecting value)"),
    ('{"version": 1, "messages": {"id": "x"}}', "no messages array: not a Cline messages file"),
    ("[1, 2]", "no messages array: not a Cline messages file"),
])
def test_unreadable_messages_files_warn_and_yield_nothing(home, content, warning):
    _messages_file(home).write_text(content)
    session = sessions_by_id(cline, home)[SID]
    assert session.turns == [] and [w.message for w in session.warnings] == [warning]


def test_bad_messages_cost_only_themselves(home):
    path = _messages_file(home)
    envelope = json.loads(path.read_text())
    envelope["messages"][1:1] = [
        "a string",
        {"id": "msg_bad1", "role": "assistant", "content": [{"type": "tool_use", "name": 7, "input": {"x": 1}}]},
        {"id": "msg_bad2", "role": "user", "content": {"type": "text", "text": "not a list"}},
        {"id": "msg_bad3", "role": "assistant", "ts": "yesterday", "content": [{"type": "text", "text": "caf\udcff"}]},
    ]
    raw = json.dumps(envelope).encode().replace(b"Fix the rounding", b"Fix the \xff rounding")
    path.write_bytes(raw)
    session = sessions_by_id(cline, home)[SID]
    assert_well_formed(session)
    assert [w.message for w in session.warnings] == ["messages[1]: not an object"]
    ids = [t.turn_uuid for t in session.turns]
    assert ids[:3] == ["msg_mrc001_1", "msg_bad1", "msg_bad3"] and "msg_Qm3kTz1a" in ids
    assert session.turns[1].blocks[0].tool_name is None  # a name of the wrong type reads as missing
    assert session.turns[2].ts == "" and session.turns[2].blocks[0].text == "caf\ufffd"
    assert "Fix the \ufffd rounding" in session.turns[0].blocks[0].text


def test_huge_tool_result(home):
    path = _messages_file(home)
    envelope = json.loads(path.read_text())
    envelope["messages"][2]["content"][0]["content"] = "x" * 20_000_000
    path.write_text(json.dumps(envelope))
    session = sessions_by_id(cline, home)[SID]
    assert len(session.turns[2].blocks[0].text) == 20_000_000


def test_vanished_or_unreadable_file_is_a_read_error(home):
    for target in (home / "gone.messages.json", home / "classic"):
        with pytest.raises(TraceReadError, match="cannot read"):
            cline.parse(SourceUnit("cline", target, "x", "1:1"))
    with pytest.raises(TraceReadError, match="cannot read"):
        cline.parse(SourceUnit("cline", home / "tasks" / "gone" / "api_conversation_history.json", "gone", "1:1"))


def test_sessions_flow_through_chunking(home):
    for session in sessions_by_id(cline, home).values():
        chunks = list(chunk_session(session))
        assert chunks and {c.session_id for c in chunks} == {session.session_id}
        assert {c.harness for c in chunks} == {"cline"}
