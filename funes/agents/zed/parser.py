"""Zed agent threads: the ``threads`` table of ``<data dir>/threads/threads.db``.

Format facts: FORMAT.md.  One unit per row; signature = ``updated_at`` and the
data's length (Zed rewrites the whole row on every save).  ``data`` is the thread
as JSON, zstd-compressed when ``data_type`` is ``zstd`` (every save since 2025),
plain when ``json``.  A thread of the current format (``version`` ``0.3.0``) is
``{title, messages, updated_at, initial_project_snapshot, model, subagent_context, …}``,
each message serde's externally tagged enum:

* ``{"User": {id, content: [{"Text": s} | {"Mention": {uri, content}} | {"Image": …}]}}``
  → a user turn (its text; mentions attach files and threads as context: skipped);
* ``{"Agent": {content: [{"Text": s} | {"Thinking": {text, signature}} |
  {"RedactedThinking": s} | {"ToolUse": {id, name, raw_input, input, …}}],
  tool_results: {<id>: {tool_use_id, tool_name, is_error, content, output}}}}`` → an
  assistant turn, then one tool turn holding the results;
* ``"Resume"`` (a "continue where you left off" marker): skipped.

Threads saved by Zed's first agent (no ``version``) keep ``{role, segments: [{type:
text|thinking, text}], tool_uses, tool_results}`` messages: read the same way.
Messages carry no time: every turn gets the thread's ``created_at`` (else
``updated_at``).  Turn id = ``<thread id>:<index>`` (``:<index>:results``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.zed import AGENT, DB_NAME
from funes.traces.common import (
    TurnCollector,
    as_str,
    call_arguments,
    clean_branch,
    command_text,
    compact_json,
    finish_session,
    normalize_ts,
    opt_str,
    path_touches,
    paused_gc,
    tool_input_text,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json_fast
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, read_only

HARNESS = AGENT.harness
# Zed's built-in agent tools (crates/agent/src/tools) and what each does to the path it names.
_FILE_TOOLS = {"read_file": "read", "edit_file": "edit", "streaming_edit_file": "edit", "delete_path": "delete",
               "write_file": "write", "create_directory": "write", "save_file": "write",
               "restore_file_from_disk": "write"}
_SHELL_TOOLS = frozenset({"terminal"})
_PATH_KEYS = ("path", "paths")


def default_roots() -> list[Path]:
    return AGENT.roots()


def _database(root: Path) -> Path | None:
    for candidate in (root, root / DB_NAME, root / "threads" / DB_NAME):
        if candidate.is_file():
            return candidate
    return None


def _threads(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    if not {"id", "data", "data_type"} <= columns(conn, "threads"):
        raise sqlite3.DatabaseError("no threads table: not Zed's threads database")
    rows = conn.execute("SELECT id, updated_at, LENGTH(data) FROM threads ORDER BY updated_at, rowid")
    return [(str(tid), f"{stamp}:{size}") for tid, stamp, size in rows if tid is not None]


def discover(root: Path) -> Iterator[SourceUnit]:
    """The threads of the Zed database at or in ``root``; raises TraceReadError for
    a database that cannot be read."""
    db = _database(root)
    if db is None:
        return
    for thread_id, signature in read_only(db, _threads):
        yield SourceUnit(HARNESS, db, thread_id, signature)


# --------------------------------------------------------------------------- one thread

def _thread_json(data_type: Any, data: Any) -> Any:
    if not isinstance(data, (bytes, str)):
        raise ValueError("no data")
    if data_type == "zstd":
        import zstandard

        data = zstandard.ZstdDecompressor().decompressobj().decompress(
            data.encode("utf-8") if isinstance(data, str) else data)
    return decode_json_fast(data)  # bytes as UTF-8 with invalid sequences replaced, as decode_json reads them


def _result_text(content: Any) -> str:
    """A tool result's content in any shape Zed's deserializer accepts: a string,
    ``{"Text": s}``, ``{"type": "text", "text": s}``, ``{"text": s}``, or a list of those
    (images give nothing)."""
    if isinstance(content, dict):  # Zed's own shape first: most results
        for key in ("Text", "text"):
            text = content.get(key)
            if isinstance(text, str):
                return text
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text for text in map(_result_text, content) if text)
    return ""


def _tool_use(use: dict[str, Any]) -> Block:
    """A ToolUse: its ``raw_input`` (the arguments' JSON as the model sent it) as the
    text, else its parsed ``input``; provenance from the parsed input."""
    get = use.get
    name, raw, arguments, use_id = get("name"), get("raw_input"), get("input"), get("id")
    if not (isinstance(name, str) and name):
        name = None
    if arguments is None:
        arguments = raw
    files: tuple[FileTouch, ...] = ()
    command = None
    action = _FILE_TOOLS.get(name)  # type: ignore[arg-type]
    if action is not None:
        files = path_touches(arguments, _PATH_KEYS, action)
    elif name in _SHELL_TOOLS:
        mapping = call_arguments(arguments)
        if mapping is not None:
            command = command_text(mapping.get("command"))
    return Block("tool_use", raw if isinstance(raw, str) and raw else tool_input_text(arguments), name,
                 use_id if isinstance(use_id, str) and use_id else None, files, command)


def _results(tool_results: Any) -> list[Block]:
    blocks = []
    for result in tool_results.values() if isinstance(tool_results, dict) else tool_results or ():
        if isinstance(result, dict):
            get = result.get
            content, name, use_id = get("content"), get("tool_name"), get("tool_use_id")
            text = content.get("Text") if type(content) is dict else None  # Zed's own shape: most results
            if not isinstance(text, str):
                text = _result_text(content)
            if not text:
                output = get("output")
                text = compact_json(output) if output is not None else ""
            blocks.append(Block("tool_result", text, name if isinstance(name, str) and name else None,
                                use_id if isinstance(use_id, str) and use_id else None))
    return blocks


def _user_text(content: Any) -> str:
    return "\n".join(item["Text"] for item in content if isinstance(item, dict) and isinstance(item.get("Text"), str)) \
        if isinstance(content, list) else ""


def _agent_blocks(content: Any) -> list[Block]:
    blocks: list[Block] = []
    append = blocks.append
    for item in content if isinstance(content, list) else ():
        if not isinstance(item, dict):
            continue
        text = item.get("Text")
        if isinstance(text, str):
            append(Block("text", text))
            continue
        thinking = item.get("Thinking")
        if isinstance(thinking, dict):
            text = thinking.get("text")
            append(Block("thinking", text if isinstance(text, str) else ""))
            continue
        use = item.get("ToolUse")
        if isinstance(use, dict):
            append(_tool_use(use))
    return blocks


def _legacy(message: dict[str, Any]) -> tuple[str, list[Block], list[Block]]:
    """A first-agent message: (role, blocks, tool results)."""
    role = "assistant" if message.get("role") == "assistant" else "user"
    blocks = [Block("thinking" if segment.get("type") == "thinking" else "text", as_str(segment.get("text")))
              for segment in message.get("segments") or () if isinstance(segment, dict)]
    blocks += [_tool_use(use) for use in message.get("tool_uses") or () if isinstance(use, dict)]
    return role, blocks, _results(message.get("tool_results"))


def _project(session: Session, thread: dict[str, Any], folder_paths: Any, order: Any) -> None:
    """The cwd: the first folder of the thread's workspace (``folder_paths``, newline
    separated, sorted, ``folder_paths_order`` giving each one's original place), else
    the first worktree of the project snapshot; the branch from that snapshot."""
    snapshot = thread.get("initial_project_snapshot")
    worktrees = snapshot.get("worktree_snapshots") if isinstance(snapshot, dict) else None
    first = worktrees[0] if isinstance(worktrees, list) and worktrees and isinstance(worktrees[0], dict) else {}
    if isinstance(folder_paths, str) and folder_paths:
        paths = folder_paths.split("\n")
        places = as_str(order).split(",")
        ranked = sorted(range(len(paths)), key=lambda i: int(places[i]) if i < len(places) and places[i].isdigit()
                        else i)
        session.cwd = paths[ranked[0]]
    else:
        session.cwd = as_str(first.get("worktree_path"))
    git = first.get("git_state")
    if isinstance(git, dict):
        session.branch = clean_branch(git.get("current_branch"))


@paused_gc()
def parse(unit: SourceUnit) -> Session:
    db, thread_id = unit.path, unit.session_id

    def load(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
        present = columns(conn, "threads")
        wanted = [name if name in present else "NULL" for name in
                  ("data_type", "data", "parent_id", "folder_paths", "folder_paths_order", "created_at", "updated_at")]
        return conn.execute(f"SELECT {', '.join(wanted)}, rowid FROM threads WHERE id = ?", (thread_id,)).fetchone()

    row = read_only(db, load)
    session = Session(harness=HARNESS, session_id=thread_id, source_path=str(db), cwd="", workdir="")
    if row is None:
        return finish_session(session)  # deleted since discovery
    data_type, data, parent_id, folder_paths, order, created, updated, rowid = row
    try:
        thread = _thread_json(data_type, data)
    except Exception as exc:  # noqa: BLE001 - a corrupt frame raises zstandard's own error type
        session.warnings.append(ParseWarning(str(db), rowid, f"thread {thread_id}: data is not readable "
                                                             f"({type(exc).__name__}: {exc})"))
        return finish_session(session)
    messages = thread.get("messages") if isinstance(thread, dict) else None
    if not isinstance(messages, list):
        session.warnings.append(ParseWarning(str(db), rowid, f"thread {thread_id}: no messages list"))
        return finish_session(session)
    _project(session, thread, folder_paths, order)
    session.parent_session_id = opt_str(parent_id)
    session.is_subagent = session.parent_session_id is not None
    ts = normalize_ts(created) or normalize_ts(updated) or normalize_ts(thread.get("updated_at"))
    turns = TurnCollector(session)
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue  # "Resume"
        turn_uuid = f"{thread_id}:{index}"
        try:
            user = message.get("User")
            if isinstance(user, dict):
                turns.add(turn_uuid, turns.last_uuid, "user", ts, [Block("text", _user_text(user.get("content")))])
                continue
            agent = message.get("Agent")
            if isinstance(agent, dict):
                role, blocks, results = "assistant", _agent_blocks(agent.get("content")), _results(
                    agent.get("tool_results"))
            elif "role" in message:
                role, blocks, results = _legacy(message)
            else:
                continue  # a shape this reader does not know
            turns.add(turn_uuid, turns.last_uuid, role, ts, blocks)
            if results:
                turns.add(f"{turn_uuid}:results", turns.last_uuid, "tool", ts, results)
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(db), rowid, f"thread {thread_id} message {index}: unexpected "
                                                                 f"shape ({type(exc).__name__}: {exc})"))
    session.workdir = workdir_facet(session.cwd, HARNESS)
    return finish_session(session)
