"""Each agent's pre-compaction event, with the JSON the agent sends for it, through the real
hook entry point: the session a compaction is about to summarise is indexed first.

Payloads, field for field, from each agent's source or reference (the hook keeps the
short fields, so every field is sent as the agent sends it):
- Claude Code `PreCompact`: the common fields and `trigger` (`manual`|`auto`),
  `custom_instructions` (code.claude.com hooks reference).
- Codex `PreCompact`: codex-rs/hooks/schema/generated/pre-compact.command.input.schema.json
  (`session_id`, `turn_id`, `transcript_path`, `cwd`, `hook_event_name`, `model`, `trigger`).
- Gemini CLI `PreCompress`: the common fields (`session_id`, `transcript_path`, `cwd`,
  `hook_event_name`, `timestamp`) and `trigger` (docs/hooks/reference.md).
- Qwen Code `PreCompact`: Claude Code's, with `timestamp` (its hooks are Claude Code's).
- Copilot CLI `preCompact` (camelCase form): `timestamp` (ms), `cwd`, `sessionId`,
  `transcriptPath`, `trigger`, `customInstructions` (the CLI's hooks reference).
- pi `session_before_compact`: an extension event (`preparation`, `branchEntries`,
  `customInstructions`, `signal`); funes's extension turns it into the hook payload.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from agent_helpers import funes, needs_cli, pi_harness, wait_for
from paths import FIXTURES, REAL

AGENTS = FIXTURES / "agents"


def claude(home: Path) -> dict:
    transcript = home / ".claude" / "projects" / "-D-physics-earth" / "claude_session.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copyfile(REAL / "claude_session.jsonl", transcript)
    return {"session_id": "claude_session", "transcript_path": str(transcript), "cwd": "/D/physics/earth",
            "permission_mode": "default", "hook_event_name": "PreCompact", "trigger": "auto",
            "custom_instructions": ""}


def codex(home: Path) -> dict:
    transcript = (home / ".codex" / "sessions" / "2026" / "05" / "01"
                  / "rollout-2026-05-01T10-00-00-019a0000-0000-7000-8000-000000000001.jsonl")
    transcript.parent.mkdir(parents=True)
    shutil.copyfile(REAL / "codex_session.jsonl", transcript)
    return {"session_id": "019a0000-0000-7000-8000-000000000001", "turn_id": "turn-7",
            "transcript_path": str(transcript), "cwd": "/home/dev/app", "hook_event_name": "PreCompact",
            "model": "gpt-5.1-codex", "trigger": "manual"}


def gemini(home: Path) -> dict:
    shutil.copytree(AGENTS / "gemini_cli", home / ".gemini")
    transcript = home / ".gemini" / "tmp" / "notes" / "chats" / "session-2026-12-01T10-22-54614887.jsonl"
    return {"session_id": "54614887-c1a4-4d2a-9a1e-3f0b7c5d2e61", "transcript_path": str(transcript),
            "cwd": "/home/dev/notes", "hook_event_name": "PreCompress", "timestamp": "2026-12-01T10:40:00.000Z",
            "trigger": "manual"}


def qwen(home: Path) -> dict:
    shutil.copytree(AGENTS / "qwen_code", home / ".qwen")
    transcript = home / ".qwen" / "projects" / "-home-dev-notes" / "chats" / "f402a6ae-a31c-4946-8d72-df92cbdc035d.jsonl"
    return {"session_id": "f402a6ae-a31c-4946-8d72-df92cbdc035d", "transcript_path": str(transcript),
            "cwd": "/home/dev/notes", "hook_event_name": "PreCompact", "timestamp": "2026-12-01T10:40:00.000Z",
            "permission_mode": "default", "trigger": "auto", "custom_instructions": ""}


def copilot(home: Path) -> dict:
    shutil.copytree(AGENTS / "copilot_cli", home / ".copilot")
    transcript = home / ".copilot" / "session-state" / "4f1d2e93-8f48-4961-abc9-53f422e9159f" / "events.jsonl"
    return {"timestamp": 1764585600000, "cwd": "/home/dev/app", "sessionId": "4f1d2e93-8f48-4961-abc9-53f422e9159f",
            "transcriptPath": str(transcript), "trigger": "auto", "customInstructions": ""}


PAYLOADS = {"claude": claude, "codex": codex, "gemini": gemini, "qwen": qwen, "copilot": copilot}


def sessions_of(payload: dict, agent: str) -> set[str]:
    """The session ids the payload's transcript holds, as funes parses it."""
    from funes.discovery import discover, parse_unit

    path = Path(payload.get("transcript_path") or payload["transcriptPath"])
    return {parse_unit(unit).session_id for unit in discover(path)}


def stored_sessions() -> set[str]:
    """The sessions the local memory holds (none while the worker has not created it)."""
    from funes.errors import MemoryMissingError
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    try:
        return set(Memory.open(local_memory()).scan(["session_id"]).column("session_id").to_pylist())
    except MemoryMissingError:
        return set()


@pytest.mark.parametrize("agent", sorted(PAYLOADS))
def test_the_worker_finds_the_session_a_compaction_payload_names(isolated_env, agent):
    """What the hook keeps of the payload (funes.hook.request_from) names the transcript's session."""
    from funes.cli.hook_worker import Request, units_for
    from funes.hook import request_from

    payload = PAYLOADS[agent](isolated_env)
    spooled = request_from([agent], json.dumps(payload).encode())
    request = Request(Path("unused.json"), agent, None, None, spooled["payload"], spooled["env"], time.time())
    units = units_for(request)
    assert units and {unit.session_id for unit in units} & sessions_of(payload, agent)


@pytest.mark.slow
def test_each_agents_pre_compaction_hook_indexes_the_session(isolated_env, monkeypatch):
    """The hook commands `funes add` writes for each agent's pre-compaction event, run as the
    agent runs them (JSON on stdin); the detached worker indexes every session they name."""
    from funes.wiring import Binding

    monkeypatch.setenv("FUNES_HOOK_IDLE_S", "0")
    expected = set()
    for agent, write in PAYLOADS.items():
        payload = write(isolated_env)
        expected |= sessions_of(payload, agent)
        result = subprocess.run(Binding(None).hook_command(agent), input=json.dumps(payload).encode(),
                                capture_output=True, timeout=30, env=os.environ.copy())
        assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
    funes_home = Path(os.environ["FUNES_HOME"])
    log = funes_home / "logs" / "hooks.log"
    wait_for(lambda: log.exists() and "indexed" in log.read_text()
             and not any((funes_home / "spool").glob("*.json")), timeout=180)
    wait_for(lambda: expected <= stored_sessions(), timeout=60)
    assert " ERROR " not in log.read_text() and " WARNING " not in log.read_text()


@needs_cli("pi")
def test_pis_extension_indexes_the_session_before_a_compaction(isolated_env, monkeypatch):
    """funes's pi extension, loaded by pi's own resource loader, handed pi's
    `session_before_compact` event: the session file is indexed by the hook's worker."""
    monkeypatch.setenv("FUNES_HOOK_IDLE_S", "0")
    assert funes("add", "pi", "--yes").code == 0
    session = isolated_env / ".pi" / "agent" / "sessions" / "--home-u-proj--" / "2026-05-05T10-00-00-000Z_compact.jsonl"
    session.parent.mkdir(parents=True)
    shutil.copyfile(REAL / "as_pi_small.jsonl", session)
    event = {"type": "session_before_compact", "preparation": {}, "branchEntries": [], "customInstructions": ""}
    handled = pi_harness({"action": "turn", "session_file": str(session), "session_id": "compact", "event": event},
                         cwd=isolated_env)
    assert handled["handled"] == 1
    expected = sessions_of({"transcript_path": str(session)}, "pi")
    wait_for(lambda: expected <= stored_sessions(), timeout=180)
