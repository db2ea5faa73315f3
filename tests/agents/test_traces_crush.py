"""Crush: per-project crush.db files, found through Crush's projects.json."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.crush import parser as crush
from funes.traces.model import FileTouch
from trace_helpers import (assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                          locked_by_a_writer, sessions_by_id, shape, turn)

builder = fixture_module("agents/crush/make_crush_db.py")
MAIN, TASK = builder.MAIN, builder.TASK


@pytest.fixture(autouse=True)
def no_crush_env(monkeypatch):
    for name in ("XDG_DATA_HOME", "CRUSH_GLOBAL_DATA"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def machine(isolated_env) -> dict[str, Path]:
    """Two projects: one with the default .crush data dir, one whose data dir was
    moved (``--data-dir``), both listed in the global projects.json."""
    shop, docs = isolated_env / "src" / "shop", isolated_env / "src" / "docs"
    builder.build(shop / ".crush" / "crush.db")
    moved = isolated_env / "crush-data" / "docs"
    builder.build(moved / "crush.db")
    conn = sqlite3.connect(moved / "crush.db")
    with conn:  # a different project: other session ids
        renamed = "CASE WHEN {0} LIKE 'title-%' THEN 'title-docs-' || substr({0}, 7) ELSE 'docs-' || {0} END"
        conn.execute(f"UPDATE messages SET session_id = {renamed.format('session_id')}")
        conn.execute(f"UPDATE sessions SET id = {renamed.format('id')}")
    conn.close()
    registry = isolated_env / ".local" / "share" / "crush" / "projects.json"
    registry.parent.mkdir(parents=True)
    registry.write_text(json.dumps({"projects": [
        {"path": str(docs), "data_dir": str(moved), "last_accessed": "2026-05-28T20:30:00Z"},
        {"path": str(shop), "data_dir": str(shop / ".crush"), "last_accessed": "2026-05-28T20:20:00Z"},
        {"path": str(isolated_env / "gone"), "data_dir": str(isolated_env / "gone" / ".crush"),
         "last_accessed": "2026-01-01T00:00:00Z"},
    ]}, indent=2))
    return {"shop": shop, "docs": docs, "moved": moved, "registry": registry}


def test_default_root_and_the_variables_that_move_it(isolated_env, monkeypatch):
    assert crush.default_roots() == [isolated_env / ".local" / "share" / "crush"]
    monkeypatch.setenv("XDG_DATA_HOME", str(isolated_env / "xdg"))
    assert crush.default_roots() == [isolated_env / "xdg" / "crush"]
    monkeypatch.setenv("CRUSH_GLOBAL_DATA", str(isolated_env / "cg"))
    assert crush.default_roots() == [isolated_env / "cg"]


def test_the_registry_finds_every_project_database(machine):
    [root] = crush.default_roots()
    units = list(crush.discover(root))
    assert [(u.session_id, u.path) for u in units] == [
        (f"docs-{MAIN}", machine["moved"] / "crush.db"), (f"docs-{TASK}", machine["moved"] / "crush.db"),
        (MAIN, machine["shop"] / ".crush" / "crush.db"), (TASK, machine["shop"] / ".crush" / "crush.db")]
    sessions = {u.session_id: crush.parse(u) for u in units}
    assert sessions[f"docs-{MAIN}"].cwd == str(machine["docs"])  # the moved data dir, matched in the registry
    assert sessions[MAIN].cwd == str(machine["shop"])
    assert sessions[MAIN].workdir == crush.workdir_facet(str(machine["shop"]))


def test_a_project_a_data_dir_or_a_database_is_a_root_too(machine):
    db = machine["shop"] / ".crush" / "crush.db"
    for root in (machine["shop"], machine["shop"] / ".crush", db):
        assert [u.session_id for u in crush.discover(root)] == [MAIN, TASK]


def test_main_session(machine):
    main = sessions_by_id(crush, machine["shop"])[MAIN]
    assert_well_formed(main)
    assert [t.turn_uuid for t in main.turns] == ["m01", "m02", "m03", "m04", "m05", "m06", "m07"]
    assert [shape(t) for t in main.turns[:3]] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "view"), ("tool_use", "bash")]),
        ("tool", [("tool_result", "view"), ("tool_result", "bash")]),
    ]
    assert [t.ts for t in main.turns[:2]] == ["2026-05-28T20:26:40.000Z", "2026-05-28T20:26:42.000Z"]
    assert (main.parent_session_id, main.is_subagent) == (None, False)
    bang = turn(main, "m06")
    assert [(b.block_type, b.tool_name, b.command, b.exit_code, b.text) for b in bang.blocks] == [
        ("tool_use", "bash", "git status --short", None, "git status --short"),
        ("tool_result", "bash", None, 1, "M cart.py")]
    texts = [b.text for t in main.turns for b in t.blocks]
    assert "Summary: fixed cart rounding." not in texts and "Now I will also" not in texts


def test_provenance(machine):
    main = sessions_by_id(crush, machine["shop"])[MAIN]
    uses = {b.tool_use_id: b for t in main.turns for b in t.blocks if b.block_type == "tool_use" and b.tool_use_id}
    assert set(uses) == {"c1", "c2", "c4", "c5", "c6"}  # c3's arguments were still streaming
    assert uses["c1"].files == (FileTouch("/home/dev/shop/cart.py", "read"),)
    assert uses["c2"].command == "pytest -q tests/test_cart.py"
    assert uses["c2"].text == '{"command": "pytest -q tests/test_cart.py", "description": "Run cart tests"}'
    assert uses["c4"].files == (FileTouch("/home/dev/shop/cart.py", "edit"),)
    assert uses["c5"].files == (FileTouch("/home/dev/shop/CHANGELOG.md", "write"),)
    assert uses["c6"].files == (FileTouch("/home/dev/shop/money.py", "edit"),)


def test_task_and_title_sessions(machine):
    found = sessions_by_id(crush, machine["shop"])
    assert set(found) == {MAIN, TASK}
    assert (found[TASK].parent_session_id, found[TASK].is_subagent) == (MAIN, True)


def test_a_message_rewritten_in_place_changes_the_signature(machine):
    db = machine["shop"] / ".crush" / "crush.db"
    before = {u.session_id: u for u in crush.discover(db)}[MAIN]
    conn = sqlite3.connect(db)
    with conn:  # the streaming message completes within the same second
        parts = [builder.part("text", text="Now I will also round the tax."), builder.FINISH]
        conn.execute("UPDATE messages SET parts = ?, finished_at = updated_at WHERE id = 'm09'", (json.dumps(parts),))
    conn.close()
    after = {u.session_id: u for u in crush.discover(db)}[MAIN]
    assert after.signature != before.signature
    session = crush.parse(after)
    assert [t.turn_uuid for t in session.turns] == ["m01", "m02", "m03", "m04", "m05", "m06", "m07", "m09"]


def test_bad_rows_cost_only_themselves(machine):
    db = machine["shop"] / ".crush" / "crush.db"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE messages SET parts = 'not json' WHERE id = 'm03'")
        conn.execute("UPDATE messages SET parts = '{\"type\": \"text\"}' WHERE id = 'm05'")
        conn.execute("UPDATE messages SET parts = ? WHERE id = 'm01'", (b'[{"type":"text","data":{"text":"caf\xff"}}]',))
        conn.execute("UPDATE messages SET parts = ? WHERE id = 'm07'", (json.dumps([
            {"type": "text", "data": "not an object"}, {"type": "tool_call", "data": {"id": 3, "input": 7}},
            {"type": "text", "data": {"text": "y" * 2_000_000}}, builder.FINISH]),))
    conn.close()
    main = sessions_by_id(crush, machine["shop"])[MAIN]
    assert_well_formed(main)
    assert [w.message.split(":")[0] for w in main.warnings] == ["message m03", "message m05"]
    assert all(w.line > 0 and w.path == str(db) for w in main.warnings)
    assert turn(main, "m01").blocks[0].text == "caf\ufffd"
    assert [b.block_type for b in turn(main, "m07").blocks] == ["tool_use", "text"]


def test_a_damaged_registry_still_finds_direct_roots(machine):
    machine["registry"].write_text("{not json")
    assert list(crush.discover(machine["registry"].parent)) == []
    assert len(list(crush.discover(machine["shop"]))) == 2


def test_unreadable_databases_are_read_errors(machine, monkeypatch, isolated_env):
    db = machine["shop"] / ".crush" / "crush.db"
    [unit, _] = crush.discover(db)
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            crush.parse(unit)
    assert_corrupt_database_is_a_read_error(crush, isolated_env / "broken" / ".crush" / "crush.db",
                                            isolated_env / "broken")


def test_a_parsed_session_chunks(machine):
    chunks = list(chunk_session(sessions_by_id(crush, machine["shop"])[MAIN]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
