"""Which transcripts a memory has indexed, and at what signature.

One row per source unit (a transcript file, one session of a database…): the signature it
had when last indexed, what that produced, and the last read error.  A unit whose
current signature equals its indexed one is skipped without parsing.  A read
error is recorded as an error, never as an indexed (empty) unit, so it is retried.
SQLite gives atomic updates shared by the CLI, hook workers and Dagster runs.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from funes.traces.model import SourceUnit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    key TEXT PRIMARY KEY,
    harness TEXT NOT NULL,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    signature TEXT,            -- signature when last indexed successfully
    turns INTEGER DEFAULT 0,
    chunks INTEGER DEFAULT 0,
    warnings INTEGER DEFAULT 0,
    error TEXT,                -- last read error, NULL after a success
    indexed_at REAL,
    attempted_at REAL
);
CREATE TABLE IF NOT EXISTS forgotten (   -- sessions the user asked to forget: never indexed again
    key TEXT PRIMARY KEY,
    forgotten_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS scrubbed (    -- chunk ids whose earlier text held a secret `funes scrub` removed
    id TEXT PRIMARY KEY,
    scrubbed_at REAL NOT NULL
);
"""
# Each backlog embedding pass: the rate `funes status` estimates from.  Created by the
# first pass, not with the rest: a memory that never embeds keeps the file it had.
_EMBED_RUNS = """CREATE TABLE IF NOT EXISTS embed_runs (
    finished_at REAL NOT NULL,
    chunks INTEGER NOT NULL,
    chars INTEGER NOT NULL,
    seconds REAL NOT NULL
)"""


@dataclass(frozen=True, slots=True)
class EmbedRate:
    """What one backlog embedding pass did: its rate is what the rest will take."""
    finished_at: float
    chunks: int
    chars: int
    seconds: float

    @property
    def chars_per_s(self) -> float:
        return self.chars / max(self.seconds, 1e-3)

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / max(self.seconds, 1e-3)


@dataclass(frozen=True, slots=True)
class UnitState:
    key: str
    harness: str
    session_id: str
    path: str
    signature: str | None
    turns: int
    chunks: int
    warnings: int
    error: str | None
    indexed_at: float | None


class Coverage:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def states(self, keys: Iterable[str] | None = None) -> dict[str, UnitState]:
        rows = self._db.execute(
            "SELECT key, harness, session_id, path, signature, turns, chunks, warnings, error, indexed_at FROM units"
        ).fetchall()
        wanted = set(keys) if keys is not None else None
        return {row[0]: UnitState(*row) for row in rows if wanted is None or row[0] in wanted}

    def changed(self, units: Iterable[SourceUnit]) -> list[SourceUnit]:
        """Units never indexed, grown since, or that failed last time (forgotten
        sessions excepted)."""
        known = {key: (sig, err) for key, sig, err in self._db.execute("SELECT key, signature, error FROM units")}
        forgotten = self.forgotten()
        changed = []
        for unit in units:
            if unit.key in forgotten:
                continue
            signature, error = known.get(unit.key, (None, None))
            if signature != unit.signature or error is not None:
                changed.append(unit)
        return changed

    def register(self, units: Iterable[SourceUnit]) -> None:
        """Remember where each unit lives (so a partition key finds its transcript)
        without marking it indexed."""
        self._db.executemany(
            """INSERT INTO units (key, harness, session_id, path) VALUES (?, ?, ?, ?)
               ON CONFLICT(key) DO UPDATE SET path=excluded.path""",
            [(u.key, u.harness, u.session_id, str(u.path)) for u in units],
        )

    def record_success(self, unit: SourceUnit, *, turns: int, chunks: int, warnings: int) -> None:
        now = time.time()
        self._db.execute(
            """INSERT INTO units (key, harness, session_id, path, signature, turns, chunks, warnings,
                                  error, indexed_at, attempted_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)
               ON CONFLICT(key) DO UPDATE SET path=excluded.path, signature=excluded.signature,
                   turns=excluded.turns, chunks=excluded.chunks, warnings=excluded.warnings,
                   error=NULL, indexed_at=excluded.indexed_at, attempted_at=excluded.attempted_at""",
            (unit.key, unit.harness, unit.session_id, str(unit.path), unit.signature, turns, chunks,
             warnings, now, now),
        )

    def record_error(self, unit: SourceUnit, error: str) -> None:
        self._db.execute(
            """INSERT INTO units (key, harness, session_id, path, error, attempted_at)
               VALUES (?, ?, ?, ?, ?, ?)
               ON CONFLICT(key) DO UPDATE SET error=excluded.error, attempted_at=excluded.attempted_at""",
            (unit.key, unit.harness, unit.session_id, str(unit.path), error, time.time()),
        )

    def mark_stale(self, keys: Iterable[str]) -> None:
        """Have the next index parse these units again whatever their signature (their
        rows were lost: `funes repair`)."""
        self._db.executemany("UPDATE units SET signature = NULL WHERE key = ?", [(key,) for key in keys])

    def forget(self, keys: Iterable[str]) -> None:
        """Tombstone sessions: re-indexing their transcripts will skip them."""
        now = time.time()
        self._db.executemany("INSERT OR REPLACE INTO forgotten (key, forgotten_at) VALUES (?, ?)",
                             [(key, now) for key in keys])
        self._db.executemany("DELETE FROM units WHERE key = ?", [(key,) for key in keys])

    def forgotten(self) -> set[str]:
        return {key for (key,) in self._db.execute("SELECT key FROM forgotten")}

    def forgotten_since(self) -> dict[str, float]:
        """Each tombstoned session key and when it was forgotten (Unix time)."""
        return dict(self._db.execute("SELECT key, forgotten_at FROM forgotten").fetchall())

    def record_scrubbed(self, ids: Iterable[str]) -> None:
        """Remember chunks whose stored text `funes scrub` replaced or dropped: a copy
        pushed before still holds the old text, and `funes push` replaces it there."""
        now = time.time()
        self._db.executemany("INSERT OR REPLACE INTO scrubbed (id, scrubbed_at) VALUES (?, ?)",
                             [(chunk, now) for chunk in ids])

    def scrubbed(self) -> dict[str, float]:
        """Each scrubbed chunk id and when it was last scrubbed (Unix time)."""
        return dict(self._db.execute("SELECT id, scrubbed_at FROM scrubbed").fetchall())

    def record_embed_run(self, *, chunks: int, chars: int, seconds: float) -> None:
        """Remember the rate of a backlog embedding pass (one row a pass, the last 50 kept)."""
        self._db.execute(_EMBED_RUNS)
        self._db.execute("INSERT INTO embed_runs (finished_at, chunks, chars, seconds) VALUES (?, ?, ?, ?)",
                         (time.time(), chunks, chars, seconds))
        self._db.execute("DELETE FROM embed_runs WHERE rowid NOT IN "
                         "(SELECT rowid FROM embed_runs ORDER BY finished_at DESC LIMIT 50)")

    def last_embed_rate(self) -> EmbedRate | None:
        """The rate of the last backlog embedding pass; None when none ran yet."""
        if not self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embed_runs'").fetchone():
            return None
        row = self._db.execute("SELECT finished_at, chunks, chars, seconds FROM embed_runs"
                               " ORDER BY finished_at DESC LIMIT 1").fetchone()
        return EmbedRate(*row) if row else None

    def last_indexed(self) -> float | None:
        (value,) = self._db.execute("SELECT MAX(indexed_at) FROM units").fetchone()
        return value

    def errors(self) -> list[tuple[str, str]]:
        return self._db.execute("SELECT path, error FROM units WHERE error IS NOT NULL").fetchall()
