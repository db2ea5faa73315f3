"""Roo Code task folders (funes/agents/roo/parser.py) over tests/fixtures/agents/roo_code
(format note: funes/agents/roo/FORMAT.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.cline.tasks import message_digest
from funes.agents.roo import EXTENSION_ID
from funes.agents.roo import parser as roo
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts

PARENT = "3f6c1a2e-8b4d-4e0a-9c7b-5d2e1f0a9b8c"
CHILD = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"


@pytest.fixture
def storage(tmp_path):
    """The fixture storage, where VS Code on Linux keeps it in this test's HOME."""
    target = tmp_path / "home" / ".config" / "Code" / "User" / "globalStorage" / EXTENSION_ID
    shutil.copytree(FIXTURES / "agents" / "roo_code" / "globalStorage" / EXTENSION_ID, target)
    return target


def _history(storage, task=PARENT):
    return storage / "tasks" / task / "api_conversation_history.json"


def test_discovery_from_the_default_roots(storage, tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    roots = roo.default_roots()
    assert storage in roots and tmp_path / "home" / ".vscode-mock" / "global-storage" in roots  # the Roo CLI
    units = [unit for root in roots if root.exists() for unit in roo.discover(root)]
    assert sorted(u.session_id for u in units) == [PARENT, CHILD]  # tasks/_index.json is no task
    assert all(u.harness == "roo_code" and u.path.name == "api_conversation_history.json" for u in units)


def test_custom_storage_path_setting_is_a_root(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    settings = tmp_path / "home" / ".config" / "Code" / "User" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n  // my settings\n  "editor.fontSize": 13,\n'
                        '  "roo-cline.customStoragePath": "/data/roo \\"tasks\\"",\n}\n')
    assert Path('/data/roo "tasks"') in roo.default_roots()


def test_task_turns_blocks_and_provenance(storage):
    session = sessions_by_id(roo, storage)[PARENT]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("roo_code", "/home/dev/crate", "-home-dev-crate")
    assert not session.is_subagent and session.parent_session_id is None
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read_file")]),
        ("tool", [("tool_result", "read_file")]),
        ("assistant", [("thinking", None), ("tool_use", "apply_diff")]),  # reasoning_content; no thoughtSignature
        ("tool", [("tool_result", "apply_diff")]),
        ("assistant", [("tool_use", "execute_command")]),
        ("tool", [("tool_result", "execute_command")]),
        ("assistant", [("tool_use", "new_task")]),
        ("tool", [("tool_result", "new_task")]),
        ("assistant", [("text", None)]),
    ]  # the condense summary and the truncation marker are skipped; the condensed originals stay
    task, read, read_result, diff, _, run, run_result, delegate, _, done = session.turns
    assert task.blocks[0].text == "Parse durations like 1h30m in parse_duration"  # no <task>, no environment
    assert read.blocks[0].text == "A small state machine over digits and unit letters will do."
    assert (read.blocks[2].tool_use_id, read.blocks[2].files) == ("call_read_1", (FileTouch("src/lib.rs", "read"),))
    assert read_result.blocks[0].text.startswith("File: src/lib.rs")
    assert diff.blocks[0].text == "Replace the body; keep the signature."
    assert diff.blocks[1].files == (FileTouch("src/lib.rs", "edit"),)
    assert run.blocks[0].command == "cargo test parse_duration"
    assert run_result.blocks[0].exit_code == 101
    assert json.loads(delegate.blocks[0].text)["mode"] == "debug"
    assert (task.ts, done.ts) == ("2026-03-31T23:33:20.000Z", "2026-03-31T23:34:56.000Z")
    assert task.turn_uuid == f"{PARENT}:" + message_digest("user", json.loads(_history(storage).read_text())[0]["content"])


def test_subtask_names_its_parent(storage):
    child = sessions_by_id(roo, storage)[CHILD]
    assert (child.parent_session_id, child.is_subagent, child.cwd) == (PARENT, True, "/home/dev/crate")
    assert [shape(t) for t in child.turns] == [("user", [("text", None)]),
                                               ("assistant", [("text", None), ("tool_use", "attempt_completion")])]


def test_condensing_and_truncation_in_place_keep_ids(storage):
    """Roo rewrites the array: tags old messages, appends a summary, inserts a truncation
    marker mid-array.  No unchanged message changes id."""
    path = _history(storage)
    before = sessions_by_id(roo, storage)[PARENT]
    messages = json.loads(path.read_text())
    for message in messages:
        message["condenseParent"] = "cond-2"
    messages.insert(3, {"role": "assistant", "ts": 1775000050000, "isTruncationMarker": True, "truncationId": "t2",
                        "content": [{"type": "text", "text": "[hidden]"}]})
    messages.append({"role": "user", "ts": 1775000200000, "isSummary": True, "condenseId": "cond-2",
                     "content": [{"type": "text", "text": "summary"}]})
    messages.append({"role": "user", "ts": 1775000300000, "content": [{"type": "text", "text": "now add days"}]})
    path.write_text(json.dumps(messages, indent="\t"))
    after = sessions_by_id(roo, storage)[PARENT]
    assert [t.turn_uuid for t in after.turns][:-1] == [t.turn_uuid for t in before.turns]
    assert texts(after)[-1] == "now add days"


def test_missing_history_item_leaves_cwd_to_the_environment_details(storage):
    (storage / "tasks" / PARENT / "history_item.json").unlink()
    session = sessions_by_id(roo, storage)[PARENT]
    assert session.cwd == "/home/dev/crate"  # "# Current Workspace Directory (…) Files"
    (storage / "tasks" / CHILD / "history_item.json").write_text("{broken")
    child = sessions_by_id(roo, storage)[CHILD]
    assert (child.cwd, child.parent_session_id) == ("", None) and child.workdir == "roo_code"


def test_bad_input(storage):
    path = _history(storage)
    messages = json.loads(path.read_text())
    messages[2:2] = [None, {"role": "assistant", "content": [{"type": "tool_use", "input": "raw", "id": 3}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_read_1", "content": 17}]}]
    raw = json.dumps(messages).encode()
    path.write_bytes(raw[: raw.index(b"cargo test") + 4])  # also cut off mid-write
    session = sessions_by_id(roo, storage)[PARENT]
    assert_well_formed(session)
    messages_warnings = [w.message for w in session.warnings]
    assert messages_warnings[0].startswith("truncated JSON (still being written?): kept ")
    assert "messages[2]: not an object" in messages_warnings
    assert [shape(t) for t in session.turns][:3] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read_file")]),
        ("assistant", [("tool_use", None)]),  # a nameless call: its raw input is kept
    ]
    with pytest.raises(TraceReadError, match="cannot read"):
        roo.parse(SourceUnit("roo_code", storage / "tasks" / "gone" / "api_conversation_history.json", "gone", "1:1"))


def test_tasks_flow_through_chunking(storage):
    session = sessions_by_id(roo, storage)[PARENT]
    chunks = list(chunk_session(session))
    assert {c.turn_uuid for c in chunks} == {t.turn_uuid for t in session.turns}
