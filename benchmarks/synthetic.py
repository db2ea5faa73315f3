"""Synthetic agent histories built from the real fixture transcripts.

Each copy of a real session gets a new session id (Claude: the file name; pi:
the header id; Codex: the session_meta id), so every copy yields distinct
chunk ids, laid out under a HOME the way each agent stores its sessions."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
# Chunks per MB of these transcripts at the memory's 600-character splits
# (measured: 149,440 chunks from 157 MB).
CHUNKS_PER_MB = 950
CLAUDE = ["episodic_memory/9a9eadc8-c1f1-493e-a0f1-884aa996b05b.jsonl",
          "episodic_memory/0fae0449-64d3-4788-8622-d3a47d82c14b.jsonl",
          "episodic_memory/67a8478e-78dc-44ab-82ea-f65c8ead85f6.jsonl", "claude_session.jsonl"]
PI = ["pi_large_session_v1.jsonl", "pi_session.jsonl"]
CODEX = ["codex_session.jsonl"]


def _with_new_id(path: Path, kind: str, new_id: str) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    if kind == "pi":
        first["id"] = new_id
    else:
        first["payload"]["id"] = new_id
    return "\n".join([json.dumps(first), *lines[1:]]) + "\n"


def make_history(home: Path, target_bytes: int, seed: int = 0) -> tuple[int, int]:
    """Fill ``home`` with copies until ``target_bytes``; returns (files, bytes)."""
    rng = uuid.UUID(int=seed)
    files = written = 0
    copy = 0
    while written < target_bytes:
        for name in CLAUDE:
            session = str(uuid.uuid5(rng, f"claude-{copy}-{name}"))
            target = home / ".claude" / "projects" / f"-synthetic-proj{copy % 25}" / f"{session}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIXTURES / name, target)
            written += target.stat().st_size
            files += 1
        for name in PI:
            session = str(uuid.uuid5(rng, f"pi-{copy}-{name}"))
            target = home / ".pi" / "agent" / "sessions" / f"--synthetic-proj{copy % 25}--" / f"2026-01-01T00-00-00-000Z_{session}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_with_new_id(FIXTURES / name, "pi", session), encoding="utf-8")
            written += target.stat().st_size
            files += 1
        for name in CODEX:
            session = str(uuid.uuid5(rng, f"codex-{copy}-{name}"))
            target = home / ".codex" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{session}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_with_new_id(FIXTURES / name, "codex", session), encoding="utf-8")
            written += target.stat().st_size
            files += 1
        copy += 1
    return files, written


def make_history_of_chunks(home: Path, chunks: int) -> tuple[int, int]:
    """A history that indexes into about ``chunks`` chunks."""
    return make_history(home, int(chunks / CHUNKS_PER_MB * 1e6))
