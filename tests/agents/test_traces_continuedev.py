"""Continue: session files in ~/.continue/sessions (funes/agents/continuedev/FORMAT.md), over
sessions written in the IDE's and the CLI's shapes in tests/fixtures/agents/continue_dev."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.agents.continuedev import AGENT
from funes.agents.continuedev import parser as continuedev
from funes.chunking import chunk_session
from funes.traces.model import FileTouch
from paths import FIXTURES
from trace_helpers import assert_well_formed, sessions_by_id, shape

SESSIONS = FIXTURES / "agents" / "continue_dev" / "sessions"
IDE, CLI = "3f2b8c1e-6d4a-4f5b-9c7e-2a1b0c9d8e7f", "a7d9e2f4-1b3c-4e5d-8f6a-7b8c9d0e1f2a"


@pytest.fixture(autouse=True)
def no_continue_env(monkeypatch):
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)


def test_the_home_and_what_moves_it(isolated_env, monkeypatch):
    assert continuedev.default_roots() == [isolated_env / ".continue" / "sessions"]
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(isolated_env / "cg"))
    assert continuedev.default_roots() == [isolated_env / "cg" / "sessions"]


def test_discovery_skips_the_session_list():
    assert [u.session_id for u in continuedev.discover(SESSIONS)] == [IDE, CLI]
    assert [u.session_id for u in continuedev.discover(SESSIONS.parent)] == [IDE, CLI]  # the home itself
    assert list(continuedev.discover(SESSIONS / "sessions.json")) == []
    assert AGENT.claims_location(Path("/home/dev/.continue/sessions") / f"{IDE}.json") == 2


def test_an_ide_session():
    session = sessions_by_id(continuedev, SESSIONS)[IDE]
    assert_well_formed(session)
    assert (session.cwd, session.workdir, session.warnings) == ("/home/dev/queue worker", "-home-dev-queue-worker", [])
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None)]),
        ("assistant", [("text", None), ("tool_use", "read_file")]),
        ("tool", [("tool_result", "read_file")]),  # from the call's state; the tool message repeats it
        ("assistant", [("text", None), ("tool_use", "run_terminal_command")]),
        ("tool", [("tool_result", "run_terminal_command")]),
        ("assistant", [("text", None)]),
    ]
    ask = session.turns[0]
    assert ask.blocks[0].text == "Why does test_retry fail one run in ten?"  # not the attached file
    assert ask.ts == "2026-06-09T07:26:40.000Z"  # sessions.json's dateCreated
    calls = [b for x in session.turns for b in x.blocks if b.block_type == "tool_use"]
    assert [(b.files, b.command) for b in calls] == [
        ((FileTouch("worker/retry.py", "read"),), None), ((), "pytest -q tests/test_retry.py --count 20")]


def test_a_cli_session():
    session = sessions_by_id(continuedev, SESSIONS)[CLI]
    assert_well_formed(session)
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("tool_use", "Edit"), ("tool_use", "Bash")]),
        ("tool", [("tool_result", "Edit")]),
        ("tool", [("tool_result", "Bash")]),
        ("assistant", [("text", None)]),
    ]
    assert session.turns[1].ts == "2026-06-09T10:13:20.000Z"  # the reasoning's start
    assert [b.files or b.command for b in session.turns[1].blocks[1:]] == [
        (FileTouch("/home/dev/cfgtool/cfg.py", "edit"),), "grep -rn load_cfg ."]
    assert {c.block_type for c in chunk_session(session)} == {"text", "thinking", "tool_use", "tool_result"}


def test_without_the_session_list_the_file_time_is_used(tmp_path):
    shutil.copy(SESSIONS / f"{CLI}.json", tmp_path)
    session = sessions_by_id(continuedev, tmp_path)[CLI]
    assert session.turns[0].ts and session.turns[0].ts != session.turns[1].ts


def test_a_half_written_file_keeps_its_whole_items(tmp_path):
    text = (SESSIONS / f"{IDE}.json").read_text()
    (tmp_path / f"{IDE}.json").write_text(text[: text.index('"role": "tool"')])
    session = sessions_by_id(continuedev, tmp_path)[IDE]
    assert_well_formed(session)
    assert [x.role for x in session.turns] == ["user", "assistant", "assistant", "tool"] and session.warnings


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
items = json_values | st.fixed_dictionaries({
    "message": json_values | st.fixed_dictionaries({
        "role": st.sampled_from(["user", "assistant", "thinking", "tool", "system"]) | json_values,
        "content": json_values, "toolCalls": json_values, "toolCallId": json_values}),
    "toolCallStates": json_values | st.lists(st.fixed_dictionaries({
        "toolCallId": json_values, "status": json_values, "output": json_values, "toolCall": json_values}),
        max_size=2),
    "reasoning": json_values})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=json_values | st.fixed_dictionaries({"workspaceDirectory": json_values,
                                                      "history": st.lists(items, max_size=5) | json_values}))
def test_odd_sessions_parse(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("continue") / "odd.json"
    path.write_text(json.dumps(document))
    for unit in continuedev.discover(path):
        assert_well_formed(continuedev.parse(unit))
