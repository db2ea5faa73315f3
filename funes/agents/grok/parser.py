"""Grok CLI sessions: the ``sessions`` and ``messages`` tables of ``~/.grok/grok.db``.

Format facts: FORMAT.md.  One unit per session that has messages; signature = the
message count and last ``seq`` (messages are only appended).  ``sessions`` gives the
cwd (``cwd_at_start``); each ``messages`` row holds one AI SDK ``ModelMessage``
(``message_json``) and its ``created_at``:

* ``user``: ``content`` a string or parts (``text``; images and files skipped);
* ``assistant``: parts ``text``, ``reasoning`` (thinking), ``tool-call``
  (``toolCallId``, ``toolName``, ``input``) → tool_use;
* ``tool``: parts ``tool-result`` (``output`` ``{type: text|json|error-text|
  error-json|content, value}``) → tool_result;
* ``system``: skipped.

Turn id = ``<session id>:<seq>``; parent = the previous retained turn.  Compaction
adds a ``compactions`` row and keeps every message, so all are read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.grok import AGENT, DB_NAME
from funes.traces.common import (
    TurnCollector,
    as_str,
    compact_json,
    finish_session,
    normalize_ts,
    opt_str,
    record_call,
    tool_input_text,
    workdir_facet,
)
from funes.traces.content_parts import part_list
from funes.traces.jsonl import SHAPE_ERRORS, decode_json
from funes.traces.model import Block, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, read_only

HARNESS = AGENT.harness
_FILE_TOOLS = {"read_file": "read", "write_file": "write", "edit_file": "edit"}
_SHELL_TOOLS = frozenset({"bash"})


def default_roots() -> list[Path]:
    return AGENT.roots()


def _sessions(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    if not {"session_id", "seq", "message_json"} <= columns(conn, "messages"):
        raise sqlite3.DatabaseError("no messages table: not a Grok CLI database")
    rows = conn.execute("SELECT session_id, COUNT(*), MAX(seq) FROM messages GROUP BY session_id "
                        "ORDER BY MIN(created_at), session_id")
    return [(str(sid), f"{count}:{last}") for sid, count, last in rows if sid is not None]


def discover(root: Path) -> Iterator[SourceUnit]:
    """The sessions of the Grok CLI database at or in ``root``; raises
    TraceReadError for a database that cannot be read."""
    db = root if root.is_file() else root / DB_NAME
    if db.is_file():
        for session_id, signature in read_only(db, _sessions):
            yield SourceUnit(HARNESS, db, session_id, signature)


def _output_text(output: Any) -> str:
    if not isinstance(output, dict):
        return as_str(output)
    value = output.get("value")
    if isinstance(value, str):
        return value
    if output.get("type") == "content" and isinstance(value, list):
        return "\n".join(as_str(part.get("text")) for part in value if isinstance(part, dict))
    return compact_json(value) if value is not None else ""


def _blocks(role: str, content: Any) -> list[Block]:
    blocks = []
    for part in part_list(content):
        if isinstance(part, str):
            blocks.append(Block("text", part))
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.append(Block("text", as_str(part.get("text"))))
        elif kind == "reasoning" and role == "assistant":
            blocks.append(Block("thinking", as_str(part.get("text"))))
        elif kind == "tool-call" and role == "assistant":
            name, arguments = opt_str(part.get("toolName")), part.get("input")
            block = Block("tool_use", tool_input_text(arguments), name, opt_str(part.get("toolCallId")))
            blocks.append(record_call(block, arguments, action=_FILE_TOOLS.get(name or ""), shell=name in _SHELL_TOOLS))
        elif kind == "tool-result" and role == "tool":
            blocks.append(Block("tool_result", _output_text(part.get("output")), opt_str(part.get("toolName")),
                                opt_str(part.get("toolCallId"))))
    return blocks


def parse(unit: SourceUnit) -> Session:
    db, session_id = unit.path, unit.session_id

    def load(conn: sqlite3.Connection) -> tuple[str, list[tuple[Any, Any, Any, Any]]]:
        cwd = ""
        if "cwd_at_start" in columns(conn, "sessions"):
            row = conn.execute("SELECT cwd_at_start FROM sessions WHERE id = ?", (session_id,)).fetchone()
            cwd = row[0] if row and isinstance(row[0], str) else ""
        return cwd, conn.execute("SELECT seq, role, message_json, created_at FROM messages WHERE session_id = ? "
                                 "ORDER BY seq", (session_id,)).fetchall()

    cwd, rows = read_only(db, load)
    session = Session(harness=HARNESS, session_id=session_id, source_path=str(db), cwd=cwd,
                      workdir=workdir_facet(cwd, HARNESS))
    turns = TurnCollector(session)
    for seq, role, message_json, created in rows:
        line = seq if type(seq) is int else 0
        try:
            message = decode_json(message_json)
            if not isinstance(message, dict):
                raise TypeError("message_json is not an object")
            role = message.get("role", role)
            if role not in ("user", "assistant", "tool"):
                continue
            turns.add(f"{session_id}:{seq}", turns.last_uuid, role, normalize_ts(created),
                      _blocks(role, message.get("content")))
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(db), line, f"message {seq}: unexpected shape "
                                                                f"({type(exc).__name__}: {exc})"))
    return finish_session(session)
