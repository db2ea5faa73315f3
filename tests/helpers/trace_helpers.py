"""Helpers for the trace parser tests (test_traces_*.py)."""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest

from funes.errors import TraceReadError
from funes.traces import sqlite as sqlite_store

from funes.traces.model import Session, SourceUnit, Turn

from paths import FIXTURES, REAL

AGENT_FIXTURES = FIXTURES / "agents"


def only_unit(module: ModuleType, path: Path) -> SourceUnit:
    units = list(module.discover(path))
    assert len(units) == 1, units
    return units[0]


def parse_file(module: ModuleType, path: Path) -> Session:
    """The one session a transcript file holds."""
    return module.parse(only_unit(module, path))


def sessions_by_id(module: ModuleType, root: Path) -> dict[str, Session]:
    """Every session ``module`` discovers under ``root``, parsed, by session id."""
    return {unit.session_id: module.parse(unit) for unit in module.discover(root)}


def shape(turn: Turn) -> tuple[str, list[tuple[str, str | None]]]:
    """A turn's role and its blocks' (type, tool name)."""
    return turn.role, [(block.block_type, block.tool_name) for block in turn.blocks]


def texts(session: Session) -> list[str]:
    return [block.text for turn in session.turns for block in turn.blocks]


def turn(session: Session, turn_uuid: str) -> Turn:
    found = [t for t in session.turns if t.turn_uuid == turn_uuid]
    assert len(found) == 1, f"{turn_uuid}: {len(found)} turns"
    return found[0]


def assert_well_formed(session: Session) -> None:
    """Invariants every parser guarantees for any input."""
    uuids = [t.turn_uuid for t in session.turns]
    assert len(uuids) == len(set(uuids)), "turn ids repeat within a session"
    for seq, t in enumerate(session.turns):
        assert t.seq == seq
        assert t.role in ("user", "assistant", "tool")
        assert t.blocks
        for block in t.blocks:
            assert block.block_type in ("text", "thinking", "tool_use", "tool_result")
            assert isinstance(block.text, str) and block.text.strip()
            block.text.encode("utf-8")  # no lone surrogates
        assert t.ts == "" or (len(t.ts) == 24 and t.ts.endswith("Z")), t.ts


def copy_fixture(name: str, dest_dir: Path, new_name: str | None = None) -> Path:
    dest = dest_dir / (new_name or Path(name).name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REAL / name, dest)
    return dest


def fixture_module(relative: str) -> ModuleType:
    """A fixture builder script under tests/fixtures/ (``agents/crush/make_crush_db.py``),
    imported by path (fixtures is no package)."""
    path = FIXTURES / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def hermes_builder() -> ModuleType:
    return fixture_module("make_hermes_db.py")


def build_hermes_db(path: Path, legacy: bool = False) -> Path:
    """A Hermes state.db at ``path`` (folders created) from make_hermes_db.py."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return hermes_builder().build(path, legacy=legacy)


@contextmanager
def locked_by_a_writer(db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``db`` held by another process's exclusive transaction (as an agent mid-write
    holds it), with funes's busy timeout and retries cut to milliseconds."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.01)
    monkeypatch.setattr(sqlite_store, "RETRY_BACKOFF_S", 0.001)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA locking_mode=EXCLUSIVE")
    writer.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        writer.rollback()
        writer.close()


def assert_corrupt_database_is_a_read_error(module: ModuleType, db: Path, root: Path) -> Path:
    """Write ``db`` (folders created): a SQLite header, then garbage where the pages
    should be; ``module.discover(root)`` must raise TraceReadError for it.  Returns
    ``db`` for further checks."""
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"SQLite format 3\x00" + b"\x07" * 500)
    with pytest.raises(TraceReadError):
        list(module.discover(root))
    return db
