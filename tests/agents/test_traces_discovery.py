"""Harness detection and discovery over a temporary HOME laid out like real agent
homes, with and without the agents' environment variables."""

from __future__ import annotations

from pathlib import Path

import pytest

import funes.discovery as discovery
from funes.agents.claude import parser as claude
from funes.agents.codex import parser as codex
from funes.agents.hermes import parser as hermes
from funes.agents.pi import parser as pi
from funes.errors import UsageError
from trace_helpers import REAL, build_hermes_db, copy_fixture

CLAUDE_SID = "06ec42c3-2184-40c5-b0ee-98c3235b4c4c"
CODEX_SID = "019ef2fb-6574-7f83-bd99-9118713271f2"
PI_SID = "7028acdd-e85a-4fa0-88a5-71f4103333a0"
SUB_PARENT = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"


def lay_out_homes(claude_home: Path, codex_home: Path, pi_dir: Path, hermes_home: Path) -> None:
    project = claude_home / "projects" / "D--physics-earth"
    copy_fixture("claude_session.jsonl", project, f"{CLAUDE_SID}.jsonl")
    copy_fixture(f"as_claude_subagent/{SUB_PARENT}.jsonl", project)
    copy_fixture(f"as_claude_subagent/{SUB_PARENT}/subagents/agent-a0ad4f44468bdf20d.jsonl", project / SUB_PARENT / "subagents")
    copy_fixture(f"as_claude_subagent/{SUB_PARENT}/subagents/agent-a0ad4f44468bdf20d.meta.json", project / SUB_PARENT / "subagents")
    (project / SUB_PARENT / "tool-results").mkdir()
    (project / SUB_PARENT / "tool-results" / "toolu_1.txt").write_text("big output")
    (claude_home / "history.jsonl").write_text('{"display": "not a transcript"}\n')
    copy_fixture("codex_session.jsonl", codex_home / "sessions" / "2026" / "06" / "23",
                 f"rollout-2026-06-23T05-37-02-{CODEX_SID}.jsonl")
    copy_fixture("codex_real_sample.jsonl", codex_home / "archived_sessions",
                 "rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905.jsonl")
    copy_fixture("pi_session.jsonl", pi_dir / "sessions" / "--Users-gibbon-Desktop-pi-share-hf--",
                 f"2026-04-13T09-28-54-581Z_{PI_SID}.jsonl")
    build_hermes_db(hermes_home / "state.db")
    build_hermes_db(hermes_home / "profiles" / "work" / "state.db", legacy=True)


EXPECTED_KEYS = {
    f"claude_code--{CLAUDE_SID}", f"claude_code--{SUB_PARENT}", "claude_code--agent-a0ad4f44468bdf20d",
    f"codex--{CODEX_SID}", "codex--019b64e5-57fa-7463-b644-fba7e456f905",
    f"pi--{PI_SID}",
    "hermes--s_main", "hermes--s_rot_parent", "hermes--s_rot_child", "hermes--s_inplace", "hermes--s_sub",
}


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "HERMES_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_default_homes(clean_env):
    home = clean_env
    lay_out_homes(home / ".claude", home / ".codex", home / ".pi" / "agent", home / ".hermes")
    units = discovery.discover()
    assert {u.key for u in units} == EXPECTED_KEYS
    # the subagent transcript comes after every main session
    assert units[-1].key == "claude_code--agent-a0ad4f44468bdf20d"
    for unit in units:
        session = discovery.parse_unit(unit)
        assert session.key == unit.key  # discovery and parsing agree on the session id
    assert [u.key for u in discovery.discover(harness="pi")] == [f"pi--{PI_SID}"]
    assert {u.key for u in discovery.discover(harness="claude")} == {k for k in EXPECTED_KEYS if k.startswith("claude_code")}


def test_environment_variables_move_the_homes(clean_env, monkeypatch, tmp_path):
    roots = {name: tmp_path / "elsewhere" / name for name in ("claude", "codex", "pi", "hermes")}
    lay_out_homes(roots["claude"], roots["codex"], roots["pi"], roots["hermes"])
    # decoys in the default places must be ignored
    copy_fixture("pi_session.jsonl", clean_env / ".pi" / "agent" / "sessions" / "--x--", "decoy.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(roots["claude"]))
    monkeypatch.setenv("CODEX_HOME", str(roots["codex"]))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(roots["pi"]))
    monkeypatch.setenv("HERMES_HOME", str(roots["hermes"]))
    assert claude.default_roots() == [roots["claude"] / "projects"]
    assert codex.default_roots() == [roots["codex"] / "sessions", roots["codex"] / "archived_sessions"]
    assert pi.default_roots() == [roots["pi"] / "sessions"]
    assert hermes.default_roots() == [roots["hermes"]]
    assert {u.key for u in discovery.discover()} == EXPECTED_KEYS

    # a folder that names no agent is detected by what it holds
    assert discovery.detect_harness(roots["claude"]) == "claude_code"
    assert discovery.detect_harness(roots["codex"]) == "codex"
    assert discovery.detect_harness(roots["pi"]) == "pi"
    assert discovery.detect_harness(roots["hermes"]) == "hermes"
    assert {u.key for u in discovery.discover(roots["pi"])} == {f"pi--{PI_SID}"}
    assert len(discovery.discover(roots["hermes"])) == 5  # two databases, the same session ids


def test_detection_by_location(clean_env):
    home = clean_env
    lay_out_homes(home / ".claude", home / ".codex", home / ".pi" / "agent", home / ".hermes")
    project = home / ".claude" / "projects" / "D--physics-earth"
    cases = {
        home / ".claude" / "projects": "claude_code",
        project: "claude_code",
        project / f"{CLAUDE_SID}.jsonl": "claude_code",
        home / ".codex" / "sessions": "codex",
        home / ".codex": "codex",
        home / ".pi" / "agent" / "sessions": "pi",
        home / ".hermes": "hermes",
        home / ".hermes" / "profiles" / "work" / "state.db": "hermes",
        home / "export.parquet": "parquet",
    }
    for path, harness in cases.items():
        assert discovery.detect_harness(path) == harness, path


def test_detection_by_content(tmp_path):
    # line 1 of a Claude transcript may be a summary or queue operation
    claude_file = copy_fixture("claude_session.jsonl", tmp_path / "a")
    codex_file = copy_fixture("codex_session.jsonl", tmp_path / "b")
    pi_file = copy_fixture("pi_session.jsonl", tmp_path / "c")
    assert [discovery.detect_harness(p) for p in (claude_file, codex_file, pi_file)] == ["claude_code", "codex", "pi"]
    assert discovery.detect_harness(tmp_path / "c") == "pi"
    garbage = tmp_path / "d" / "x.jsonl"
    garbage.parent.mkdir()
    garbage.write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n" + (REAL / "pi_session.jsonl").read_bytes())
    assert discovery.detect_harness(garbage) == "pi"  # the undecodable first line is passed over
    [unit] = discovery.discover(codex_file)
    assert unit.key == f"codex--{CODEX_SID}"


def test_discover_errors(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        discovery.discover(tmp_path / "missing")
    with pytest.raises(UsageError, match="unknown harness"):
        discovery.discover(harness="vim")


def test_explicit_harness_wins(tmp_path):
    # a pi transcript parsed as what the user says it is
    path = copy_fixture("pi_session.jsonl", tmp_path)
    [unit] = discovery.discover(path, harness="claude")
    assert unit.harness == "claude_code" and unit.session_id == "pi_session"
    assert discovery.parse_unit(unit).turns == []
