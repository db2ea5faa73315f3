"""Agent homes laid out like real ones, and memories built from them.

Building a memory embeds every chunk (real ONNX model, 2 CPU cores), so the
test session builds one and tests copy it (fixtures ``agent_home`` and
``memory_home`` in conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from trace_helpers import REAL, build_hermes_db

# Small real transcripts of every agent, plus one long Claude session whose big
# tool outputs split into several chunks.
CLAUDE_FILES = {
    "claude_session.jsonl": "-D-physics-earth",
    "as_claude_small.jsonl": "-tmp-as",
    "episodic_memory/67a8478e-78dc-44ab-82ea-f65c8ead85f6.jsonl": "-Users-testuser-proj",
    "episodic_memory/9a9eadc8-c1f1-493e-a0f1-884aa996b05b.jsonl": "-Users-testuser-scenario",
}
CODEX_FILES = {
    "codex_session.jsonl": "rollout-2026-05-01T10-00-00-019a0000-0000-7000-8000-000000000001.jsonl",
    "codex_real_sample.jsonl": "rollout-2026-05-02T10-00-00-019a0000-0000-7000-8000-000000000002.jsonl",
}
PI_FILES = {
    "pi_session.jsonl": "2026-05-03T10-00-00-000Z_pi-session.jsonl",
    "as_pi_small.jsonl": "2026-05-04T10-00-00-000Z_as-pi-small.jsonl",
}
LONG_SESSION = "9a9eadc8-c1f1-493e-a0f1-884aa996b05b"


def make_agent_home(home: Path) -> Path:
    """Copy the fixture transcripts into ``home`` the way each agent stores them."""
    for name, project in CLAUDE_FILES.items():
        target = home / ".claude" / "projects" / project / Path(name).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REAL / name, target)
    for name, target_name in CODEX_FILES.items():
        target = home / ".codex" / "sessions" / "2026" / "05" / "01" / target_name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REAL / name, target)
    for name, target_name in PI_FILES.items():
        target = home / ".pi" / "agent" / "sessions" / "--home-u-proj--" / target_name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REAL / name, target)
    (home / ".hermes").mkdir(parents=True, exist_ok=True)
    build_hermes_db(home / ".hermes" / "state.db")
    return home


@contextmanager
def environment(**variables: str):
    """Set environment variables for the duration (session-scoped fixtures cannot
    use monkeypatch)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build_memory(home: Path, funes_home: Path) -> None:
    """Index every agent home under ``home`` into ``funes_home``, vectors included,
    with the same domain functions `funes index --yes` runs."""
    from funes.discovery import discover
    from funes.embedding import IDENTITY, load_embedder
    from funes.indexing import embed_backlog, index_units
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    with environment(HOME=str(home), FUNES_HOME=str(funes_home)):
        with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
            report = index_units(writer, discover())
            assert not report.errors, report.errors
            embed_backlog(writer, load_embedder("cpu"))


def same_vector(a, b) -> bool:
    """Two stored vectors agree: both absent (a tier the memory leaves to BM25), or equal
    within float noise (same model and inputs, batched differently)."""
    import numpy as np

    if a is None or b is None:
        return a is None and b is None
    return bool(np.allclose(a, b, atol=1e-5))


def append_user_turn(transcript: Path, text: str = "Now make the oceans reflect the sun correctly.") -> None:
    """Grow a Claude Code transcript by one user turn (after its first record), as the
    agent appends one."""
    turn = json.loads(transcript.read_text().splitlines()[1])
    turn.update(uuid="11111111-2222-4333-8444-555555555555", parentUuid=turn.get("uuid"),
                timestamp="2026-06-12T22:00:00.000Z", type="user", message={"role": "user", "content": text})
    with transcript.open("a") as handle:
        handle.write(json.dumps(turn) + "\n")


def copy_embedding_export(source_cache: Path) -> Path:
    """The fp32 embedding export in ``source_cache`` (its graph and the weights file
    beside it) copied to where ``onnx_path()`` points now; returns that path."""
    from funes.embedding import IDENTITY, onnx_path

    target = onnx_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    source = source_cache / "models" / IDENTITY.revision / target.name
    for name in (target.name, f"{target.name}.data"):
        shutil.copyfile(source.with_name(name), target.with_name(name))
    return target
