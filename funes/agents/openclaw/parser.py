"""OpenClaw sessions: pi-format transcript entries, in each agent's SQLite store or,
from releases before 2026.7.2, in JSON Lines files.

Format facts: FORMAT.md.  Under ``<state>/agents/<agent id>/``:

* ``agent/openclaw-agent.sqlite``: one unit per ``transcript_events.session_id``
  (a session window); the rows in ``seq`` order are the transcript, each
  ``event_json`` (text) or ``event_zstd`` (a zstd frame of that text, schema 23);
  signature = row count and last ``seq`` (rows are appended; a rewrite of the
  window bumps both or replaces the window).  ``session_windows.session_key`` says
  whether it is a subagent's (``agent:<id>:subagent:<…>``).
* ``sessions/<session id>.jsonl``: a file per session, the same entries one a line;
  read unless the store already holds that session (Doctor's import leaves the
  file until it archives it).

The entries are pi's (OpenClaw runs its agents on pi's session format): a
``session`` header (``id``, ``cwd``, ``parentSession``), then ``message`` entries
(user, assistant with text / thinking / ``toolCall``, ``toolResult``,
``bashExecution``) read by :func:`funes.agents.pi.parser.read_entries` with
OpenClaw's tools: ``read``/``write``/``edit`` name their file, ``exec`` and
``bash`` run shell commands (a result's exit code is ``details.exitCode``).
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from funes.agents.openclaw import AGENT, DB_NAME
from funes.agents.pi.parser import EntryTools, read_entries
from funes.traces.common import file_unit, finish_session, walk_files, workdir_facet
from funes.traces.jsonl import SHAPE_ERRORS, decode_json_fast, each_record, first_record
from funes.traces.model import ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, read_only

HARNESS = AGENT.harness
TOOLS = EntryTools({"read": "read", "write": "write", "edit": "edit"}, frozenset({"exec", "bash"}))
# The largest event OpenClaw compresses (4 MiB): a frame claiming more is not one of its events.
_MAX_EVENT_BYTES = 4 * 1024 * 1024


def default_roots() -> list[Path]:
    return AGENT.roots()


# --------------------------------------------------------------------------- discovery

def _agent_dirs(root: Path) -> list[Path]:
    """The agent folders at or under ``root`` (the state dir, its ``agents``, one agent)."""
    if (root / "agents").is_dir():
        root = root / "agents"
    if (root / "agent").is_dir() or (root / "sessions").is_dir():
        return [root]
    return sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else []


def _windows(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    if not {"session_id", "seq"} <= columns(conn, "transcript_events"):
        raise sqlite3.DatabaseError("no transcript_events table: not an OpenClaw agent store")
    rows = conn.execute("SELECT session_id, COUNT(*), MAX(seq) FROM transcript_events GROUP BY session_id "
                        "ORDER BY MIN(created_at), session_id")
    return [(str(sid), f"{count}:{last}") for sid, count, last in rows if sid is not None]


def _store_units(db: Path) -> list[SourceUnit]:
    return [SourceUnit(HARNESS, db, session_id, signature) for session_id, signature in read_only(db, _windows)]


def _file_unit(path: Path) -> SourceUnit | None:
    header = first_record(path)
    header_id = header.get("id") if header is not None and header.get("type") == "session" else None
    return file_unit(HARNESS, path, header_id if isinstance(header_id, str) and header_id else path.stem)


def discover(root: Path) -> Iterator[SourceUnit]:
    """The sessions of every agent store and legacy transcript at or under ``root``;
    raises TraceReadError for a store that cannot be read."""
    if root.is_file():
        units = _store_units(root) if root.suffix == ".sqlite" else [_file_unit(root)]
        yield from (unit for unit in units if unit is not None)
        return
    for agent_dir in _agent_dirs(root):
        db = agent_dir / "agent" / DB_NAME
        stored = _store_units(db) if db.is_file() else []
        yield from stored
        in_store = {unit.session_id for unit in stored}
        for path in walk_files(agent_dir / "sessions", lambda name: name.endswith(".jsonl")):
            unit = _file_unit(path)
            if unit is not None and unit.session_id not in in_store:
                yield unit


# --------------------------------------------------------------------------- parsing

def _decompressed(frame: bytes, decompressor: Any, frame_size: Callable[[bytes], int]) -> bytes:
    size = frame_size(frame)
    if size > _MAX_EVENT_BYTES:
        raise ValueError("event larger than OpenClaw writes")
    if size >= 0:  # Node's one-shot compression records the size: decompressed in one call
        return decompressor.decompress(frame)
    # A frame without its size is read as a stream, cut off past what OpenClaw ever compresses.
    with decompressor.stream_reader(io.BytesIO(frame)) as reader:
        data = reader.read(_MAX_EVENT_BYTES + 1)
    if len(data) > _MAX_EVENT_BYTES:
        raise ValueError("event larger than OpenClaw writes")
    return data


def _store_feed(db: Path, session: Session) -> tuple[Callable[[Callable[[int, dict[str, Any]], None]], None], str]:
    """The store's events of one window as a feed for read_entries, and its session key."""

    def load(conn: sqlite3.Connection) -> tuple[list[tuple[Any, Any, Any]], str]:
        compressed = "event_zstd" if "event_zstd" in columns(conn, "transcript_events") else "NULL"
        rows = conn.execute(f"SELECT seq, event_json, {compressed} FROM transcript_events WHERE session_id = ? "
                            "ORDER BY seq", (session.session_id,)).fetchall()
        key = conn.execute("SELECT session_key FROM session_windows WHERE session_id = ?", (session.session_id,)) \
            .fetchone() if "session_key" in columns(conn, "session_windows") else None
        return rows, key[0] if key and isinstance(key[0], str) else ""

    rows, session_key = read_only(db, load)

    def feed(handle: Callable[[int, dict[str, Any]], None]) -> None:
        import zstandard

        decompressor, frame_size = zstandard.ZstdDecompressor(), zstandard.frame_content_size
        warnings, source = session.warnings, str(db)
        for seq, text, frame in rows:
            seq = seq if type(seq) is int else 0
            try:
                if not isinstance(text, str):
                    if not isinstance(frame, bytes):
                        raise ValueError("neither event_json nor event_zstd")
                    text = _decompressed(frame, decompressor, frame_size)
                record = decode_json_fast(text)  # the UTF-8 of a frame as it is
            except Exception as exc:  # noqa: BLE001 - zstandard raises its own error type on corrupt frames
                warnings.append(ParseWarning(source, seq, f"event {seq}: unreadable ({type(exc).__name__})"))
                continue
            if not isinstance(record, dict):
                warnings.append(ParseWarning(source, seq, f"event {seq}: not a JSON object"))
                continue
            try:
                handle(seq, record)
            except SHAPE_ERRORS as exc:
                warnings.append(ParseWarning(source, seq, f"event {seq}: unexpected shape ({type(exc).__name__}: "
                                                          f"{exc})"))

    return feed, session_key


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    if path.suffix == ".sqlite":
        feed, session_key = _store_feed(path, session)
        session.is_subagent = ":subagent:" in session_key
    else:
        feed = lambda handle: each_record(path, session.warnings, handle)  # noqa: E731
    read_entries(session, feed, TOOLS)
    session.session_id = unit.session_id  # the store's window id (a header's id names the same session)
    # Both live two folders below the agent's: agents/<id>/agent/… and agents/<id>/sessions/….
    session.workdir = workdir_facet(session.cwd, path.parent.parent.name)
    return finish_session(session)
