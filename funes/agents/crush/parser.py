"""Crush (charmbracelet/crush) sessions: one SQLite ``crush.db`` per project.

Format facts: FORMAT.md beside this module.  A project's database is
``<data dir>/crush.db``, the data dir being ``<project>/.crush`` unless
``--data-dir`` or ``options.data_directory`` moved it.  Crush lists every project
it ran in (path and data dir) in ``projects.json`` of its global data folder
(``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``, else
``~/.local/share/crush``): discovery starts there.  A root may also be a
project, a data dir or a database.

One unit per session (``sessions.id``; title-generation sessions ``title-…`` are
skipped); signature = message count, newest ``updated_at`` and ``finished_at`` and
the total length of ``parts``, because Crush rewrites a message's ``parts`` in
place while it streams and its times are whole seconds.  Turn id = message id
(a UUID); rows in ``created_at, rowid`` order; parent = previous retained turn.
``parts`` is a JSON list of ``{"type", "data"}``: ``text``, ``reasoning``
(thinking), ``tool_call`` (tool_use; ``input`` is a JSON string), ``tool_result``
(in role ``tool`` messages), ``shell_command`` (a user's ``!cmd``: a bash
tool_use and its result with the exit code); ``finish``, images and binaries are
skipped, as are summary messages and assistant messages not finished yet (they
come complete at the next read).  A ParseWarning's ``line`` is the rowid.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.crush import AGENT, DATA_DIR_NAME, DB_NAME, PROJECTS
from funes.traces.common import (
    TurnCollector,
    as_str,
    command_text,
    exit_status,
    file_touch,
    finish_session,
    normalize_ts,
    opt_str,
    tool_input_text,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, decode_text, present_rows, read_only

HARNESS = AGENT.harness

_TITLE_SESSION = "title-"


def default_roots() -> list[Path]:
    return AGENT.roots()


# --------------------------------------------------------------------------- discovery

def registered_projects(folder: Path) -> list[tuple[Path, Path]]:
    """(project path, data dir) of every project ``projects.json`` in ``folder``
    lists; nothing when it is missing or unreadable (Crush rewrites it whole)."""
    try:
        listed = json.loads((folder / PROJECTS).read_bytes())
    except (OSError, ValueError):
        return []
    projects = listed.get("projects") if isinstance(listed, dict) else None
    found = []
    for entry in projects if isinstance(projects, list) else []:
        if isinstance(entry, dict) and opt_str(entry.get("path")):
            project = Path(entry["path"])
            data_dir = Path(entry["data_dir"]) if opt_str(entry.get("data_dir")) else project / DATA_DIR_NAME
            found.append((project, data_dir if data_dir.is_absolute() else project / data_dir))
    return found


def _databases(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    candidates = [data_dir / DB_NAME for _, data_dir in registered_projects(root)]
    candidates += [root / DB_NAME, root / DATA_DIR_NAME / DB_NAME]  # a data dir, a project (or the global workspace)
    unique: dict[Path, Path] = {}
    for db in candidates:
        if db.is_file():
            unique.setdefault(db.resolve(), db)
    return list(unique.values())


def _db_stats(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    present = columns(conn, "messages")
    if not {"session_id", "parts"} <= present:
        raise sqlite3.DatabaseError("no messages table: not a Crush database")
    finished = "MAX(finished_at)" if "finished_at" in present else "0"
    rows = conn.execute(f"SELECT session_id, COUNT(*), MAX(updated_at), {finished}, TOTAL(LENGTH(parts)) "
                        "FROM messages GROUP BY session_id ORDER BY MIN(created_at)")
    return [(str(sid), f"{count}:{updated}:{done}:{int(size)}") for sid, count, updated, done, size in rows
            if sid is not None and not str(sid).startswith(_TITLE_SESSION)]


def discover(root: Path) -> Iterator[SourceUnit]:
    """The sessions of every Crush database under ``root``; raises TraceReadError
    for a database that cannot be read."""
    for db in _databases(root):
        for session_id, signature in read_only(db, _db_stats):
            yield SourceUnit(HARNESS, db, session_id, signature)


def project_of(db: Path) -> str:
    """The project a database belongs to: the registry's entry for its data dir,
    else the folder holding a ``.crush`` data dir, else ""."""
    data_dir = db.parent
    for project, listed in registered_projects(AGENT.home()):
        if listed == data_dir or (listed.exists() and data_dir.exists() and listed.resolve() == data_dir.resolve()):
            return str(project)
    return str(data_dir.parent) if data_dir.name == DATA_DIR_NAME else ""


# --------------------------------------------------------------------------- one message

def _tool_files(tool: str, args: dict[str, Any]) -> tuple[FileTouch, ...]:
    path = args.get("file_path")
    if tool == "view":
        return file_touch(path, "read")
    if tool in ("write", "download"):
        return file_touch(path, "write")
    if tool in ("edit", "multiedit"):
        return file_touch(path, "edit")
    return ()


def _tool_use(data: dict[str, Any]) -> Block | None:
    if data.get("finished") is False:
        return None  # arguments still streaming
    name, raw = opt_str(data.get("name")), data.get("input")
    try:
        args = decode_json(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        args = {}
    args = args if isinstance(args, dict) else {}
    return Block("tool_use", tool_input_text(raw if isinstance(raw, str) and raw.strip() else None), name,
                 opt_str(data.get("id")), files=_tool_files(name or "", args),
                 command=command_text(args.get("command")) if name == "bash" else None)


def _blocks(parts: list[Any]) -> list[Block]:
    blocks: list[Block] = []
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("data"), dict):
            continue
        kind, data = part.get("type"), part["data"]
        if kind == "text":
            blocks.append(Block("text", as_str(data.get("text"))))
        elif kind == "reasoning":
            blocks.append(Block("thinking", as_str(data.get("thinking"))))
        elif kind == "tool_call":
            use = _tool_use(data)
            if use is not None:
                blocks.append(use)
        elif kind == "tool_result":
            blocks.append(Block("tool_result", as_str(data.get("content")), opt_str(data.get("name")),
                                opt_str(data.get("tool_call_id"))))
        elif kind == "shell_command":
            command = as_str(data.get("command"))
            blocks += [Block("tool_use", command, "bash", command=command_text(command)),
                       Block("tool_result", as_str(data.get("output")), "bash", exit_code=exit_status(data.get("exit_code")))]
    return blocks


def _finished(parts: list[Any], finished_at: Any) -> bool:
    return finished_at is not None or any(isinstance(p, dict) and p.get("type") == "finish" for p in parts)


# --------------------------------------------------------------------------- parsing

_MESSAGE_COLUMNS = ("rowid", "id", "role", "parts", "created_at", "finished_at", "is_summary_message")


def parse(unit: SourceUnit) -> Session:
    db, session_id = unit.path, unit.session_id

    def load(conn: sqlite3.Connection) -> tuple[dict, list[dict]]:
        session_columns = columns(conn, "sessions")
        parent = None
        if "parent_session_id" in session_columns:
            row = conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
            parent = row[0] if row else None
        return {"parent": parent}, present_rows(conn, "messages", _MESSAGE_COLUMNS,
                                                "session_id = ? ORDER BY created_at, rowid", (session_id,))

    session_row, rows = read_only(db, load)
    cwd = project_of(db)
    session = Session(harness=HARNESS, session_id=session_id, source_path=str(db), cwd=cwd,
                      workdir=workdir_facet(cwd, HARNESS), parent_session_id=opt_str(session_row["parent"]))
    session.is_subagent = session.parent_session_id is not None
    turns = TurnCollector(session)
    for row in rows:
        rowid = row.get("rowid") if type(row.get("rowid")) is int else 0
        try:
            raw = row.get("parts")
            parts = decode_json(decode_text(raw) if isinstance(raw, bytes) else raw) if isinstance(raw, (str, bytes)) \
                else None
            if not isinstance(parts, list):
                session.warnings.append(ParseWarning(str(db), rowid, f"message {row.get('id')}: parts is not a list"))
                continue
            role = row.get("role")
            turn_uuid = turns.claim(row.get("id"), f"{session_id}:{rowid}")
            if role not in ("user", "assistant", "tool") or row.get("is_summary_message"):
                continue
            if role == "assistant" and not _finished(parts, row.get("finished_at")):
                continue
            turns.add(turn_uuid, turns.last_uuid, role, normalize_ts(row.get("created_at")), _blocks(parts))
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(db), rowid, f"message {row.get('id')}: unexpected row "
                                                                  f"({type(exc).__name__}: {exc})"))
    return finish_session(session)
