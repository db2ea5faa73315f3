"""Kiro CLI (formerly Amazon Q Developer CLI) conversations, in two stores.

Format facts: FORMAT.md.

* Session files (current Kiro CLI): ``<kiro home>/sessions/cli/<id>.jsonl``, an
  append-only log of ``{version, kind, data}`` records (``Prompt``,
  ``AssistantMessage``, ``ToolResults``) beside ``<id>.json`` (``session_id``, ``cwd``,
  ``session_state``).  ``<kiro home>`` is ``$KIRO_HOME``, else ``~/.kiro``.
  turn_uuid = ``data.message_id`` (else ``"{session}:L{line}"``).
* SQLite (earlier Kiro CLI, and Amazon Q Developer CLI): ``<data dir>/kiro-cli/data.sqlite3``
  (``amazon-q/data.sqlite3`` for Amazon Q), ``<data dir>`` = ``$XDG_DATA_HOME`` or
  ``~/.local/share`` (macOS ``~/Library/Application Support``).  Table
  ``conversations_v2(key = cwd, conversation_id, value, created_at, updated_at)`` holds
  one row per conversation, its whole ``ConversationState`` JSON rewritten after every
  turn; the older ``conversations(key = cwd, value)`` keeps only the latest conversation
  of each directory.  One unit per conversation; signature ``updated_at:length`` (v2)
  or ``length:digest`` (old table).  Opened read-only (:func:`funes.traces.sqlite.read_only`:
  ``mode=ro``, retried, TraceReadError when it stays locked or is not a database).

  ``/compact`` drops the oldest history entries, so positions shift: turn ids are the
  assistant's ``message_id`` and, for user entries, a digest of the entry's timestamp
  and content; unchanged entries keep their ids however the row is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.kiro import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    compact_json,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    path_touches,
    walk_files,
    workdir_facet,
)
from funes.traces.sqlite import read_only as read_sqlite  # read-only, retried, TraceReadError
from funes.traces.jsonl import SHAPE_ERRORS, decode_json, each_record
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness

DB_NAME = "data.sqlite3"
SHELL_TOOLS = frozenset({"shell", "execute_bash", "execute_cmd"})
READ_TOOLS = frozenset({"read", "fs_read"})
WRITE_TOOLS = frozenset({"write", "fs_write"})
_READ_MODES = frozenset({"Line", "Search"})


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_db(path: Path) -> bool:
    return path.name.endswith(".sqlite3")


# ---------------------------------------------------------------- discovery

def _db_units(db: Path) -> list[SourceUnit]:
    def query(conn: sqlite3.Connection) -> list[SourceUnit]:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables & {"conversations_v2", "conversations"}:
            raise sqlite3.DatabaseError("no conversations table: not a Kiro CLI database")
        units: dict[str, SourceUnit] = {}
        if "conversations_v2" in tables:
            for conversation_id, updated_at, length in conn.execute(
                    "SELECT conversation_id, updated_at, length(value) FROM conversations_v2 ORDER BY updated_at"):
                if conversation_id:
                    units[str(conversation_id)] = SourceUnit(HARNESS, db, str(conversation_id), f"{updated_at}:{length}")
        if "conversations" in tables:
            for key, value in conn.execute("SELECT key, value FROM conversations"):
                conversation_id = _legacy_conversation_id(key, value)
                if conversation_id and conversation_id not in units:  # v2 holds the same conversation
                    digest = hashlib.sha1(_as_bytes(value)).hexdigest()[:12]
                    units[conversation_id] = SourceUnit(HARNESS, db, conversation_id, f"{len(_as_bytes(value))}:{digest}")
        return list(units.values())

    return read_sqlite(db, query)


def _as_bytes(value: Any) -> bytes:
    return value.encode("utf-8", errors="replace") if isinstance(value, str) else bytes(value or b"")


def _legacy_conversation_id(key: Any, value: Any) -> str | None:
    try:
        state = decode_json(_as_bytes(value).decode("utf-8", errors="replace"))
    except ValueError:
        state = None
    found = opt_str(state.get("conversation_id")) if isinstance(state, dict) else None
    return found or (f"dir:{key}" if isinstance(key, str) and key else None)


def discover(root: Path) -> Iterator[SourceUnit]:
    """Session files under a folder (or one file), or the conversations in a database;
    raises TraceReadError for a database that cannot be read."""
    if root.is_file():
        if _is_db(root):
            yield from _db_units(root)
            return
        paths = [root]
    else:
        base = root / "sessions" / "cli" if (root / "sessions" / "cli").is_dir() else root
        paths = list(walk_files(base, lambda name: name.endswith(".jsonl")))
        dbs = [root / DB_NAME] if (root / DB_NAME).is_file() else []
        for db in dbs:
            yield from _db_units(db)
    for path in paths:
        unit = file_unit(HARNESS, path, path.stem)
        if unit is not None:
            yield unit


# ---------------------------------------------------------------- tools

def tool_provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if not isinstance(arguments, dict):
        return (), None
    if name in SHELL_TOOLS:
        return (), opt_str(arguments.get("command"))
    if name in READ_TOOLS:
        operations = arguments.get("operations")
        if isinstance(operations, list):
            paths = [op.get("path") for op in operations if isinstance(op, dict) and op.get("mode") in _READ_MODES]
            return path_touches({"path": paths}, ("path",), "read"), None
        return path_touches(arguments, ("path", "file_path"), "read"), None
    if name in WRITE_TOOLS:
        command = arguments.get("command")
        action = "write" if command in (None, "create") else "edit"
        return path_touches(arguments, ("path", "file_path"), action), None
    return (), None


def _tool_use(name: str | None, call_id: str | None, arguments: Any) -> Block:
    files, command = tool_provenance(name, arguments)
    return Block("tool_use", compact_json(arguments if arguments is not None else {}), name, call_id,
                 files=files, command=command)


def _exit_code(value: Any) -> int | None:
    """``exit_status`` as the shell tool reports it: ``"exit status: 0"`` (or a number)."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        tail = value.rsplit(":", 1)[-1].strip()
        if tail.lstrip("-").isdigit():
            return int(tail)
    return None


# ---------------------------------------------------------------- session files

def _parts(data: dict[str, Any]) -> list[dict[str, Any]]:
    content = data.get("content")
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


def _json_output(data: Any) -> str:
    """A tool's JSON output (both stores record it alike) as text: its stdout and
    stderr when it has either, else the JSON itself."""
    if isinstance(data, dict):
        stdout, stderr = as_str(data.get("stdout")), as_str(data.get("stderr"))
        if stdout or stderr:
            return "\n".join(t for t in (stdout, stderr) if t)
    return compact_json(data)


def _result(texts: list[str], tool_use_id: str | None, exit_code: int | None) -> Block:
    return Block("tool_result", "\n".join(t for t in texts if t), None, tool_use_id, exit_code=exit_code)


def _result_block(result: dict[str, Any]) -> Block:
    content = result.get("content")
    texts, exit_code = [], None
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and item.get("kind") == "text":
            texts.append(as_str(item.get("data")))
        elif isinstance(item, dict) and item.get("kind") == "json":
            data = item.get("data")
            if isinstance(data, dict):
                exit_code = _exit_code(data.get("exit_status", data.get("exit_code")))
            texts.append(_json_output(data))
    return _result(texts, opt_str(result.get("toolUseId")), exit_code)


def _parse_session_file(path: Path, session: Session) -> None:
    try:
        meta = decode_json(path.with_suffix(".json").read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict):
        session.session_id = opt_str(meta.get("session_id")) or session.session_id
        session.cwd = as_str(meta.get("cwd"))
    turns = TurnCollector(session)
    last_ts = ""

    def handle(index: int, record: dict[str, Any]) -> None:
        nonlocal last_ts
        kind, data = record.get("kind"), record.get("data")
        if not isinstance(data, dict) or kind not in ("Prompt", "AssistantMessage", "ToolResults"):
            return
        turn_uuid = turns.claim(data.get("message_id"), f"{session.session_id}:L{index}")
        meta = data.get("meta")
        ts = normalize_ts(meta.get("timestamp")) if isinstance(meta, dict) else ""
        last_ts = ts or last_ts  # only prompts carry a time: what follows takes the latest
        parts = _parts(data)
        if kind == "Prompt":
            blocks = [Block("text", "\n".join(as_str(p.get("data")) for p in parts if p.get("kind") == "text"))]
            turns.add(turn_uuid, turns.last_uuid, "user", last_ts, blocks)
        elif kind == "AssistantMessage":
            blocks = []
            for part in parts:
                body = part.get("data")
                if part.get("kind") == "text":
                    blocks.append(Block("text", as_str(body)))
                elif part.get("kind") == "thinking":
                    blocks.append(Block("thinking", as_str(body.get("text")) if isinstance(body, dict) else as_str(body)))
                elif part.get("kind") == "toolUse" and isinstance(body, dict):
                    blocks.append(_tool_use(opt_str(body.get("name")), opt_str(body.get("toolUseId")), body.get("input")))
            turns.add(turn_uuid, turns.last_uuid, "assistant", last_ts, blocks)
        else:
            blocks = [_result_block(p["data"]) for p in parts if p.get("kind") == "toolResult" and isinstance(p.get("data"), dict)]
            turns.add(turn_uuid, turns.last_uuid, "tool", last_ts, blocks)

    each_record(path, session.warnings, handle)
    session.workdir = workdir_facet(session.cwd, path.parent.name)


# ---------------------------------------------------------------- SQLite

def _entry_uuid(conversation_id: str, role: str, *parts: Any) -> str:
    digest = hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]
    return f"{conversation_id}:{role}:{digest}"


def _user_entry(user: dict[str, Any]) -> tuple[str, list[Block]]:
    content = user.get("content")
    if not isinstance(content, dict):
        return "user", []
    if isinstance(content.get("Prompt"), dict):
        return "user", [Block("text", as_str(content["Prompt"].get("prompt")))]
    for key in ("ToolUseResults", "CancelledToolUses"):
        body = content.get(key)
        if isinstance(body, dict):
            blocks = [_legacy_result(r) for r in body.get("tool_use_results") or [] if isinstance(r, dict)]
            prompt = as_str(body.get("prompt"))
            return "tool", [*blocks, Block("text", prompt)] if prompt else blocks
    return "user", []


def _legacy_result(result: dict[str, Any]) -> Block:
    texts, exit_code = [], None
    for item in result.get("content") or []:
        if isinstance(item, dict) and isinstance(item.get("Text"), str):
            texts.append(item["Text"])
        elif isinstance(item, dict) and "Json" in item:
            data = item["Json"]
            if isinstance(data, dict):
                exit_code = _exit_code(data.get("exit_status"))
            texts.append(_json_output(data))
    return _result(texts, opt_str(result.get("tool_use_id")), exit_code)


def _assistant_entry(assistant: dict[str, Any]) -> tuple[str | None, list[Block]]:
    for key in ("Response", "ToolUse"):
        body = assistant.get(key)
        if isinstance(body, dict):
            blocks = [Block("text", as_str(body.get("content")))]
            for use in body.get("tool_uses") or [] if key == "ToolUse" else []:
                if isinstance(use, dict):
                    name = opt_str(use.get("orig_name")) or opt_str(use.get("name"))
                    arguments = use.get("orig_args", use.get("args"))
                    blocks.append(_tool_use(name, opt_str(use.get("id")), arguments))
            return opt_str(body.get("message_id")), blocks
    return None, []


def _parse_conversation(unit: SourceUnit, session: Session) -> None:
    db, conversation_id = unit.path, unit.session_id

    def load(conn: sqlite3.Connection) -> tuple[Any, Any]:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "conversations_v2" in tables:
            row = conn.execute("SELECT key, value FROM conversations_v2 WHERE conversation_id = ?",
                               (conversation_id,)).fetchone()
            if row is not None:
                return row
        if "conversations" in tables:
            for key, value in conn.execute("SELECT key, value FROM conversations"):
                if _legacy_conversation_id(key, value) == conversation_id:
                    return key, value
        return None, None

    key, value = read_sqlite(db, load)
    if value is None:
        return  # the conversation was replaced or deleted since discovery
    try:
        state = decode_json(_as_bytes(value).decode("utf-8", errors="replace"))
    except ValueError as exc:
        session.warnings.append(ParseWarning(str(db), 0, f"conversation {conversation_id}: not JSON ({exc})"))
        return
    session.cwd = key if isinstance(key, str) else ""
    history = state.get("history") if isinstance(state, dict) else None
    turns = TurnCollector(session)
    for position, entry in enumerate(history if isinstance(history, list) else []):
        try:
            _add_entry(turns, conversation_id, position, entry, session)
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(db), 0, f"conversation {conversation_id} entry {position}: "
                                                 f"unexpected shape ({type(exc).__name__}: {exc})"))
    session.workdir = workdir_facet(session.cwd, "kiro")


def _add_entry(turns: TurnCollector, conversation_id: str, position: int, entry: Any, session: Session) -> None:
    if not isinstance(entry, dict):
        return
    user = entry.get("user") if isinstance(entry.get("user"), dict) else {}
    metadata = entry.get("request_metadata") if isinstance(entry.get("request_metadata"), dict) else {}
    if not session.cwd:
        env = user.get("env_context")
        state = env.get("env_state") if isinstance(env, dict) else None
        if isinstance(state, dict):
            session.cwd = as_str(state.get("current_working_directory"))
    role, blocks = _user_entry(user)
    user_ts = normalize_ts(user.get("timestamp"))
    user_uuid = turns.claim(_entry_uuid(conversation_id, role, user.get("timestamp"), user.get("content")),
                            f"{conversation_id}:{position}:u")
    turns.add(user_uuid, turns.last_uuid, role, user_ts, blocks)
    assistant = entry.get("assistant") if isinstance(entry.get("assistant"), dict) else {}
    message_id, blocks = _assistant_entry(assistant)
    assistant_ts = normalize_ts(metadata.get("stream_end_timestamp_ms") or metadata.get("request_start_timestamp_ms"))
    assistant_uuid = turns.claim(message_id or _entry_uuid(conversation_id, "assistant", assistant),
                                 f"{conversation_id}:{position}:a")
    turns.add(assistant_uuid, turns.last_uuid, "assistant", assistant_ts or user_ts, blocks)


def parse(unit: SourceUnit) -> Session:
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(unit.path), cwd="", workdir="")
    if _is_db(unit.path):
        _parse_conversation(unit, session)
    else:
        _parse_session_file(unit.path, session)
    return finish_session(session)
