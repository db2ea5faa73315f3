"""Forge: conversations in the home's .forge.db (funes/agents/forge/FORMAT.md), over a database
built by tests/fixtures/agents/forge/make_forge_db.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.forge import parser as forge
from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.traces.model import FileTouch
from trace_helpers import (assert_corrupt_database_is_a_read_error, assert_well_formed, fixture_module,
                           locked_by_a_writer, sessions_by_id, shape, turn)

builder = fixture_module("agents/forge/make_forge_db.py")
MAIN, EMPTY, OTHER = builder.MAIN, builder.EMPTY, builder.OTHER


@pytest.fixture(autouse=True)
def no_forge_env(monkeypatch):
    monkeypatch.delenv("FORGE_CONFIG", raising=False)


@pytest.fixture
def db(isolated_env) -> Path:
    return builder.build(isolated_env / ".forge" / ".forge.db")


def t(n: int) -> str:
    return f"{MAIN}:{n}"


def test_the_home_and_what_moves_it(isolated_env, monkeypatch):
    assert forge.default_roots() == [isolated_env / ".forge" / ".forge.db"]
    (isolated_env / "forge").mkdir()  # an install from before the move to ~/.forge
    assert forge.default_roots() == [isolated_env / "forge" / ".forge.db"]
    monkeypatch.setenv("FORGE_CONFIG", str(isolated_env / "cfg"))
    assert forge.default_roots() == [isolated_env / "cfg" / ".forge.db"]


def test_discovery_skips_conversations_without_context(db):
    units = list(forge.discover(db.parent))
    assert [u.session_id for u in units] == [MAIN, OTHER]
    assert [u.session_id for u in forge.discover(db)] == [MAIN, OTHER]
    assert list(forge.discover(db.parent.parent / "elsewhere")) == []


def test_main_conversation(db):
    session = sessions_by_id(forge, db)[MAIN]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("forge", "/home/dev/shop", "-home-dev-shop")
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read"), ("tool_use", "shell")]),
        ("tool", [("tool_result", "read")]),
        ("tool", [("tool_result", "shell")]),
        ("assistant", [("text", None), ("tool_use", "patch"), ("tool_use", "write"), ("tool_use", "remove")]),
        ("tool", [("tool_result", "patch")]),
        ("tool", [("tool_result", "write")]),
        ("tool", [("tool_result", "remove")]),
        ("user", [("text", None)]),
        ("assistant", [("text", None)]),
    ]
    ask = session.turns[0]
    assert (ask.turn_uuid, ask.parent_uuid, ask.ts) == (t(2), None, "2026-11-02T09:15:02.123Z")
    assert ask.blocks[0].text == "Why does the cart total drift by a cent?"  # raw_content, not the template
    assert turn(session, t(4)).parent_uuid == t(2)  # the droppable attachment in between is skipped
    assert turn(session, t(12)).blocks[0].text == "Does it still round half up?"
    assert turn(session, t(9)).blocks[0].text == "Created /home/dev/shop/CHANGELOG.md"  # an older build's bare record
    assert turn(session, t(10)).blocks[0].text == "Removed old_cart.py"  # a subagent's answer
    assert not any("base64" in block.text for x in session.turns for block in x.blocks)


def test_provenance(db):
    session = sessions_by_id(forge, db)[MAIN]
    calls = [b for x in session.turns for b in x.blocks if b.block_type == "tool_use"]
    assert [(b.tool_name, b.files, b.command) for b in calls] == [
        ("read", (FileTouch("/home/dev/shop/cart.py", "read"),), None),
        ("shell", (), "pytest -q tests/test_cart.py"),
        ("patch", (FileTouch("/home/dev/shop/cart.py", "edit"),), None),
        ("write", (FileTouch("/home/dev/shop/CHANGELOG.md", "write"),), None),
        ("remove", (FileTouch("/home/dev/shop/old_cart.py", "delete"),), None),  # arguments stored unparsed
    ]
    results = {b.tool_use_id: b for x in session.turns for b in x.blocks if b.block_type == "tool_result"}
    assert results["toolu_02"].exit_code == 1 and results["toolu_01"].exit_code is None


def test_other_conversation(db):
    other = sessions_by_id(forge, db)[OTHER]
    assert (other.cwd, [b.text for x in other.turns for b in x.blocks]) == (
        "/home/dev/blog", ["Rename the draft folder.", "Renamed drafts/ to posts/."])


def test_a_rewritten_context_changes_the_signature(db):
    before = {u.session_id: u for u in forge.discover(db)}[MAIN]
    context = builder.main_context()
    context["messages"].append(builder.text("User", "And the tax?", raw_content={"Text": "And the tax?"}))
    conn = sqlite3.connect(db)
    with conn:  # Forge rewrites the whole context; updated_at may not move within a test
        conn.execute("UPDATE conversations SET context = ? WHERE conversation_id = ?", (json.dumps(context), MAIN))
    conn.close()
    after = {u.session_id: u for u in forge.discover(db)}[MAIN]
    assert after.signature != before.signature
    assert forge.parse(after).turns[-1].blocks[0].text == "And the tax?"


def test_bad_messages_cost_only_themselves(db):
    context = builder.main_context()
    context["messages"][4] = "not a message"
    context["messages"][5] = {"message": {"tool": {"name": "read", "output": {"values": "x"}}}}
    context["messages"][12]["message"]["text"]["raw_content"] = {"Text": "caf\udcff"}
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE conversations SET context = ? WHERE conversation_id = ?",
                     (json.dumps(context), MAIN))
        conn.execute("UPDATE conversations SET context = 'not json' WHERE conversation_id = ?", (OTHER,))
    conn.close()
    found = sessions_by_id(forge, db)
    main = found[MAIN]
    assert_well_formed(main)
    assert [w.message for w in main.warnings] == [f"conversation {MAIN} message 4: unexpected shape "
                                                  "(TypeError: message is not an object)"]
    assert t(4) not in {x.turn_uuid for x in main.turns} and t(5) not in {x.turn_uuid for x in main.turns}
    assert found[OTHER].turns == [] and "context is not JSON" in found[OTHER].warnings[0].message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
odd_messages = json_values | st.fixed_dictionaries({"message": st.fixed_dictionaries({
    "text": st.fixed_dictionaries({
        "role": st.sampled_from(["System", "User", "Assistant"]) | json_values, "content": json_values,
        "raw_content": json_values, "tool_calls": json_values, "reasoning_details": json_values,
        "droppable": json_values}),
})}) | st.fixed_dictionaries({"tool": st.fixed_dictionaries({
    "name": json_values, "call_id": json_values,
    "output": json_values | st.fixed_dictionaries({"values": st.lists(json_values, max_size=3)})})})


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return builder.build(tmp_path_factory.mktemp("forge-template") / ".forge.db")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contexts=st.lists(json_values.map(json.dumps) | st.lists(odd_messages, max_size=5).map(
    lambda messages: json.dumps({"messages": messages})) | st.binary(max_size=30), max_size=4))
def test_odd_contexts_parse(tmp_path_factory, template, contexts):
    db = tmp_path_factory.mktemp("forge") / ".forge.db"
    shutil.copyfile(template, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany("INSERT INTO conversations (conversation_id, workspace_id, context) VALUES (?, 1, ?)",
                         [(f"odd-{n}", context) for n, context in enumerate(contexts)])
    conn.close()
    for unit in forge.discover(db):
        assert_well_formed(forge.parse(unit))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=3000))
def test_random_bytes_database(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("random") / ".forge.db"
    path.write_bytes(content)
    try:
        for unit in forge.discover(path):
            assert_well_formed(forge.parse(unit))
    except TraceReadError:
        pass  # a store that cannot be read as a whole is retried later


def test_unreadable_databases_are_read_errors(db, monkeypatch, isolated_env):
    [unit, _] = forge.discover(db)
    with locked_by_a_writer(db, monkeypatch):
        with pytest.raises(TraceReadError, match="locked"):
            forge.parse(unit)
    assert_corrupt_database_is_a_read_error(forge, isolated_env / "broken" / ".forge.db", isolated_env / "broken")


def test_a_parsed_session_chunks(db):
    chunks = list(chunk_session(sessions_by_id(forge, db)[MAIN]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}
