"""OpenCode: the SQLite store (opencode.db) and the JSON storage tree before it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.opencode import parser as opencode
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import (AGENT_FIXTURES, assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                          locked_by_a_writer, sessions_by_id, shape, turn)

STORAGE = AGENT_FIXTURES / "opencode" / "storage"


@pytest.fixture(autouse=True)
def no_opencode_env(monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("OPENCODE_DB", raising=False)


@pytest.fixture
def builder():
    return fixture_module("agents/opencode/make_opencode_db.py")


@pytest.fixture
def data_dir(isolated_env, builder) -> Path:
    """OpenCode's data folder in the test HOME, with the fixture database."""
    folder = isolated_env / ".local" / "share" / "opencode"
    folder.mkdir(parents=True)
    builder.build(folder / "opencode.db")
    return folder


def test_default_root_is_the_xdg_data_folder_and_opencode_db_moves_the_database(isolated_env, monkeypatch):
    assert opencode.default_roots() == [isolated_env / ".local" / "share" / "opencode"]
    monkeypatch.setenv("XDG_DATA_HOME", str(isolated_env / "xdg"))
    assert opencode.default_roots() == [isolated_env / "xdg" / "opencode"]
    monkeypatch.setenv("OPENCODE_DB", "/srv/oc/team.db")
    assert opencode.default_roots() == [isolated_env / "xdg" / "opencode", Path("/srv/oc/team.db")]
    monkeypatch.setenv("OPENCODE_DB", "opencode-dev.db")  # relative: inside the data folder, found there anyway
    assert opencode.default_roots() == [isolated_env / "xdg" / "opencode"]


def test_main_session_turns_blocks_and_ids(data_dir):
    main = sessions_by_id(opencode, data_dir)["ses_0main"]
    assert_well_formed(main)
    assert (main.cwd, main.workdir, main.branch, main.is_subagent) == ("/home/dev/widget", "-home-dev-widget",
                                                                       "feature/login", False)
    assert [t.turn_uuid for t in main.turns] == [
        "msg_a01", "msg_a02", "prt_a02_03", "prt_a02_04", "msg_a03", "prt_a03_00", "prt_a03_01", "prt_a03_02",
        "msg_a04", "msg_a08"]
    assert [shape(t) for t in main.turns[:4]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read"), ("tool_use", "bash")]),
        ("tool", [("tool_result", "read")]),
        ("tool", [("tool_result", "bash")]),
    ]
    first = main.turns[0]
    assert (first.ts, first.parent_uuid) == ("2026-05-28T20:26:40.000Z", None)
    assert first.blocks[0].text == "Add a login form to the widget and run the tests"  # synthetic part skipped
    bash_result = turn(main, "prt_a02_04")
    assert (bash_result.parent_uuid, bash_result.ts) == ("msg_a02", "2026-05-28T20:26:41.540Z")
    assert bash_result.blocks[0].tool_use_id == "call_b1" and bash_result.blocks[0].exit_code == 1
    assert turn(main, "msg_a03").parent_uuid == "prt_a02_04"  # the previous retained turn


def test_tool_provenance(data_dir):
    main = sessions_by_id(opencode, data_dir)["ses_0main"]
    uses = {b.tool_use_id: b for t in main.turns for b in t.blocks if b.block_type == "tool_use"}
    assert uses["call_r1"].files == (FileTouch("/home/dev/widget/src/form.tsx", "read"),)
    assert uses["call_e1"].files == (FileTouch("/home/dev/widget/src/form.tsx", "edit"),)
    assert uses["call_w1"].files == (FileTouch("/home/dev/widget/src/logout.tsx", "write"),)
    assert uses["call_p1"].files == (FileTouch("src/login.tsx", "write"), FileTouch("src/old-login.tsx", "delete"))
    assert (uses["call_b1"].command, uses["call_b2"].command) == ("npm test -- --run", "npm run e2e")
    assert uses["call_b1"].text == '{"command":"npm test -- --run","description":"Run the tests"}'
    assert "call_g1" not in uses  # pending: arguments still streaming
    results = {b.tool_use_id: b for t in main.turns for b in t.blocks if b.block_type == "tool_result"}
    assert results["call_b2"].text == "Command timed out after 120000 ms"  # an errored call keeps its error
    assert "call_w1" not in results  # running: no result yet


def test_skipped_parts_and_messages(data_dir):
    main = sessions_by_id(opencode, data_dir)["ses_0main"]
    every_text = [b.text for t in main.turns for b in t.blocks]
    assert not any("Called the Read tool" in text for text in every_text)  # synthetic
    assert not any(text.startswith("Summary:") for text in every_text)  # compaction summary
    assert "Half a thought" not in every_text  # still streaming
    assert turn(main, "msg_a08").blocks[0].text == "Now add a logout button"


def test_subagent_session_and_empty_session(data_dir):
    found = sessions_by_id(opencode, data_dir)
    assert set(found) == {"ses_0main", "ses_1child"}  # ses_2empty has no messages
    child = found["ses_1child"]
    assert (child.parent_session_id, child.is_subagent) == ("ses_0main", True)
    assert [shape(t) for t in child.turns] == [("user", [("text", None)]), ("assistant", [("text", None)])]


def test_rows_updated_in_place_change_the_signature_and_keep_old_ids(data_dir):
    db = data_dir / "opencode.db"
    before = {u.session_id: u for u in opencode.discover(data_dir)}["ses_0main"]
    old = opencode.parse(before)
    conn = sqlite3.connect(db)
    with conn:  # the streaming reasoning part completes, then a new user message arrives
        conn.execute("UPDATE part SET time_updated = time_updated + 99, data = ? WHERE id = 'prt_a05_00'",
                     (json.dumps({"type": "reasoning", "text": "Half a thought, finished",
                                  "time": {"start": 1, "end": 2}}),))
        conn.execute("INSERT INTO message VALUES ('msg_a09', 'ses_0main', 1780000030000, 1780000030000, ?)",
                     (json.dumps({"role": "user", "time": {"created": 1780000030000}}),))
        conn.execute("INSERT INTO part VALUES ('prt_a09_00', 'msg_a09', 'ses_0main', 1780000030000, "
                     "1780000030000, ?)", (json.dumps({"type": "text", "text": "And a remember-me box"}),))
    conn.close()
    after = {u.session_id: u for u in opencode.discover(data_dir)}["ses_0main"]
    assert after.signature != before.signature
    new = opencode.parse(after)
    new_ids = [t.turn_uuid for t in new.turns]
    assert new_ids == ["msg_a01", "msg_a02", "prt_a02_03", "prt_a02_04", "msg_a03", "prt_a03_00", "prt_a03_01",
                       "prt_a03_02", "msg_a04", "msg_a05", "msg_a08", "msg_a09"]
    old_texts = {t.turn_uuid: [b.text for b in t.blocks] for t in old.turns}
    assert all(old_texts[t.turn_uuid] == [b.text for b in t.blocks] for t in new.turns if t.turn_uuid in old_texts)
    conn = sqlite3.connect(db)
    with conn:  # a revert deletes the newest message and its parts
        conn.execute("DELETE FROM part WHERE message_id = 'msg_a09'")
        conn.execute("DELETE FROM message WHERE id = 'msg_a09'")
    conn.close()
    reverted = {u.session_id: u for u in opencode.discover(data_dir)}["ses_0main"]
    assert reverted.signature not in (after.signature, before.signature)


def test_legacy_json_sessions_beside_the_database(data_dir):
    shutil.copytree(STORAGE, data_dir / "storage")
    units = list(opencode.discover(data_dir))
    assert [(u.session_id, u.path.name) for u in units] == [
        ("ses_0main", "opencode.db"), ("ses_1child", "opencode.db"), ("ses_9legacy", "ses_9legacy.json")]
    legacy = opencode.parse(units[2])
    assert_well_formed(legacy)
    assert (legacy.cwd, legacy.workdir) == ("/home/dev/old-app", "-home-dev-old-app")
    assert [(t.turn_uuid, t.role, t.ts) for t in legacy.turns] == [
        ("msg_l01", "user", "2025-06-15T15:06:41.000Z"),
        ("msg_l02", "assistant", "2025-06-15T15:06:42.000Z"),
        ("prt_l02_01", "tool", "2025-06-15T15:06:42.400Z"),
    ]
    assert turn(legacy, "msg_l02").blocks[1].command == "cal 2 2026"
    assert turn(legacy, "prt_l02_01").blocks[0].exit_code == 0


def test_a_json_only_data_folder_and_roots_inside_storage(isolated_env):
    folder = isolated_env / "oc"
    shutil.copytree(STORAGE, folder / "storage")
    assert sorted(u.session_id for u in opencode.discover(folder)) == ["ses_0main", "ses_9legacy"]
    assert sorted(u.session_id for u in opencode.discover(folder / "storage")) == ["ses_0main", "ses_9legacy"]
    assert [u.session_id for u in opencode.discover(folder / "storage" / "session" / "p1" / "ses_9legacy.json")] \
        == ["ses_9legacy"]
    main = opencode.parse(next(u for u in opencode.discover(folder) if u.session_id == "ses_0main"))
    assert [t.turn_uuid for t in main.turns] == ["msg_a01"]


def test_a_legacy_part_added_changes_the_signature(isolated_env):
    folder = isolated_env / "oc"
    shutil.copytree(STORAGE, folder / "storage")
    file = folder / "storage" / "session" / "p1" / "ses_9legacy.json"
    [before] = opencode.discover(file)
    (folder / "storage" / "part" / "msg_l02" / "prt_l02_02.json").write_text(
        json.dumps({"id": "prt_l02_02", "type": "text", "text": "One more thing."}))
    [after] = opencode.discover(file)
    assert after.signature != before.signature
    assert [b.text for b in turn(opencode.parse(after), "msg_l02").blocks][-1] == "One more thing."


def test_bad_rows_cost_only_themselves(data_dir):
    conn = sqlite3.connect(data_dir / "opencode.db")
    with conn:
        conn.execute("UPDATE message SET data = 'not json' WHERE id = 'msg_a04'")
        conn.execute("UPDATE part SET data = '[1, 2]' WHERE id = 'prt_a02_02'")  # the text part: a list
        conn.execute("UPDATE part SET data = ? WHERE id = 'prt_a02_03'",
                     (json.dumps({"type": "tool", "tool": ["read"], "callID": 7, "state": "completed"}),))
        conn.execute("UPDATE part SET data = ? WHERE id = 'prt_a03_00'",
                     (b'{"type":"text","text":"caf\xff latte"}',))  # not UTF-8, stored as a blob
        conn.execute("UPDATE part SET data = ? WHERE id = 'prt_a03_01'",
                     (json.dumps({"type": "text", "text": "x" * 5_000_000}),))
        conn.execute("UPDATE message SET data = '{\"role\": \"user\", \"time\": \"yesterday\"}' WHERE id = 'msg_a08'")
    conn.close()
    main = sessions_by_id(opencode, data_dir)["ses_0main"]
    assert_well_formed(main)
    assert [(w.line > 0, w.message.split(":")[0]) for w in main.warnings] == [
        (True, "part prt_a02_02"), (True, "message msg_a04")]
    assert all(w.path == str(data_dir / "opencode.db") for w in main.warnings)
    message_a03 = [b.text for b in turn(main, "msg_a03").blocks]
    assert "caf\ufffd latte" in message_a03 and "x" * 5_000_000 in message_a03
    assert turn(main, "msg_a08").ts == ""  # a time of the wrong shape reads as unknown
    assert "msg_a04" not in [t.turn_uuid for t in main.turns]


def test_bad_legacy_files_are_warnings_naming_the_file(isolated_env):
    folder = isolated_env / "oc"
    shutil.copytree(STORAGE, folder / "storage")
    bad = folder / "storage" / "part" / "msg_l02" / "prt_l02_00.json"
    bad.write_bytes(b'{"type": "text", "text": "trunc')
    legacy = opencode.parse(next(u for u in opencode.discover(folder) if u.session_id == "ses_9legacy"))
    assert [w.path for w in legacy.warnings] == [str(bad)]
    assert [t.turn_uuid for t in legacy.turns] == ["msg_l01", "msg_l02", "prt_l02_01"]


def test_a_vanished_legacy_session_or_a_corrupt_database_is_a_read_error(isolated_env, data_dir):
    folder = isolated_env / "oc"
    shutil.copytree(STORAGE, folder / "storage")
    [unit] = [u for u in opencode.discover(folder) if u.session_id == "ses_9legacy"]
    unit.path.unlink()
    with pytest.raises(TraceReadError, match="cannot read"):
        opencode.parse(unit)
    garbage = assert_corrupt_database_is_a_read_error(opencode, isolated_env / "broken" / "opencode.db",
                                                      isolated_env / "broken")
    with pytest.raises(TraceReadError):
        opencode.parse(SourceUnit("opencode", garbage, "ses_0main", "1:1:1"))


def test_a_locked_database_is_a_read_error(data_dir, monkeypatch):
    [unit] = [u for u in opencode.discover(data_dir) if u.session_id == "ses_1child"]
    with locked_by_a_writer(data_dir / "opencode.db", monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            opencode.parse(unit)


def test_the_database_is_opened_read_only(data_dir):
    db = data_dir / "opencode.db"
    db.chmod(0o444)
    (data_dir / "opencode.db-wal").unlink(missing_ok=True)
    try:
        assert len(sessions_by_id(opencode, data_dir)["ses_0main"].turns) == 10
    finally:
        db.chmod(0o644)


def test_a_parsed_session_chunks(data_dir):
    main = sessions_by_id(opencode, data_dir)["ses_0main"]
    chunks = list(chunk_session(main))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
    assert {c.harness for c in chunks} == {"opencode"}
