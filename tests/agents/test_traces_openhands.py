"""OpenHands CLI conversations (funes/agents/openhands/parser.py) over tests/fixtures/agents/openhands,
written in the shapes openhands-sdk 1.21 records (funes/agents/openhands/FORMAT.md): a conversation
folder with base_state.json and one JSON file per event."""

from __future__ import annotations

import json
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.openhands import parser as openhands
from funes.chunking import chunk_session
from funes.traces.model import FileTouch
from trace_helpers import FIXTURES, assert_well_formed, sessions_by_id, shape, texts

ROOT = FIXTURES / "agents" / "openhands" / "conversations"
SID = "5f1c0a2e9b7d4c3a8e6f1d2c3b4a5968"


def test_discovery_finds_the_conversation_from_any_level():
    for where in (ROOT, ROOT / SID, ROOT / SID / "events"):
        assert [unit.session_id for unit in openhands.discover(where)] == [SID]


def _event(index: int) -> str:
    return f"event-{index:05d}-0c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e{index}.json"


def test_recorded_conversation():
    session = sessions_by_id(openhands, ROOT)[SID]
    assert_well_formed(session)
    assert session.warnings == []
    assert (session.harness, session.cwd, session.workdir) == ("openhands", "/home/dev/acme-api", "-home-dev-acme-api")
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("tool_use", "terminal")]),
        ("tool", [("tool_result", "terminal")]),
        ("assistant", [("tool_use", "file_editor")]),
        ("tool", [("tool_result", "file_editor")]),
        ("assistant", [("tool_use", "grep")]),
        ("assistant", [("tool_use", "file_editor")]),
        ("tool", [("tool_result", "file_editor")]),
        ("assistant", [("text", None)]),
    ]
    ask, act, result, edit, _, grep, invalid, error, _ = session.turns
    assert (ask.turn_uuid, ask.ts) == ("0c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e1", "2025-11-20T10:00:01.000Z")
    assert act.parent_uuid == ask.turn_uuid and act.blocks[1].command == "pytest tests/test_limiter.py -q"
    assert "The bucket refill may use wall time." in act.blocks[0].text
    assert "Let me run the limiter tests." in act.blocks[0].text
    assert result.blocks[0].exit_code == 1 and result.blocks[0].tool_use_id == "toolu_01"
    assert edit.blocks[0].files == (FileTouch("/home/dev/acme-api/limiter.py", "edit"),)
    assert edit.blocks[0].command is None
    # grep's path is the folder searched, not a file it touched
    assert (grep.blocks[0].files, grep.blocks[0].command) == ((), None)
    # arguments that failed validation: no action, the raw arguments, then the error as the result
    assert invalid.blocks[0].text == '{"command": "view"}'
    assert error.blocks[0].tool_use_id == "toolu_04" and "path: Field required" in error.blocks[0].text
    assert "You are OpenHands agent" not in " ".join(texts(session))


def test_events_are_ordered_by_their_index_as_a_number(tmp_path):
    folder = tmp_path / SID / "events"
    folder.mkdir(parents=True)
    for index, word in ((99999, "first"), (100000, "second")):
        (folder / f"event-{index:05d}-0c1d2e3f-4a5b-4c6d.json").write_text(json.dumps(
            {"kind": "MessageEvent", "id": word, "source": "user",
             "llm_message": {"role": "user", "content": [{"type": "text", "text": word}]}}))
    assert [turn.turn_uuid for turn in sessions_by_id(openhands, tmp_path)[SID].turns] == ["first", "second"]


def test_a_bad_event_file_costs_only_that_event(tmp_path):
    folder = tmp_path / SID
    shutil.copytree(ROOT / SID, folder)
    good = texts(sessions_by_id(openhands, ROOT)[SID])
    (folder / "events" / _event(2)).write_text('{"kind": "ActionEvent", "id": "a3", "act')
    (folder / "events" / _event(9)).write_text('{"kind": "MessageEvent", "llm_message": 5}')
    session = sessions_by_id(openhands, tmp_path)[SID]
    assert_well_formed(session)
    assert texts(session) == [text for text in good if "pytest" not in text and "wall time" not in text
                              and "time.monotonic() so clock" not in text]
    assert [(w.path.rsplit("/", 1)[-1], w.message) for w in session.warnings] == [
        (_event(2), "not JSON (still being written?)"),
        (_event(9), "event of an unexpected shape")]
    assert all("\n" not in str(w) for w in session.warnings)


def test_a_parsed_conversation_chunks():
    chunks = list(chunk_session(sessions_by_id(openhands, ROOT)[SID]))
    assert {c.block_type for c in chunks} == {"text", "thinking", "tool_use", "tool_result"}


_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                       max_leaves=8)
_events = st.fixed_dictionaries({"kind": st.sampled_from(["MessageEvent", "ActionEvent", "ObservationEvent",
                                                          "AgentErrorEvent", "UserRejectObservation", "Other"])},
                                optional={"source": st.sampled_from(["user", "agent", "environment"]), "id": _values,
                                          "llm_message": _values, "action": _values, "observation": _values,
                                          "thought": _values, "timestamp": _values, "tool_call": _values,
                                          "error": _values, "rejection_reason": _values,
                                          "responses_reasoning_item": _values})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_events, max_size=5))
def test_any_event_shapes_parse_without_raising(tmp_path_factory, events):
    folder = tmp_path_factory.mktemp("oh") / "c1"
    (folder / "events").mkdir(parents=True)
    for index, event in enumerate(events):
        (folder / "events" / f"event-{index:05d}-e.json").write_text(json.dumps(event))
    for unit in openhands.discover(folder):
        assert_well_formed(openhands.parse(unit))
