"""Reading SQLite stores that an agent is writing while we read (the agents that
keep their sessions in SQLite all read through here).

A store is opened read-only through a ``file:…?mode=ro`` URI with a 5 s busy
timeout, and each read runs inside one read transaction, so it sees one consistent
snapshot however the agent writes meanwhile.  Not ``immutable=1``, which would
ignore the WAL and miss the newest rows, except for a WAL database with no
``-wal`` file beside it: no connection has it open (SQLite deletes the WAL at the
last close) and every row is in the main file, and there a ``mode=ro`` reader
would create ``-wal`` and ``-shm`` in the agent's folder and, being read-only,
leave them behind (there is no WAL to ignore; an agent that starts meanwhile
writes to a new WAL, which the next read sees).  An open or read that fails with a
transient ``disk I/O error`` / ``database is locked`` (a checkpoint in progress)
is retried three times 50 ms apart; a store that stays unreadable, or is no
database at all, raises :class:`~funes.errors.TraceReadError`, so the unit is
retried on a later run instead of being recorded as empty.  Text columns decode
as UTF-8 with replacement: a bad byte costs a character, not the row.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from funes.errors import TraceReadError

BUSY_TIMEOUT_S = 5.0
RETRIES = 3
RETRY_BACKOFF_S = 0.05
_TRANSIENT = ("disk i/o error", "locked", "busy")

T = TypeVar("T")


def decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def closed_wal_database(db: Path) -> bool:
    """A WAL-mode database (header bytes 18-19 are 2) that no connection has open."""
    try:
        with db.open("rb") as handle:
            header = handle.read(20)
    except OSError:
        return False
    wal_mode = header.startswith(b"SQLite format 3\x00") and header[18:20] == b"\x02\x02"
    return wal_mode and not db.with_name(db.name + "-wal").exists()


def read_only(db: Path, query: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``query`` on a read-only connection inside one read transaction,
    retrying transient failures."""
    uri = f"{db.absolute().as_uri()}?mode=ro{'&immutable=1' if closed_wal_database(db) else ''}"
    failures = 0
    while True:
        conn = None
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            conn.text_factory = decode_text
            conn.execute("BEGIN")
            return query(conn)
        except sqlite3.Error as exc:
            failures += 1
            transient = any(marker in str(exc).lower() for marker in _TRANSIENT)
            if not transient or failures > RETRIES:
                raise TraceReadError(f"cannot read {db}: {exc}") from exc
            time.sleep(RETRY_BACKOFF_S)
        finally:
            if conn is not None:
                conn.close()


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The columns ``table`` has (empty when there is no such table): schemas drift,
    and naming a missing column is an error, not NULL."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def present_rows(conn: sqlite3.Connection, table: str, wanted: Sequence[str], condition: str,
                 params: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The rows of ``table`` that ``condition`` (the SQL after ``WHERE``, with any
    ``ORDER BY``) selects, each a dict of those ``wanted`` columns the table has, in
    that order (``rowid``, SQLite's implicit key, counts as one).  An agent's schema
    drifts across its builds: a column a build lacks is left out, not an error, and a
    table with none of them gives no rows."""
    present = columns(conn, table) | {"rowid"}
    names = [name for name in wanted if name in present]
    if not names:
        return []
    query = f"SELECT {', '.join(names)} FROM {table} WHERE {condition}"
    return [dict(zip(names, row)) for row in conn.execute(query, params)]
