"""Cursor: the agent's JSONL transcripts and the IDE's ``state.vscdb`` stores.

Format facts: FORMAT.md beside this module.  Cursor is closed source: these shapes come
from published format notes and issue threads, not from its code.

* **Transcripts** (Cursor CLI ``cursor-agent``, and agent sessions of the IDE):
  ``~/.cursor/projects/<encoded workspace>/agent-transcripts/<id>/<id>.jsonl``
  (older: ``agent-transcripts/<id>.jsonl``), subagents in
  ``<id>/subagents/<child>.jsonl``.  One ``{"role", "message": {"content": [...]}}``
  per line in the Anthropic message shape (``text``, ``tool_use``), plus
  ``{"type": "turn_ended"}`` markers; no timestamps and no tool output.  User text
  is wrapped in ``<user_query>`` (and may start with a ``<timestamp>`` tag).
  Turn id = ``"{session}:{line}"``: the file only grows.  Signature: size and mtime.
* **IDE** ``<Cursor user dir>/globalStorage/state.vscdb`` (and
  ``workspaceStorage/<hash>/state.vscdb``): table ``cursorDiskKV(key, value)``,
  ``composerData:<composerId>`` (a conversation: ``fullConversationHeadersOnly``
  lists its bubbles in order; older ones inline them in ``conversation``) and
  ``bubbleId:<composerId>:<bubbleId>`` (one message: ``type`` 1 user / 2 assistant,
  ``text``, ``thinking.text``, ``toolFormerData`` for a tool call and its result,
  ``createdAt`` ISO).  One unit per composer; signature = bubble count and the
  newest rowid of its keys (Cursor replaces a key's row on every write).  Turn id =
  bubble id; a tool result is its own turn ``"{bubble}:result"``.  The workspace
  folder comes from ``workspaceStorage/*/workspace.json`` of the workspace whose
  ``composer.composerData`` lists the composer.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from funes.agents.cursor import AGENT, DB_NAME, TRANSCRIPTS
from funes.errors import TraceReadError
from funes.traces.common import (
    TurnCollector,
    as_str,
    command_text,
    file_touch,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    tagged_spans,
    tool_input_text,
    walk_files,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json, each_record
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, decode_text, read_only

HARNESS = AGENT.harness

_USER_QUERY_OPEN, _USER_QUERY_CLOSE = "<user_query>", "</user_query>"
_TIMESTAMP_TAG = re.compile(r"^\s*<timestamp>(.*?)</timestamp>\s*", re.DOTALL)


def default_roots() -> list[Path]:
    return AGENT.roots()


# --------------------------------------------------------------------------- discovery

def _is_transcript(path: Path) -> bool:
    return path.suffix == ".jsonl" and TRANSCRIPTS in path.parts


def _databases(root: Path) -> list[Path]:
    if root.is_file():
        return [root] if root.suffix == ".vscdb" else []
    found = sorted(root.glob(f"globalStorage/{DB_NAME}")) + sorted(root.glob(f"workspaceStorage/*/{DB_NAME}"))
    if (root / DB_NAME).is_file():
        found.insert(0, root / DB_NAME)
    return found


def _composer_stats(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    if not {"key", "value"} <= columns(conn, "cursorDiskKV"):
        return []  # a workspace database of an older Cursor, or no Cursor store at all
    composers = {key[len("composerData:"):]: rowid for key, rowid in conn.execute(
        "SELECT key, rowid FROM cursorDiskKV WHERE key LIKE 'composerData:%' ORDER BY rowid")}
    bubbles = {cid: (count, newest) for cid, count, newest in conn.execute(
        "SELECT substr(key, 10, instr(substr(key, 10), ':') - 1) AS cid, COUNT(*), MAX(rowid) "
        "FROM cursorDiskKV WHERE key LIKE 'bubbleId:%:%' GROUP BY cid")}
    found = []
    for cid, rowid in composers.items():
        count, newest = bubbles.get(cid, (0, 0))
        found.append((cid, f"{count}:{max(rowid, newest or 0)}"))
    return found


def discover(root: Path) -> Iterator[SourceUnit]:
    """IDE composers in every ``state.vscdb`` under ``root``, and every transcript
    file.  Raises TraceReadError for a database that cannot be read."""
    seen: set[str] = set()
    for db in _databases(root):
        for composer_id, signature in read_only(db, _composer_stats):
            if composer_id not in seen:
                seen.add(composer_id)
                yield SourceUnit(HARNESS, db, composer_id, signature)
    if (root.is_file() and root.suffix == ".vscdb") or (root / "globalStorage").is_dir():
        return  # an IDE store: its folders hold no transcripts, and a walk of them is long
    folder = root / "projects" if (root / "projects").is_dir() else root  # ~/.cursor: not its extensions
    for path in walk_files(folder, lambda name: name.endswith(".jsonl")):
        if (_is_transcript(path) or root.is_file()) and path.stem not in seen:
            unit = file_unit(HARNESS, path, path.stem)
            if unit is not None:
                seen.add(path.stem)
                yield unit


# --------------------------------------------------------------------------- tools

_READ_TOOLS = {"read", "read_file"}
_WRITE_TOOLS = {"write", "create_file"}
_EDIT_TOOLS = {"edit", "edit_file", "edit_file_v2", "strreplace", "str_replace", "multiedit", "search_replace"}
_DELETE_TOOLS = {"delete", "delete_file"}
_FILE_ACTION_OF_TOOL = {**dict.fromkeys(_READ_TOOLS, "read"), **dict.fromkeys(_WRITE_TOOLS, "write"),
                        **dict.fromkeys(_EDIT_TOOLS, "edit"), **dict.fromkeys(_DELETE_TOOLS, "delete")}
_SHELL_TOOLS = {"shell", "run_terminal_cmd", "run_terminal_command", "bash"}
_PATH_KEYS = ("path", "file_path", "target_file", "filePath", "relativeWorkspacePath")


def _provenance(tool: str | None, args: dict[str, Any]) -> tuple[tuple[FileTouch, ...], str | None]:
    name = tool.lower() if tool else ""
    action = _FILE_ACTION_OF_TOOL.get(name)
    if action is not None:
        for key in _PATH_KEYS:
            path = args.get(key)
            if isinstance(path, str):
                return file_touch(path, action), None
        return (), None
    if name in _SHELL_TOOLS:
        return (), command_text(args.get("command"))
    return (), None


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            value = decode_json(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


# --------------------------------------------------------------------------- transcripts

def _user_text(text: str) -> tuple[str, str]:
    """(the user's words, the ``<timestamp>`` tag's time or "")."""
    stamp = ""
    tag = _TIMESTAMP_TAG.match(text)
    if tag:
        stamp = normalize_ts(tag.group(1).strip())
        text = text[tag.end():]
    queries = tagged_spans(text, _USER_QUERY_OPEN, _USER_QUERY_CLOSE)
    if not queries:
        return text, stamp
    start, end = queries[0]
    return text[start + len(_USER_QUERY_OPEN):end - len(_USER_QUERY_CLOSE)].strip(), stamp


def _transcript_blocks(role: str, content: Any) -> tuple[list[Block], str, str]:
    """(blocks, the user's ``<timestamp>`` or "", the first shell call's
    ``working_directory`` or "")."""
    if role == "user":
        text, stamp = _user_text(joined_text(content))
        return [Block("text", text)], stamp, ""
    blocks = []
    folder = ""
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict):
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                blocks.append(Block("text", text if isinstance(text, str) else ""))
            elif kind == "tool_use":
                raw, name = part.get("input"), opt_str(part.get("name"))
                args = _arguments(raw)
                files, command = _provenance(name, args)
                blocks.append(Block("tool_use", tool_input_text(raw), name, opt_str(part.get("id")), files, command))
                if command is not None and not folder:
                    working = args.get("working_directory")
                    folder = working if isinstance(working, str) else ""
            elif kind == "thinking":
                blocks.append(Block("thinking", as_str(part.get("thinking")) or as_str(part.get("text"))))
        elif isinstance(part, str):
            blocks.append(Block("text", part))
    return blocks, "", folder


def _parse_transcript(unit: SourceUnit, session: Session, turns: TurnCollector) -> None:
    path = unit.path
    if path.parent.name == "subagents":
        session.is_subagent = True
        session.parent_session_id = path.parent.parent.name

    prefix = f"{unit.session_id}:"

    def handle(index: int, record: dict[str, Any]) -> None:
        role = record.get("role")
        turn_uuid = f"{prefix}{index}"  # positional: a transcript names no turn ids
        message = record.get("message")
        if role not in ("user", "assistant") or not isinstance(message, dict):
            return  # turn_ended markers and anything newer
        blocks, stamp, folder = _transcript_blocks(role, message.get("content"))
        if folder and not session.cwd:  # the transcript names no cwd; shell calls do
            session.cwd = folder
        turns.add(turn_uuid, turns.last_uuid, role, stamp, blocks)

    each_record(path, session.warnings, handle)
    project = next((p for p in path.parents if p.parent.name == "projects"), None)
    session.workdir = workdir_facet(session.cwd, "-" + project.name if project else HARNESS)


# --------------------------------------------------------------------------- IDE store

def _json_value(raw: Any) -> Any:
    if isinstance(raw, bytes):
        raw = decode_text(raw)
    return decode_json(raw) if isinstance(raw, str) and raw.strip() else None


def _workspace_folder(db: Path, composer_id: str) -> str:
    """The folder of the workspace whose ItemTable lists the composer."""
    storage = db.parent.parent / "workspaceStorage" if db.parent.name == "globalStorage" else db.parent.parent
    for workspace_db in sorted(storage.glob(f"*/{DB_NAME}")):
        try:
            listed = read_only(workspace_db, lambda conn: conn.execute(
                "SELECT value FROM ItemTable WHERE key = 'composer.composerData'").fetchone()
                if "key" in columns(conn, "ItemTable") else None)
            data = _json_value(listed[0]) if listed else None
        except (TraceReadError, ValueError):  # a damaged workspace store costs the cwd, not the session
            continue
        composers = data.get("allComposers") if isinstance(data, dict) else None
        ids = {c.get("composerId") for c in composers if isinstance(c, dict)} if isinstance(composers, list) else set()
        if composer_id in ids:
            try:
                folder = json.loads((workspace_db.parent / "workspace.json").read_text()).get("folder")
            except (OSError, ValueError, AttributeError):
                return ""
            if isinstance(folder, str) and folder.startswith("file://"):
                return unquote(urlparse(folder).path)
            return folder if isinstance(folder, str) else ""
    return ""


def _bubble_turns(turns: TurnCollector, bubble_id: str, bubble: dict[str, Any]) -> None:
    kind = bubble.get("type")
    role = "user" if kind == 1 else "assistant" if kind == 2 else None
    turn_uuid = turns.claim(bubble_id, f"{bubble_id}#{len(turns.session.turns)}")
    if role is None:
        return
    ts = normalize_ts(bubble.get("createdAt"))
    thinking = bubble.get("thinking")
    blocks = [Block("thinking", as_str(thinking.get("text")) if isinstance(thinking, dict) else ""),
              Block("text", as_str(bubble.get("text")))]
    tool = bubble.get("toolFormerData")
    result = None
    if isinstance(tool, dict) and role == "assistant":
        name = opt_str(tool.get("name")) or (opt_str(tool.get("tool")) if isinstance(tool.get("tool"), str) else None)
        raw = tool.get("rawArgs") if tool.get("rawArgs") is not None else tool.get("params")
        files, command = _provenance(name, _arguments(raw))
        call_id = opt_str(tool.get("toolCallId"))
        blocks.append(Block("tool_use", tool_input_text(raw), name, call_id, files=files, command=command))
        output = tool.get("result")
        if output is not None:
            result = Block("tool_result", tool_input_text(output), name, call_id)
    turns.add(turn_uuid, turns.last_uuid, role, ts, blocks)
    if result is not None:
        turns.add(turns.claim(f"{bubble_id}:result", f"{bubble_id}:result#{len(turns.session.turns)}"),
                  turn_uuid, "tool", ts, [result])


def _load_composer(composer_id: str) -> Callable[[sqlite3.Connection], tuple[Any, dict[str, Any]]]:
    def load(conn: sqlite3.Connection) -> tuple[Any, dict[str, Any]]:
        row = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (f"composerData:{composer_id}",)).fetchone()
        prefix = f"bubbleId:{composer_id}:"
        bubbles = {key[len(prefix):]: (rowid, value) for key, rowid, value in conn.execute(
            "SELECT key, rowid, value FROM cursorDiskKV WHERE key >= ? AND key < ?", (prefix, prefix + "\uffff"))}
        return (row[0] if row else None), bubbles
    return load


def _parse_ide(unit: SourceUnit, session: Session, turns: TurnCollector) -> None:
    db, composer_id = unit.path, unit.session_id
    raw_composer, bubbles = read_only(db, _load_composer(composer_id))

    def warn(line: int, message: str) -> None:
        session.warnings.append(ParseWarning(str(db), line, message))

    try:
        composer = _json_value(raw_composer)
    except ValueError as exc:
        warn(0, f"composerData:{composer_id}: not JSON ({exc})")
        composer = None
    composer = composer if isinstance(composer, dict) else {}
    headers = composer.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        order = [h.get("bubbleId") for h in headers if isinstance(h, dict) and isinstance(h.get("bubbleId"), str)]
        for bubble_id in order:
            rowid, raw = bubbles.get(bubble_id, (0, None))
            try:
                bubble = _json_value(raw)
                if isinstance(bubble, dict):
                    _bubble_turns(turns, bubble_id, bubble)
                elif raw is not None:
                    warn(rowid, f"bubble {bubble_id}: not a JSON object")
            except SHAPE_ERRORS as exc:
                warn(rowid, f"bubble {bubble_id}: unexpected shape ({type(exc).__name__}: {exc})")
    else:
        inline = composer.get("conversation")
        for index, bubble in enumerate(inline if isinstance(inline, list) else []):
            if isinstance(bubble, dict):
                try:
                    _bubble_turns(turns, opt_str(bubble.get("bubbleId")) or f"{composer_id}:{index}", bubble)
                except SHAPE_ERRORS as exc:
                    warn(0, f"composer {composer_id} bubble {index}: unexpected shape ({type(exc).__name__}: {exc})")
    session.cwd = _workspace_folder(db, composer_id)
    session.workdir = workdir_facet(session.cwd, HARNESS)


def parse(unit: SourceUnit) -> Session:
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(unit.path), cwd="", workdir="")
    turns = TurnCollector(session)
    if unit.path.suffix == ".jsonl":
        _parse_transcript(unit, session, turns)
    else:
        _parse_ide(unit, session, turns)
    return finish_session(session)
