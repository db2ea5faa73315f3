"""Amp thread files (funes/agents/amp/parser.py) over tests/fixtures/agents/amp
(format note: funes/agents/amp/FORMAT.md)."""

from __future__ import annotations

import json
import shutil

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.amp import parser as amp
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts

THREAD = "T-019d2a41-7c3e-7b10-9f2a-4e5d6c7b8a90"
LEGACY = "T-5a0e3c1d-2b4f-4c6d-8e9f-0a1b2c3d4e5f"


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    target = tmp_path / "home" / ".local" / "share" / "amp"
    shutil.copytree(FIXTURES / "agents" / "amp", target)
    return target


def _thread(data_home, thread=THREAD):
    return data_home / "threads" / f"{thread}.json"


def test_discovery(data_home, tmp_path, monkeypatch):
    assert amp.default_roots() == [data_home / "threads"]
    assert sorted(u.session_id for u in amp.discover(data_home)) == sorted([LEGACY, THREAD])
    (data_home / "threads" / "notes.json").write_text("{}")  # not a thread file name
    assert sorted(u.session_id for u in amp.discover(data_home / "threads")) == sorted([LEGACY, THREAD])
    export = tmp_path / "exported.json"  # a saved `amp threads export`, given by path
    shutil.copy(_thread(data_home), export)
    assert [u.session_id for u in amp.discover(export)] == ["exported"]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert amp.default_roots() == [tmp_path / "xdg" / "amp" / "threads"]


def test_thread_turns_tools_and_provenance(data_home):
    session = sessions_by_id(amp, data_home)[THREAD]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.cwd, session.workdir) == ("/home/dev/web app", "-home-dev-web-app")  # file:// URI decoded
    assert (session.repo, session.branch) == ("acme/web", "fix/upload-retry")  # recorded: the cwd is not here
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "Bash")]),
        ("tool", [("tool_result", "Bash")]),
        ("assistant", [("text", None), ("tool_use", "edit_file"), ("tool_use", "create_file")]),
        ("tool", [("tool_result", "edit_file"), ("tool_result", "create_file")]),
        ("assistant", [("tool_use", "shell_command")]),
        ("tool", [("tool_result", "shell_command")]),
        ("user", [("text", None)]),  # the image is dropped
        ("assistant", [("text", None)]),
    ]  # the info message (5) is Amp's own
    ask, run, ran, edit, edited, rerun, rejected, steer, done = session.turns
    assert [t.turn_uuid for t in session.turns] == [f"{THREAD}:{n}" for n in (0, 1, 2, 3, 4, 6, 7, 8, 9)]
    assert [t.ts for t in (ask, run, ran, done)] == ["2026-05-03T09:20:05.000Z", "2026-05-03T09:20:09.250Z",
                                                     "2026-05-03T09:20:31.000Z", "2026-05-03T09:21:30.000Z"]
    assert run.blocks[2].command.startswith("for i in 1 2 3 4 5; do pytest")  # legacy Bash {cmd}
    assert (ran.blocks[0].tool_use_id, ran.blocks[0].exit_code) == ("toolu_amp_1", 1)
    assert ran.blocks[0].text.endswith("E  assert resumed_at == 4096")
    assert [b.files for b in edit.blocks[1:]] == [(FileTouch("/home/dev/web app/tests/test_upload.py", "edit"),),
                                                  (FileTouch("/home/dev/web app/tests/fake_clock.py", "write"),)]
    assert json.loads(edited.blocks[0].text) == {"diff": "@@ -1 +1 @@", "lineRange": [12, 12]}
    assert edited.blocks[1].text == "file exists"  # run.error
    assert rerun.blocks[0].command == "pytest -q tests/test_upload.py"  # shell_command {command}
    assert rejected.blocks[0].text == "[rejected-by-user]"


def test_legacy_thread(data_home):
    session = sessions_by_id(amp, data_home)[LEGACY]
    assert (session.cwd, session.repo, session.branch) == ("/home/dev/notes", None, None)
    assert session.turns[1].blocks[0].files == (FileTouch("/home/dev/notes", "read"),)
    assert session.turns[2].blocks[0].text == '["a.md","b.md"]'
    assert {t.ts for t in session.turns[1:]} == {"2025-05-23T11:33:21.000Z"}  # sentAt of the first message, carried


def test_rewrite_keeps_ids(data_home):
    path = _thread(data_home)
    before = sessions_by_id(amp, data_home)[THREAD]
    document = json.loads(path.read_text())
    document["messages"].append({"role": "user", "messageId": 10, "content": [{"type": "text", "text": "ship it"}],
                                 "meta": {"sentAt": 1777800100000}})
    document["v"] += 1
    path.write_text(json.dumps(document))
    after = sessions_by_id(amp, data_home)[THREAD]
    assert [t.turn_uuid for t in after.turns] == [t.turn_uuid for t in before.turns] + [f"{THREAD}:10"]


def test_bad_input(data_home):
    path = _thread(data_home)
    document = json.loads(path.read_text())
    document["messages"][1:1] = [7, {"role": "assistant", "messageId": 1, "content": [{"type": "text", "text": "dup"}]},
                                 {"role": "user", "messageId": "x", "content": [{"type": "tool_result", "run": 5}]}]
    document["env"] = {"initial": {"trees": "nope"}}
    text = json.dumps(document)
    path.write_text(text[: text.index("toolu_amp_2")])
    session = sessions_by_id(amp, data_home)[THREAD]
    assert_well_formed(session)
    assert [w.message for w in session.warnings][0].startswith("truncated JSON (still being written?): kept ")
    assert "messages[1]: not an object" in [w.message for w in session.warnings]
    assert session.cwd == "" and session.workdir == "amp"
    ids = [t.turn_uuid for t in session.turns]
    assert ids[:3] == [f"{THREAD}:0", f"{THREAD}:1", f"{THREAD}:m4"]  # a repeated messageId falls back to position
    assert texts(session)[1] == "dup"


@pytest.mark.parametrize("content", ["[]", "nonsense", '{"id": "T-x", "messages": {}}'])
def test_not_a_thread(data_home, content):
    _thread(data_home).write_text(content)
    session = sessions_by_id(amp, data_home)[THREAD]
    assert session.turns == [] and len(session.warnings) == 1


def test_vanished_file_is_a_read_error(data_home):
    with pytest.raises(TraceReadError, match="cannot read"):
        amp.parse(SourceUnit("amp", data_home / "threads" / "T-gone.json", "T-gone", "1:1"))


def test_threads_flow_through_chunking(data_home):
    for session in sessions_by_id(amp, data_home).values():
        assert {c.harness for c in chunk_session(session)} == {"amp"}
