"""OpenCode (anomalyco/opencode, formerly sst/opencode) sessions.

Format facts: FORMAT.md beside this module.  Two stores, both under OpenCode's data
folder ``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``, macOS
too):

* ``opencode.db`` (``opencode-<channel>.db`` for other release channels;
  ``$OPENCODE_DB`` moves it): SQLite tables ``session``, ``message`` (one JSON
  ``data`` per message) and ``part`` (one JSON ``data`` per part of a message);
* ``storage/`` from before the database: ``session/<projectID>/<sessionID>.json``,
  ``message/<sessionID>/<messageID>.json``, ``part/<messageID>/<partID>.json``.
  OpenCode copies it into the database once and leaves the files, so a session
  found in both is read from the database only.

One unit per session.  Database signature: message and part counts with the newest
and the sum of their ``time_updated`` (rows are updated in place while a reply
streams, and deleted by a revert); JSON
signature: count, total size and newest mtime of the session's files.

Turns, in id order (OpenCode's ids sort by creation): one turn per message
(turn_uuid = message id; assistant parts ``reasoning`` → thinking, ``text`` →
text, ``tool`` → tool_use), then one ``tool`` turn per finished tool call
(turn_uuid = part id) holding its tool_result.  Skipped: OpenCode's synthetic and
ignored text parts, compaction summaries (assistant ``summary: true``), step,
snapshot, patch, file and subtask parts, and parts still streaming (a text part
with a start and no end, a pending tool call), which come complete at the next
read.  A ParseWarning's ``line`` is the row's rowid (0 for JSON files).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from funes.agents.opencode import AGENT, is_database_name
from funes.errors import TraceReadError
from funes.traces.common import (
    TurnCollector,
    as_str,
    clean_branch,
    command_text,
    compact_json,
    exit_status,
    file_touch,
    finish_session,
    normalize_ts,
    opt_str,
    patch_touches,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, decode_text, present_rows, read_only

HARNESS = AGENT.harness

STORAGE = "storage"


def default_roots() -> list[Path]:
    return AGENT.roots()


# --------------------------------------------------------------------------- discovery

def _db_stats(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(session id, signature) of every session with messages: row counts and the
    newest and the sum of ``time_updated`` over its messages and parts, so an
    update in place, an append and a deletion each change it."""
    if not columns(conn, "message") or not columns(conn, "part"):
        raise sqlite3.DatabaseError("no message/part tables: not an OpenCode database")
    query = "SELECT session_id, COUNT(*), MAX(time_updated), TOTAL(time_updated) FROM {} GROUP BY session_id"
    parts = {sid: rest for sid, *rest in conn.execute(query.format("part"))}
    found = []
    for sid, count, newest, total in conn.execute(query.format("message") + " ORDER BY MIN(id)"):
        if sid is None:
            continue
        part_count, part_newest, part_total = parts.get(sid, (0, None, 0.0))
        latest = max((v for v in (newest, part_newest) if isinstance(v, (int, float))), default=0)
        found.append((str(sid), f"{count}:{part_count}:{latest}:{int(total + part_total)}"))
    return found


def _storage_dir(root: Path) -> Path | None:
    """The legacy ``storage`` folder ``root`` is, holds or lies in."""
    for folder in (root, *root.parents):
        if folder.name == STORAGE and (folder / "session").is_dir():
            return folder
    return root / STORAGE if (root / STORAGE / "session").is_dir() else None


def _json_files(storage: Path, session_file: Path) -> list[Path]:
    """A legacy session's files: its info, its messages and their parts."""
    messages = sorted((storage / "message" / session_file.stem).glob("*.json"))
    parts = [part for message in messages for part in sorted((storage / "part" / message.stem).glob("*.json"))]
    return [session_file, *messages, *parts]


def _json_signature(files: list[Path]) -> str | None:
    size = newest = 0
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            if path is files[0]:
                return None  # the session itself vanished
            continue
        size += stat.st_size
        newest = max(newest, stat.st_mtime_ns)
    return f"json:{len(files)}:{size}:{newest}"


def discover(root: Path) -> Iterator[SourceUnit]:
    return discover_store(root, HARNESS, is_database_name)


def discover_store(root: Path, harness: str, is_database: Callable[[str], bool]) -> Iterator[SourceUnit]:
    """Database sessions, then legacy JSON sessions the databases lack, as units of
    ``harness`` (OpenCode's forks keep the same store under their own names: a data
    folder's databases are those ``is_database`` accepts).  Raises TraceReadError
    for a database that cannot be read."""
    if root.is_file() and root.suffix == ".json":
        storage = _storage_dir(root.parent)
        if storage is not None and root.parent.parent == storage / "session":
            signature = _json_signature(_json_files(storage, root))
            if signature is not None:
                yield SourceUnit(harness, root, root.stem, signature)
        return
    databases = [root] if root.is_file() else sorted(p for p in root.glob("*.db") if is_database(p.name))
    seen: set[str] = set()
    for db in databases:
        for session_id, signature in read_only(db, _db_stats):
            if session_id not in seen:
                seen.add(session_id)
                yield SourceUnit(harness, db, session_id, signature)
    storage = None if root.is_file() else _storage_dir(root)
    if storage is None:
        return
    inside = root if root != storage and storage in root.parents else storage / "session"
    for session_file in sorted(inside.rglob("*.json")):
        if session_file.parent.parent != storage / "session" or session_file.stem in seen:
            continue
        signature = _json_signature(_json_files(storage, session_file))
        if signature is not None:
            seen.add(session_file.stem)
            yield SourceUnit(harness, session_file, session_file.stem, signature)


# --------------------------------------------------------------------------- one message

def _streaming(part: dict[str, Any]) -> bool:
    time = part.get("time")
    return isinstance(time, dict) and time.get("start") is not None and time.get("end") is None


def _tool_files(tool: str, args: dict[str, Any]) -> tuple[FileTouch, ...]:
    path = args.get("filePath")
    if tool == "read":
        return file_touch(path, "read")
    if tool == "write":
        return file_touch(path, "write")
    if tool in ("edit", "multiedit"):
        return file_touch(path, "edit")
    if tool in ("apply_patch", "patch"):
        return patch_touches(args.get("patchText"))
    return ()


def _tool_blocks(part: dict[str, Any]) -> tuple[Block | None, Block | None, Any]:
    """(tool_use, tool_result, end time) of a tool part; None where it has none yet."""
    state = part.get("state")
    state = state if isinstance(state, dict) else {}
    status = state.get("status")
    if status not in ("running", "completed", "error"):
        return None, None, None  # pending: arguments still streaming
    tool, call_id = opt_str(part.get("tool")), opt_str(part.get("callID"))
    args = state.get("input")
    args = args if isinstance(args, dict) else {}
    use = Block("tool_use", compact_json(args), tool, call_id, files=_tool_files(tool or "", args),
                command=command_text(args.get("command")) if tool == "bash" else None)
    if status == "running":
        return use, None, None
    metadata = state.get("metadata")
    exit_code = exit_status(metadata.get("exit")) if isinstance(metadata, dict) else None
    output = as_str(state.get("output")) if status == "completed" else as_str(state.get("error"))
    result = Block("tool_result", output, tool, call_id, exit_code=exit_code)
    time = state.get("time")
    return use, result, time.get("end") if isinstance(time, dict) else None


def _add_message(turns: TurnCollector, message_id: str, info: dict[str, Any],
                 parts: list[tuple[str, dict[str, Any]]], warn: Callable[[int, str], None],
                 part_rows: dict[str, int]) -> None:
    role = info.get("role")
    if role not in ("user", "assistant") or (role == "assistant" and info.get("summary") is True):
        return
    time = info.get("time")
    ts = normalize_ts(time.get("created")) if isinstance(time, dict) else ""
    blocks: list[Block] = []
    results: list[tuple[str, Block, Any]] = []
    for part_id, part in parts:
        try:
            kind = part.get("type")
            if kind == "text" and not part.get("synthetic") and not part.get("ignored") and not _streaming(part):
                blocks.append(Block("text", as_str(part.get("text"))))
            elif kind == "reasoning" and not _streaming(part):
                blocks.append(Block("thinking", as_str(part.get("text"))))
            elif kind == "tool":
                use, result, ended = _tool_blocks(part)
                if use is not None:
                    blocks.append(use)
                if result is not None:
                    results.append((part_id, result, ended))
        except SHAPE_ERRORS as exc:
            warn(part_rows.get(part_id, 0), f"part {part_id}: unexpected shape ({type(exc).__name__}: {exc})")
    turn_uuid = turns.claim(message_id, f"{message_id}#{len(turns.session.turns)}")
    turns.add(turn_uuid, turns.last_uuid, role, ts, blocks)
    for part_id, result, ended in results:
        result_uuid = turns.claim(part_id, f"{part_id}#{len(turns.session.turns)}")
        turns.add(result_uuid, turn_uuid, "tool", normalize_ts(ended) or ts, [result])


# --------------------------------------------------------------------------- parsing

_SESSION_COLUMNS = ("id", "directory", "parent_id", "workspace_id")


def _load_db(session_id: str) -> Callable[[sqlite3.Connection], tuple]:
    def load(conn: sqlite3.Connection) -> tuple[dict, str | None, list, dict]:
        session_row = (present_rows(conn, "session", _SESSION_COLUMNS, "id = ?", (session_id,)) or [{}])[0]
        branch = None
        if session_row.get("workspace_id") and "branch" in columns(conn, "workspace"):
            found = conn.execute("SELECT branch FROM workspace WHERE id = ?", (session_row["workspace_id"],)).fetchone()
            branch = found[0] if found else None
        messages = conn.execute("SELECT rowid, id, data FROM message WHERE session_id = ? ORDER BY id",
                                (session_id,)).fetchall()
        parts: dict[str, list] = {}
        for rowid, part_id, message_id, data in conn.execute(
                "SELECT rowid, id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
                (session_id,)):
            parts.setdefault(str(message_id), []).append((rowid, str(part_id), data))
        return session_row, branch, messages, parts
    return load


def _decoded(text: Any, where: str, line: int, warn: Callable[[int, str], None]) -> dict[str, Any] | None:
    if isinstance(text, bytes):  # a blob: written by something other than OpenCode, read anyway
        text = decode_text(text)
    try:
        value = decode_json(text) if isinstance(text, str) else None
    except ValueError as exc:
        warn(line, f"{where}: data is not JSON ({exc})")
        return None
    if not isinstance(value, dict):
        warn(line, f"{where}: data is not a JSON object")
        return None
    return value


def _parse_db(unit: SourceUnit, session: Session, turns: TurnCollector) -> None:
    source = str(unit.path)

    def warn(line: int, message: str) -> None:
        session.warnings.append(ParseWarning(source, line, message))

    session_row, branch, messages, parts = read_only(unit.path, _load_db(unit.session_id))
    session.cwd = as_str(session_row.get("directory"))
    session.parent_session_id = opt_str(session_row.get("parent_id"))
    session.branch = clean_branch(branch)
    for rowid, message_id, data in messages:
        message_id = str(message_id)
        info = _decoded(data, f"message {message_id}", rowid, warn)
        if info is None:
            continue
        decoded = []
        rows = {}
        for part_rowid, part_id, part_data in parts.get(message_id, []):
            part = _decoded(part_data, f"part {part_id}", part_rowid, warn)
            if part is not None:
                decoded.append((part_id, part))
                rows[part_id] = part_rowid
        try:
            _add_message(turns, message_id, info, decoded, warn, rows)
        except SHAPE_ERRORS as exc:
            warn(rowid, f"message {message_id}: unexpected shape ({type(exc).__name__}: {exc})")


def _read_json(path: Path, warn: Callable[[int, str], None]) -> dict[str, Any] | None:
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        warn(0, f"{path}: cannot read ({exc.strerror or exc})")
        return None
    return _decoded(text, path.name, 0, warn)


def _parse_json(unit: SourceUnit, session: Session, turns: TurnCollector) -> None:
    storage = unit.path.parent.parent.parent

    def warn_at(path: Path) -> Callable[[int, str], None]:
        return lambda line, message: session.warnings.append(ParseWarning(str(path), line, message))

    try:
        text = unit.path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise TraceReadError(f"cannot read {unit.path}: {exc.strerror or exc}") from exc
    info = _decoded(text, unit.path.name, 0, warn_at(unit.path)) or {}
    session.cwd = as_str(info.get("directory"))
    session.parent_session_id = opt_str(info.get("parentID"))
    for message_file in sorted((storage / "message" / unit.session_id).glob("*.json")):
        message = _read_json(message_file, warn_at(message_file))
        if message is None:
            continue
        parts = []
        for part_file in sorted((storage / "part" / message_file.stem).glob("*.json")):
            part = _read_json(part_file, warn_at(part_file))
            if part is not None:
                parts.append((opt_str(part.get("id")) or part_file.stem, part))
        warn = warn_at(message_file)
        try:
            _add_message(turns, opt_str(message.get("id")) or message_file.stem, message, parts, warn, {})
        except SHAPE_ERRORS as exc:
            warn(0, f"unexpected shape ({type(exc).__name__}: {exc})")


def parse(unit: SourceUnit) -> Session:
    session = Session(harness=unit.harness, session_id=unit.session_id, source_path=str(unit.path), cwd="", workdir="")
    turns = TurnCollector(session)
    if unit.path.suffix == ".json":
        _parse_json(unit, session, turns)
    else:
        _parse_db(unit, session, turns)
    session.is_subagent = session.parent_session_id is not None
    session.workdir = workdir_facet(session.cwd, unit.harness)
    return finish_session(session)
