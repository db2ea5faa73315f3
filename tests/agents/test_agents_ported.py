"""The agents ported onto the agent contract, end to end through the CLI: each one's
fixture, copied into its home in a temp HOME, is found by `funes index PATH`
(detection) and by a bare `funes index` (the sweep), counted by `funes status`, and
recalled verbatim; where the agent has a per-turn hook, a turn appended to a
transcript becomes recallable once the hook the way `funes add` installs it ran."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agent_helpers import funes, wait_for
from funes.agents import agent_named
from trace_helpers import FIXTURES

AGENTS = FIXTURES / "agents"


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class Case:
    fixture: str  # under tests/fixtures/agents/
    home: str  # where it goes, relative to HOME
    main: str  # the main session's file, relative to the home
    turn: Callable[[Path, str], dict] | None = None  # appends a turn saying the text; returns the hook payload
    more: tuple[tuple[str, str], ...] = ()  # further (fixture, home) pairs


def gemini_turn(transcript: Path, text: str) -> dict:
    """An answer as Gemini CLI appends it, and what its AfterAgent hook receives."""
    record = {"id": str(uuid.uuid4()), "timestamp": now(), "type": "gemini", "content": text, "model": "gemini-2.5-pro"}
    with transcript.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return {"session_id": "54614887-c1a4-4d2a-9a1e-3f0b7c5d2e61", "transcript_path": str(transcript),
            "cwd": "/home/dev/notes", "hook_event_name": "AfterAgent", "timestamp": now(), "prompt": "go on",
            "prompt_response": text, "stop_hook_active": False}


def copilot_turn(transcript: Path, text: str) -> dict:
    """An answer as Copilot CLI appends it, and what its agentStop hook receives."""
    record = {"type": "assistant.message", "data": {"messageId": "m9", "content": text, "toolRequests": []},
              "id": str(uuid.uuid4()), "timestamp": now(), "parentId": None}
    with transcript.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return {"sessionId": "4f1d2e93-8f48-4961-abc9-53f422e9159f", "timestamp": 1764584409000, "cwd": "/home/dev/cop",
            "transcriptPath": str(transcript), "stopReason": "end_turn", "stop_hook_active": False}


def qwen_turn(transcript: Path, text: str) -> dict:
    """An answer as Qwen Code appends it, and what its Stop hook receives."""
    record = {"uuid": str(uuid.uuid4()), "parentUuid": "9a000000-0000-4000-8000-000000000015",
              "sessionId": "f402a6ae-a31c-4946-8d72-df92cbdc035d", "cwd": "/home/dev/notes", "version": "0.24.4",
              "gitBranch": "feature/notes", "timestamp": now(), "type": "assistant", "model": "qwen3-coder-plus",
              "message": {"role": "model", "parts": [{"text": text}]}}
    with transcript.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return {"session_id": "f402a6ae-a31c-4946-8d72-df92cbdc035d", "transcript_path": str(transcript),
            "cwd": "/home/dev/notes", "hook_event_name": "Stop", "timestamp": now(), "permission_mode": "default"}


def cline_turn(transcript: Path, text: str) -> dict:
    """An answer as the Cline SDK records it (the whole file rewritten), and what its
    TaskComplete hook receives."""
    document = json.loads(transcript.read_text())
    document["messages"].append({"id": f"msg_{uuid.uuid4().hex[:8]}", "role": "assistant",
                                 "ts": int(datetime.now(timezone.utc).timestamp() * 1000),
                                 "content": [{"type": "text", "text": text}]})
    transcript.write_text(json.dumps(document))
    return {"hookName": "TaskComplete", "clineVersion": "3.0.65", "timestamp": now(), "taskId": "task-1",
            "sessionContext": {"rootSessionId": transcript.parent.name}, "workspaceRoots": ["/home/dev/shop"],
            "taskComplete": {"taskMetadata": {"taskId": "task-1"}}}


CASES = {
    "aider": Case("aider", "work", "projects/todo/.aider.chat.history.md"),
    "amp": Case("amp", ".local/share/amp", "threads/T-019d2a41-7c3e-7b10-9f2a-4e5d6c7b8a90.json"),
    "cline": Case("cline/sdk", ".cline/data", "sessions/1784300000000_k7q2m/1784300000000_k7q2m.messages.json",
                  cline_turn, more=(("cline/classic/data", ".cline/data"),)),
    "copilot": Case("copilot_cli", ".copilot", "session-state/4f1d2e93-8f48-4961-abc9-53f422e9159f/events.jsonl",
                    copilot_turn),
    "gemini": Case("gemini_cli", ".gemini", "tmp/notes/chats/session-2026-12-01T10-22-54614887.jsonl", gemini_turn),
    "roo": Case("roo_code/globalStorage", ".config/Code/User/globalStorage",
                "rooveterinaryinc.roo-cline/tasks/3f6c1a2e-8b4d-4e0a-9c7b-5d2e1f0a9b8c/api_conversation_history.json"),
    "kiro": Case("kiro_cli", ".kiro", "sessions/cli/3c2b1a00-7777-4888-9999-aaaabbbbcccc.jsonl"),
    "qwen": Case("qwen_code", ".qwen", "projects/-home-dev-notes/chats/f402a6ae-a31c-4946-8d72-df92cbdc035d.jsonl",
                 qwen_turn),
}


@pytest.fixture
def agent_home(isolated_env, monkeypatch, request):
    """The agent's fixture as its home in this test's HOME, no variable moving it elsewhere."""
    case = CASES[request.param]
    agent = agent_named(request.param)
    for name in (agent.home_env, "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        if name:
            monkeypatch.delenv(name, raising=False)
    home = isolated_env / case.home
    shutil.copytree(AGENTS / case.fixture, home)
    for fixture, where in case.more:
        shutil.copytree(AGENTS / fixture, isolated_env / where, dirs_exist_ok=True)
    return request.param, case, home


def _distinctive_text(agent_name: str, path: Path) -> tuple[int, str, str]:
    """(sessions in ``path``, and of the longest assistant text there: its session id
    and the text)."""
    agent = agent_named(agent_name)
    units = list(agent.discover(path))
    session_id, text = max(((unit.session_id, block.text) for unit in units for turn in agent.parse(unit).turns
                            if turn.role == "assistant" for block in turn.blocks if block.block_type == "text"),
                           key=lambda found: len(found[1]))
    return len(units), session_id, text


@pytest.mark.slow
@pytest.mark.parametrize("agent_home", sorted(CASES), indirect=True)
def test_index_detects_sweeps_counts_and_recalls(agent_home):
    name, case, home = agent_home
    agent = agent_named(name)
    main = home / case.main
    in_main, session_id, text = _distinctive_text(name, main)
    on_disk = sum(len(list(agent.discover(root))) for root in agent.roots() if root.exists())

    by_path = funes("index", str(main))
    assert by_path.code == 0, by_path.err
    assert f"indexed {in_main} of {in_main} session(s)" in by_path.err
    swept = funes("index", "--yes")
    assert swept.code == 0, swept.err

    status = json.loads(funes("status", "--json").out)
    [listed] = [entry for entry in status["agents"] if entry["name"] == name]
    assert (listed["found"], listed["sessions_on_disk"], listed["indexed_sessions"]) == (True, on_disk, on_disk)
    assert status["harnesses"][agent.harness]["sessions"] == on_disk

    query = " ".join(text.split()[:12])
    found = funes("recall", query, "--harness", name, "--json", "--no-rerank", "--fusion", "lexical", "-k", "3")
    assert found.code == 0, found.err
    hits = json.loads(found.out)
    assert any(hit["session_id"] == session_id and hit["harness"] == agent.harness and text in hit["text"]
               for hit in hits), hits


@pytest.mark.slow
@pytest.mark.parametrize("agent_home", sorted(name for name, case in CASES.items() if case.turn), indirect=True)
def test_the_hook_indexes_the_new_turn(agent_home, monkeypatch):
    from funes.wiring import Binding

    name, case, home = agent_home
    monkeypatch.setenv("FUNES_HOOK_IDLE_S", "0")  # the worker exits once the spool is empty
    word = "zq" + uuid.uuid4().hex[:10]
    payload = case.turn(home / case.main, f"We settled on {word} as the cache key prefix after the benchmark.")
    result = subprocess.run(Binding(None).hook_command(name), input=json.dumps(payload).encode(),
                            capture_output=True, timeout=30, env=os.environ.copy())
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    funes_home = Path(os.environ["FUNES_HOME"])
    log = funes_home / "logs" / "hooks.log"

    def recalled() -> bool:
        found = funes("recall", word, "--harness", name, "--json", "--no-rerank", "--fusion", "lexical", "-k", "1")
        return found.code == 0 and any(word in hit["text"] for hit in json.loads(found.out))

    wait_for(lambda: not list((funes_home / "spool").glob("*.json")) and (funes_home / "memory").exists(), 120)
    wait_for(recalled, 60)
    assert " ERROR " not in (log.read_text() if log.exists() else "")
