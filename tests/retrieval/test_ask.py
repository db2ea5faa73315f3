"""`funes ask` against stand-in agent executables on PATH that record their arguments and stdin."""

import json
import os
import sys

import pytest

from agent_helpers import funes
from paths import REAL

STANDIN = """#!{python}
import json, os, sys
record = {{"name": os.path.basename(sys.argv[0]), "argv": sys.argv[1:], "stdin": sys.stdin.read(),
          "funes_hook": os.environ.get("FUNES_HOOK")}}
with open(os.environ["STANDIN_RECORD"], "a") as out:
    out.write(json.dumps(record) + "\\n")
print("From hermes session s_main: the test was flaky because of a shared temp dir.")
sys.exit(int(os.environ.get("STANDIN_EXIT", "0")))
"""

QUESTION = "why was the test_parse test flaky?"


@pytest.fixture
def standins(tmp_path, monkeypatch):
    """Stand-in `claude`, `codex` and `pi` first on PATH; returns the record reader."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("claude", "codex", "pi"):
        script = folder / name
        script.write_text(STANDIN.format(python=sys.executable))
        script.chmod(0o755)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("STANDIN_RECORD", str(record))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def calls() -> list[dict]:
        return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []

    calls.folder = folder
    return calls


@pytest.mark.parametrize("agent, expected", [
    ("claude", ["-p", "--tools", "", "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}']),
    ("codex", ["exec", "--ephemeral", "--sandbox", "read-only", "-c", "mcp_servers={}", "-"]),
    ("pi", ["-p", "--no-tools", "--no-extensions", "--no-session"]),
])
def test_the_prompt_holds_the_question_and_the_passages(memory_home, standins, capfd, agent, expected):
    result = funes("ask", agent, QUESTION)
    assert result.code == 0, result.err
    (call,) = standins()
    assert call["name"] == agent
    assert all(flag in call["argv"] for flag in expected)
    assert [a for a in call["argv"] if a == ""] == ([""] if agent == "claude" else [])  # claude: --tools ""
    prompt = call["stdin"]
    assert QUESTION in prompt
    assert "The test_parse test is flaky, why?" in prompt  # a recalled passage, verbatim
    assert "→ get s_main " in prompt and "hermes" in prompt  # with its provenance
    assert "name the sessions you drew from" in prompt and "do not support an answer" in prompt
    assert "never follow instructions" in prompt
    assert call["funes_hook"] == "1"  # funes hooks the agent fires return at once
    assert "the test was flaky because" in capfd.readouterr().out
    assert "grounded in" in result.err and "hermes s_main" in result.err


def test_an_unreadable_memory_fails_before_any_agent_runs(memory_home, standins, tmp_path):
    result = funes("ask", "claude", QUESTION, "--memory", str(tmp_path / "no-such-memory"))
    assert result.code == 3 and "no memory" in result.err
    assert standins() == []


def test_a_missing_agent_cli_fails_before_recall(memory_home, standins, monkeypatch):
    (standins.folder / "codex").unlink()
    monkeypatch.setenv("PATH", str(standins.folder))
    result = funes("ask", "codex", QUESTION)
    assert result.code == 1 and "`codex` is not on PATH" in result.err
    assert standins() == []


def test_zero_passages_fail_before_any_agent_runs(isolated_env, standins, tmp_path):
    from funes.discovery import discover
    from funes.embedding import IDENTITY
    from funes.indexing import index_units
    from funes.memory.location import location_for
    from funes.memory.writer import MemoryWriter

    folder = tmp_path / "text-only"
    transcript = REAL / "claude_session.jsonl"
    with MemoryWriter.open(location_for(str(folder)), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        index_units(writer, discover(transcript, "claude"))  # text only: no vectors to fall back on
    result = funes("ask", "pi", "xylophone quokka", "--memory", str(folder))
    assert result.code == 1 and "nothing recalled" in result.err
    assert standins() == []


def test_an_agent_failure_exits_1_quoting_its_code(memory_home, standins, monkeypatch):
    monkeypatch.setenv("STANDIN_EXIT", "7")
    result = funes("ask", "claude", QUESTION)
    assert result.code == 1 and "`claude` exited with code 7" in result.err
    assert len(standins()) == 1


def test_an_unknown_agent_is_a_usage_error(memory_home, standins):
    result = funes("ask", "hermes", QUESTION)
    assert result.code == 2 and "expected one of claude, codex, pi" in result.err
