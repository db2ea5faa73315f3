"""Kilo Code: the Kilo CLI's kilo.db (OpenCode's schema under Kilo's names) and the classic
extension's task folders (funes/agents/kilo/FORMAT.md), over a database built by
tests/fixtures/agents/kilo_code/make_kilo_db.py and a task folder in tests/fixtures/agents/kilo_code."""

from __future__ import annotations

from pathlib import Path

import pytest

from funes.agents.kilo import AGENT
from funes.agents.kilo import parser as kilo
from funes.traces.model import FileTouch
from paths import FIXTURES
from trace_helpers import assert_well_formed, fixture_module, sessions_by_id, shape

builder = fixture_module("agents/kilo_code/make_kilo_db.py")
STORAGE = FIXTURES / "agents" / "kilo_code" / "globalStorage" / "kilocode.kilo-code"
TASK = "0f6c2a9e-3b1d-4c5e-9a7b-1d2e3f4a5b6c"


@pytest.fixture(autouse=True)
def no_kilo_env(monkeypatch):
    for name in ("XDG_DATA_HOME", "KILO_DB"):
        monkeypatch.delenv(name, raising=False)


def test_the_data_folder_and_what_moves_it(isolated_env, monkeypatch):
    data = isolated_env / ".local" / "share" / "kilo"
    assert AGENT.roots()[0] == data
    monkeypatch.setenv("XDG_DATA_HOME", str(isolated_env / "xdg"))
    monkeypatch.setenv("KILO_DB", "/srv/kilo/sessions.db")
    assert AGENT.roots()[:2] == [isolated_env / "xdg" / "kilo", Path("/srv/kilo/sessions.db")]
    assert any(root.name == "kilocode.kilo-code" for root in AGENT.roots())


def test_the_cli_database(isolated_env):
    data = isolated_env / ".local" / "share" / "kilo"
    builder.build(data / "kilo.db")
    (data / "opencode.db").write_bytes(b"")  # OpenCode's name: not Kilo's database
    found = sessions_by_id(kilo, data)
    assert list(found) == [builder.MAIN]  # the session without messages has no unit
    session = found[builder.MAIN]
    assert_well_formed(session)
    assert (session.harness, session.cwd, session.workdir, session.warnings) == (
        "kilo_code", "/home/dev/invoices", "-home-dev-invoices", [])
    assert [shape(x) for x in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "read"), ("tool_use", "bash")]),
        ("tool", [("tool_result", "read")]),
        ("tool", [("tool_result", "bash")]),
        ("assistant", [("text", None)]),
        ("user", [("text", None)]),
    ]
    calls = [b for x in session.turns for b in x.blocks if b.block_type == "tool_use"]
    assert [(b.files, b.command) for b in calls] == [
        ((FileTouch("/home/dev/invoices/vat.py", "read"),), None), ((), "pytest -q tests/test_vat.py")]
    assert session.turns[3].blocks[0].exit_code == 2


def test_a_classic_extension_task(isolated_env):
    [session] = sessions_by_id(kilo, STORAGE).values()
    assert_well_formed(session)
    assert (session.session_id, session.harness, session.cwd) == (TASK, "kilo_code", "/home/dev/billing")
    assert session.turns[0].blocks[0].text == "The CSV export drops the currency column. Put it back."
    assert [shape(x) for x in session.turns][1] == ("assistant", [("text", None), ("tool_use", "read_file")])
    edits = [f for x in session.turns for b in x.blocks for f in b.files if f.action == "edit"]
    assert edits == [FileTouch("billing/export.py", "edit")]
    # the task folder, its history file and the tasks folder name the same one task
    folder = STORAGE / "tasks" / TASK
    for root in (STORAGE / "tasks", folder, folder / "api_conversation_history.json"):
        assert [unit.session_id for unit in kilo.discover(root)] == [TASK]


def test_the_cli_data_folder_is_not_walked_for_tasks(isolated_env):
    data = isolated_env / ".local" / "share" / "kilo"
    (data / "snapshot" / "deep").mkdir(parents=True)
    assert list(kilo.discover(data)) == []
