"""Factory Droid: JSON Lines sessions in ~/.factory/sessions (funes/agents/droid/FORMAT.md), over a
session written in that shape in tests/fixtures/agents/factory_droid."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents import detect_agent
from funes.agents.droid import AGENT
from funes.agents.droid import parser as droid
from funes.chunking import chunk_session
from funes.traces.model import FileTouch
from paths import FIXTURES
from trace_helpers import assert_well_formed, only_unit, shape

SESSIONS = FIXTURES / "agents" / "factory_droid" / "sessions"
SESSION = "5c0d4e1f-8a2b-4c3d-9e4f-6a7b8c9d0e1f"
FILE = SESSIONS / "-home-dev-ledger" / f"{SESSION}.jsonl"


def test_the_session_folders(isolated_env):
    assert droid.default_roots() == [isolated_env / ".factory" / "sessions", isolated_env / ".factory" / "projects"]
    assert [u.session_id for u in droid.discover(SESSIONS)] == [SESSION]  # the settings file beside it is not one
    assert AGENT.claims_location(Path("/home/dev/.factory/sessions/-x") / f"{SESSION}.jsonl") == 2


def test_a_copied_file_is_recognised_by_its_first_record(tmp_path):
    copy = tmp_path / "export.jsonl"
    copy.write_bytes(FILE.read_bytes())
    assert detect_agent(copy) is AGENT


def test_a_session():
    session = droid.parse(only_unit(droid, FILE))
    assert_well_formed(session)
    assert (session.cwd, session.workdir) == ("/home/dev/ledger", "-home-dev-ledger")
    assert [w.message for w in session.warnings] == ["partial last line (still being written?)"]
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "Read"), ("tool_use", "Execute")]),
        ("tool", [("tool_result", "Read"), ("tool_result", "Execute")]),
        ("assistant", [("tool_use", "Edit"), ("tool_use", "ApplyPatch")]),
        ("tool", [("tool_result", "Edit"), ("tool_result", "ApplyPatch")]),
        ("assistant", [("text", None)]),
    ]
    ask = session.turns[0]
    assert ask.blocks[0].text == "The ledger balance check fails after the import; find out why."  # no reminder
    assert (ask.turn_uuid, ask.ts, session.turns[1].parent_uuid) == ("m01", "2026-05-04T08:00:00.000Z", "m01")
    calls = [b for x in session.turns for b in x.blocks if b.block_type == "tool_use"]
    assert [(b.files, b.command) for b in calls] == [
        ((FileTouch("/home/dev/ledger/importer.py", "read"),), None), ((), "pytest -q tests/test_balance.py"),
        ((FileTouch("/home/dev/ledger/importer.py", "edit"),), None),
        ((FileTouch("tests/test_import_types.py", "write"),), None)]
    assert {c.block_type for c in chunk_session(session)} == {"text", "thinking", "tool_use", "tool_result"}


def test_reminders_are_cut_wherever_they_stand():
    assert droid.without_reminders("a <system-reminder>x</system-reminder> b") == "a  b"
    assert droid.without_reminders("<system-reminder>unclosed") == "<system-reminder>unclosed"
    assert droid.without_reminders("plain") == "plain"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
parts = json_values | st.fixed_dictionaries({
    "type": st.sampled_from(["text", "thinking", "tool_use", "tool_result"]) | json_values, "text": json_values,
    "thinking": json_values, "name": json_values, "input": json_values, "content": json_values,
    "tool_use_id": json_values})
records = json_values | st.fixed_dictionaries({
    "type": st.sampled_from(["session_start", "message"]) | json_values, "id": json_values, "cwd": json_values,
    "timestamp": json_values, "parentId": json_values,
    "message": json_values | st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]) | json_values,
                                                    "content": json_values | st.lists(parts, max_size=4)})})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(records.map(json.dumps) | st.text(max_size=20), max_size=6))
def test_odd_records_parse(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("droid") / "odd.jsonl"
    path.write_text("\n".join(lines))
    for unit in droid.discover(path):
        assert_well_formed(droid.parse(unit))
