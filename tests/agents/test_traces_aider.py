"""Aider chat logs (funes/agents/aider/parser.py) over tests/fixtures/agents/aider
(format note: funes/agents/aider/FORMAT.md)."""

from __future__ import annotations

import shutil
import time

import pytest

from funes.chunking import chunk_session
from funes.errors import TraceReadError
from funes.agents.aider import parser as aider
from funes.traces.model import FileTouch, SourceUnit
from trace_helpers import FIXTURES, assert_well_formed, shape, texts


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """Aider writes local wall-clock times; read them as UTC here."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def projects(tmp_path, monkeypatch):
    for name in ("FUNES_AIDER_ROOTS", "AIDER_CHAT_HISTORY_FILE"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "home" / "code"
    shutil.copytree(FIXTURES / "agents" / "aider" / "projects", root)
    return root


def _log(projects):
    return projects / "todo" / ".aider.chat.history.md"


def _sessions(root):
    return [aider.parse(unit) for unit in aider.discover(root)]


def test_one_unit_per_launch(projects):
    units = list(aider.discover(projects))
    assert [u.path for u in units] == [_log(projects)] * 2
    first, second = units
    assert first.session_id.startswith("20260402T140509-") and second.session_id.startswith("20260403T091244-")
    assert first.session_id.split("-", 1)[1] == second.session_id.split("-", 1)[1]  # the file's hash
    size = _log(projects).stat().st_size
    start = _log(projects).read_bytes().index(b"# aider chat started at 2026-04-03")
    assert first.signature == f"1-{start}"  # an earlier launch never changes
    assert second.signature == f"{start}:{size}:{_log(projects).stat().st_mtime_ns}"


def test_bounded_search_from_home_and_configured_roots(projects, tmp_path, monkeypatch):
    home = tmp_path / "home"
    deep = home / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    shutil.copy(_log(projects), deep / ".aider.chat.history.md")  # five folders down: too deep
    hidden = home / ".cache" / "proj"
    hidden.mkdir(parents=True)
    shutil.copy(_log(projects), hidden / ".aider.chat.history.md")
    deps = home / "code" / "todo" / "node_modules" / "pkg"
    deps.mkdir(parents=True)
    shutil.copy(_log(projects), deps / ".aider.chat.history.md")
    assert aider.default_roots() == [home]
    found = {u.path for root in aider.default_roots() for u in aider.discover(root)}
    assert found == {_log(projects)}
    monkeypatch.setenv("FUNES_AIDER_ROOTS", f"{deep.parent}{':'}{tmp_path / 'elsewhere'}")
    monkeypatch.setenv("AIDER_CHAT_HISTORY_FILE", str(hidden / ".aider.chat.history.md"))
    assert aider.default_roots() == [deep.parent, tmp_path / "elsewhere", hidden / ".aider.chat.history.md"]
    found = {u.path for root in aider.default_roots() if root.exists() for u in aider.discover(root)}
    assert found == {deep / ".aider.chat.history.md", hidden / ".aider.chat.history.md"}


def test_first_launch_turns_tools_and_provenance(projects):
    session = _sessions(projects)[0]
    assert_well_formed(session)
    assert session.warnings == []
    cwd = str(_log(projects).parent)
    assert (session.harness, session.cwd, session.workdir) == ("aider", cwd, cwd.replace("/", "-").replace("_", "-"))
    assert [shape(t) for t in session.turns] == [
        ("tool", [("tool_result", "aider")]),  # the banner, less version, model and repo lines
        ("user", [("text", None)]),
        ("assistant", [("text", None), ("tool_use", "edit")]),
        ("tool", [("tool_result", "edit")]),
        ("user", [("tool_use", "run")]),
        ("tool", [("tool_result", "run")]),
        ("user", [("text", None)]),
        ("assistant", [("text", None), ("tool_use", "edit")]),
        ("tool", [("tool_result", "edit")]),
        ("user", [("tool_use", "add")]),
        ("tool", [("tool_result", "add")]),
    ]
    banner, ask, fix, applied, run, run_report, more, test, applied2, add, added = session.turns
    assert banner.blocks[0].text == "Added todo/store.py to the chat."
    assert ask.blocks[0].text == "The done flag is never saved. Fix Store.mark_done"
    # a reply's own "#### heading" and "> quote" (no trailing line break) stay in the reply
    assert "#### Heading inside a reply\n\n> a quoted line inside the reply" in fix.blocks[0].text
    assert (fix.blocks[1].files, fix.blocks[1].tool_use_id) == ((FileTouch("todo/store.py", "edit"),),
                                                                applied.blocks[0].tool_use_id)
    assert applied.blocks[0].text == ("Applied edit to todo/store.py\n"
                                      "Commit 3e1f0c2 fix: persist the done flag in Store.mark_done")  # no Tokens line
    assert (run.blocks[0].command, run.blocks[0].tool_use_id) == ("pytest -q tests/test_store.py",
                                                                  run_report.blocks[0].tool_use_id)
    assert more.blocks[0].text == "It passes now. Also add a test\n\nfor marking an unknown key"
    assert add.blocks[0].files == (FileTouch("todo/cli.py", "read"), FileTouch("docs/usage notes.md", "read"))
    assert [t.turn_uuid for t in session.turns] == [f"{session.session_id}:{n}" for n in range(11)]
    # times: the launch, then each input's time in .aider.input.history
    assert [t.ts for t in session.turns] == ["2026-04-02T14:05:09.000Z"] + ["2026-04-02T14:05:31.118Z"] * 3 + [
        "2026-04-02T14:07:02.440Z"] * 2 + ["2026-04-02T14:08:15.010Z"] * 3 + ["2026-04-02T14:10:40.774Z"] * 2


def test_second_launch_skips_blank_input(projects):
    session = _sessions(projects)[1]
    assert [shape(t) for t in session.turns] == [("user", [("text", None)]), ("assistant", [("text", None)])]
    assert session.turns[0].turn_uuid == f"{session.session_id}:1"  # the blank input kept its number
    assert session.turns[0].ts == "2026-04-03T09:13:20.500Z"


def test_without_input_history_every_turn_has_the_launch_time(projects):
    (_log(projects).parent / ".aider.input.history").unlink()
    assert {t.ts for t in _sessions(projects)[0].turns} == {"2026-04-02T14:05:09.000Z"}


def test_appending_keeps_ids_and_grows_only_the_last_launch(projects):
    log = _log(projects)
    before = _sessions(projects)
    units_before = list(aider.discover(projects))
    with open(log, "a") as handle:
        handle.write("#### and --quiet?  \n\n`--quiet` is parsed the same way.\n\n"
                     "# aider chat started at 2026-04-03 09:12:44\n\n#### same second, new launch  \n")
    units = list(aider.discover(projects))
    assert units[0] == units_before[0]  # same signature: the first launch is not parsed again
    assert units[1].signature != units_before[1].signature
    assert units[2].session_id == units[1].session_id + "-2"
    after = _sessions(projects)
    assert [t.turn_uuid for t in after[1].turns][:2] == [t.turn_uuid for t in before[1].turns]
    assert texts(after[1])[2:] == ["and --quiet?", "`--quiet` is parsed the same way."]
    assert texts(after[2]) == ["same second, new launch"]


def test_text_before_any_header_and_odd_bytes(projects):
    log = _log(projects)
    log.write_bytes(b"#### typed before aider wrote headers  \n\nan old reply \xff\xfe\n" + log.read_bytes()
                    + b"\n#### cut off mid-wri")
    sessions = _sessions(projects)
    assert sessions[0].session_id.startswith("unstamped-")
    assert texts(sessions[0]) == ["typed before aider wrote headers", "an old reply \ufffd\ufffd"]
    assert sessions[0].turns[0].ts == ""
    last = sessions[-1]  # Aider's own line without its line break yet: left for the next read
    assert texts(last)[-1] == "`main()` parses the flag but prints with `str()` regardless."
    lines = log.read_bytes().count(b"\n") + 1
    assert [(w.line, w.message) for w in last.warnings] == [(lines, "partial last line (still being written?)")]
    for session in sessions:
        assert_well_formed(session)


def test_launch_gone_from_a_rewritten_file(projects):
    unit = list(aider.discover(projects))[1]
    log = _log(projects)
    log.write_text(log.read_text().split("# aider chat started at 2026-04-03")[0])
    session = aider.parse(unit)
    assert session.turns == [] and "no longer in the file" in session.warnings[0].message


def test_vanished_or_unreadable_log_is_a_read_error(projects):
    with pytest.raises(TraceReadError, match="cannot read"):
        aider.parse(SourceUnit("aider", projects / "gone.md", "x", "1:1"))
    with pytest.raises(TraceReadError, match="cannot read"):
        aider.parse(SourceUnit("aider", projects, "x", "1:1"))


def test_huge_reply(projects):
    log = _log(projects)
    log.write_text(log.read_text() + "\n#### dump it  \n\n" + "y" * 10_000_000 + "\n")
    assert len(_sessions(projects)[1].turns[-1].blocks[0].text) == 10_000_000


def test_launches_flow_through_chunking(projects):
    for session in _sessions(projects):
        assert {c.session_id for c in chunk_session(session)} == {session.session_id}
