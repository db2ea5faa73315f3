"""Goose (block/goose) sessions.

Format facts: FORMAT.md beside this module.  Goose's data folder is
``$XDG_DATA_HOME/goose`` (default ``~/.local/share/goose``, macOS too;
``$GOOSE_PATH_ROOT/data`` when that is set); ``sessions/`` in it holds

* ``sessions.db``: SQLite, tables ``sessions`` (``id``, ``working_dir``,
  ``session_type``, ``created_at``, ``updated_at``, …) and ``messages`` (``id``
  autoincrement, ``message_id``, ``session_id``, ``role``, ``content_json``,
  ``created_timestamp`` epoch seconds, ``metadata_json``);
* ``<name>.jsonl`` from before the database: a metadata line, then one message per
  line.  Goose imports them into a new database once and keeps the files, so a
  session found in both is read from the database only.

One unit per session; database signature ``"{max row id}:{rows}:{updated_at}"``.

Goose rewrites a session's rows when it replaces the conversation (compaction,
edits): the rows come back with new autoincrement ids.  So a turn id is the
message's own ``message_id`` when it has one, else ``"{session}:{created}:{hash}"``
of its role and content (a repeat gets ``#2``, ``#3``…), the same in the database
and in a legacy file.  Messages hidden from the user (compaction summaries and
other agent-only scaffolding) and system notifications are skipped; a user
message that only carries tool responses is a ``tool`` turn.  A ParseWarning's
``line`` is the row id (the 1-based line in a legacy file).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from funes.agents.goose import AGENT, DB_NAME
from funes.errors import TraceReadError
from funes.traces.common import (
    TurnCollector,
    as_str,
    command_text,
    compact_json,
    file_touch,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    workdir_facet,
)
from funes.traces.content_parts import text_part_block
from funes.traces.jsonl import SHAPE_ERRORS, decode_json, read_records
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, decode_text, present_rows, read_only

HARNESS = AGENT.harness

_SESSION_COLUMNS = ("id", "working_dir", "session_type", "updated_at")
_MESSAGE_COLUMNS = ("id", "message_id", "role", "content_json", "created_timestamp", "timestamp", "metadata_json")
_SKIPPED_SESSION_TYPES = frozenset({"hidden"})  # goose's own helper runs


def default_roots() -> list[Path]:
    return AGENT.roots()


# --------------------------------------------------------------------------- discovery

def _db_stats(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    session_columns = columns(conn, "sessions")
    if "session_id" not in columns(conn, "messages") or "id" not in session_columns:
        raise sqlite3.DatabaseError("no sessions/messages tables: not a Goose session database")
    kind = "s.session_type" if "session_type" in session_columns else "'user'"
    changed = "s.updated_at" if "updated_at" in session_columns else "''"
    rows = conn.execute(f"SELECT m.session_id, MAX(m.id), COUNT(*), {changed}, {kind} FROM messages m "
                        "LEFT JOIN sessions s ON s.id = m.session_id GROUP BY m.session_id ORDER BY MIN(m.id)")
    return [(str(sid), f"{max_id}:{count}:{updated}") for sid, max_id, count, updated, session_type in rows
            if sid is not None and session_type not in _SKIPPED_SESSION_TYPES]


def discover(root: Path) -> Iterator[SourceUnit]:
    """Database sessions, then legacy ``.jsonl`` sessions the database lacks.
    Raises TraceReadError for a database that cannot be read."""
    if root.is_file():
        if root.suffix == ".jsonl":
            unit = file_unit(HARNESS, root, root.stem)
            if unit is not None:
                yield unit
        else:
            for session_id, signature in read_only(root, _db_stats):
                yield SourceUnit(HARNESS, root, session_id, signature)
        return
    folder = root / "sessions" if (root / "sessions").is_dir() else root
    seen: set[str] = set()
    if (folder / DB_NAME).is_file():
        for session_id, signature in read_only(folder / DB_NAME, _db_stats):
            seen.add(session_id)
            yield SourceUnit(HARNESS, folder / DB_NAME, session_id, signature)
    for path in sorted(folder.glob("*.jsonl")):
        if path.stem not in seen:
            unit = file_unit(HARNESS, path, path.stem)
            if unit is not None:
                yield unit


# --------------------------------------------------------------------------- one message

def _tool_files(tool: str, args: dict[str, Any]) -> tuple[FileTouch, ...]:
    """Goose's developer tools (``developer__text_editor``, ``developer__shell``);
    the extension prefix is dropped."""
    name = tool.rsplit("__", 1)[-1]
    path = args.get("path")
    if name == "text_editor":
        action = {"view": "read", "write": "write", "str_replace": "edit", "insert": "edit",
                  "undo_edit": "edit"}.get(args.get("command"))
        return file_touch(path, action) if action else ()
    if name in ("read", "view"):
        return file_touch(path, "read")
    if name in ("write", "create"):
        return file_touch(path, "write")
    if name == "edit":
        return file_touch(path, "edit")
    return ()


def _result_text(result: Any) -> str:
    """A tool response's text: CallToolResult ``{content: [...]}``, the older bare
    list of contents, or the error string."""
    if not isinstance(result, dict):
        return ""
    if result.get("status") == "error":
        return as_str(result.get("error"))
    value = result.get("value")
    if isinstance(value, dict):
        value = value.get("content")
    return joined_text(value) if isinstance(value, list) else ""


def _blocks(content: list[Any]) -> list[Block]:
    blocks: list[Block] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if (block := text_part_block(item)) is not None:
            blocks.append(block)
        elif kind in ("toolRequest", "frontendToolRequest"):
            call = item.get("toolCall")
            call = call if isinstance(call, dict) else {}
            value = call.get("value") if isinstance(call.get("value"), dict) else {}
            name = opt_str(value.get("name"))
            args = value.get("arguments")
            args = args if isinstance(args, dict) else {}
            text = compact_json(args) if call.get("status") != "error" else as_str(call.get("error"))
            tail = (name or "").rsplit("__", 1)[-1]
            blocks.append(Block("tool_use", text, name, opt_str(item.get("id")), files=_tool_files(name or "", args),
                                command=command_text(args.get("command")) if tail == "shell" else None))
        elif kind == "toolResponse":
            blocks.append(Block("tool_result", _result_text(item.get("toolResult")), None, opt_str(item.get("id"))))
    return blocks  # images, confirmations, system notifications, redacted thinking: nothing to index


def _visible(metadata: Any) -> bool:
    return not (isinstance(metadata, dict) and metadata.get("userVisible") is False)


def _turn_id(session_id: str, message_id: Any, role: str, created: Any, content: Any, seen: dict[str, int]) -> str:
    if isinstance(message_id, str) and message_id and message_id not in seen:
        seen[message_id] = 1
        return message_id
    digest = hashlib.sha1(json.dumps([role, content], sort_keys=True, ensure_ascii=False).encode("utf-8",
                                                                                                "replace")).hexdigest()
    base = f"{session_id}:{created}:{digest[:12]}"
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base}#{seen[base]}"


def _add_message(turns: TurnCollector, session_id: str, message: dict[str, Any], seen: dict[str, int],
                 fallback_ts: Any = None) -> None:
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant") or not isinstance(content, list):
        return
    created = message.get("created")
    turn_uuid = turns.claim(_turn_id(session_id, message.get("id"), role, created, content, seen),
                            f"{session_id}:#{len(turns.session.turns)}")
    if not _visible(message.get("metadata")):
        return
    blocks = _blocks(content)
    if role == "user" and blocks and all(block.block_type == "tool_result" for block in blocks):
        role = "tool"
    turns.add(turn_uuid, turns.last_uuid, role, normalize_ts(created) or normalize_ts(fallback_ts), blocks)


# --------------------------------------------------------------------------- parsing

def _load(session_id: str) -> Callable[[sqlite3.Connection], tuple[dict, list[dict]]]:
    def load(conn: sqlite3.Connection) -> tuple[dict, list[dict]]:
        session_row = (present_rows(conn, "sessions", _SESSION_COLUMNS, "id = ?", (session_id,)) or [{}])[0]
        messages = present_rows(conn, "messages", _MESSAGE_COLUMNS, "session_id = ? ORDER BY id", (session_id,))
        return session_row, messages
    return load


def _json_column(value: Any) -> Any:
    if isinstance(value, bytes):
        value = decode_text(value)
    return decode_json(value) if isinstance(value, str) and value.strip() else None


def _parse_db(unit: SourceUnit, session: Session, turns: TurnCollector) -> None:
    session_row, rows = read_only(unit.path, _load(unit.session_id))
    working_dir = session_row.get("working_dir")
    session.cwd = decode_text(working_dir) if isinstance(working_dir, bytes) else as_str(working_dir)
    session.is_subagent = session_row.get("session_type") == "sub_agent"
    seen: dict[str, int] = {}
    for row in rows:
        row_id = row.get("id") if type(row.get("id")) is int else 0
        try:
            content = _json_column(row.get("content_json"))
            metadata = _json_column(row.get("metadata_json"))
            message = {"id": row.get("message_id"), "role": row.get("role"), "content": content,
                       "created": row.get("created_timestamp"), "metadata": metadata}
            if not isinstance(content, list):
                session.warnings.append(ParseWarning(str(unit.path), row_id,
                                                     f"message {row_id}: content_json is not a list"))
                continue
            _add_message(turns, unit.session_id, message, seen, row.get("timestamp"))
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(unit.path), row_id,
                                                 f"message {row_id}: unexpected row ({type(exc).__name__}: {exc})"))


def _parse_jsonl(unit: SourceUnit, session: Session, turns: TurnCollector) -> None:
    seen: dict[str, int] = {}
    for index, record in read_records(unit.path, session.warnings):
        try:
            if "role" not in record and "content" not in record:  # the metadata line
                session.cwd = session.cwd or as_str(record.get("working_dir"))
                continue
            _add_message(turns, unit.session_id, record, seen)
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(unit.path), index + 1,
                                                 f"unexpected record shape ({type(exc).__name__}: {exc})"))


def parse(unit: SourceUnit) -> Session:
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(unit.path), cwd="", workdir="")
    turns = TurnCollector(session)
    if unit.path.suffix == ".jsonl":
        _parse_jsonl(unit, session, turns)
    else:
        if unit.path.is_dir():
            raise TraceReadError(f"cannot read {unit.path}: a folder, not a database")
        _parse_db(unit, session, turns)
    session.workdir = workdir_facet(session.cwd, HARNESS)
    return finish_session(session)
