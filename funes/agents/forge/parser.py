"""Forge conversations: the ``conversations`` table of ``<forge home>/.forge.db``.

Format facts: FORMAT.md.  One unit per conversation that has a context (Forge
stores a conversation before its first message with ``context`` NULL); signature =
``updated_at`` and the context's length, because Forge rewrites the whole
``context`` JSON on every change.  The context's ``messages`` list holds the
conversation as the model sees it, each ``{"message": {kind: …}, "usage"?}`` (or,
written by older builds, ``{kind: …}`` bare), kind one of:

* ``text``: ``{role: System|User|Assistant, content, raw_content?, tool_calls?,
  reasoning_details?, droppable?}``.  System messages are the prompt (the cwd is read
  from its ``<current_working_directory>``); user messages marked ``droppable`` are
  attachments, piped input and resumed todo lists, not the person's words
  (skipped); a user's own words are ``raw_content.Text`` when recorded, else
  ``content`` (the prompt template's rendering); assistant messages give thinking
  (``reasoning_details[].text``), text and tool_use blocks.
* ``tool``: ``{name, call_id, output: {is_error, values: [{"text": …}, …]}}`` →
  tool_result; a shell result's exit code is the ``exit_code`` attribute of its
  ``<shell_output>`` header.
* ``image``: skipped.

Messages carry no time: every turn gets the conversation's ``created_at``.  Turn
id = ``<conversation id>:<index in messages>``; parent = the previous retained turn.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.forge import AGENT, DB_NAME
from funes.traces.common import (
    TurnCollector,
    as_str,
    command_text,
    file_touch,
    finish_session,
    normalize_ts,
    opt_str,
    tool_input_text,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json
from funes.traces.model import Block, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, read_only

HARNESS = AGENT.harness

_CWD = re.compile(r"<current_working_directory>([^<\n]+)</current_working_directory>")
_SHELL_EXIT = re.compile(r'<shell_output\b[^>]*?\bexit_code="(-?[0-9]{1,9})"')
# Forge's tools (forge_domain ToolCatalog, snake_case) and what they do to the file they name.
_FILE_TOOLS = {"read": "read", "write": "write", "patch": "edit", "multi_patch": "edit", "undo": "edit",
               "remove": "delete"}
_SHELL_TOOLS = frozenset({"shell"})


def default_roots() -> list[Path]:
    return AGENT.roots()


def _database(root: Path) -> Path | None:
    db = root if root.is_file() else root / DB_NAME
    return db if db.is_file() else None


def _conversations(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    present = columns(conn, "conversations")
    if not {"conversation_id", "context"} <= present:
        raise sqlite3.DatabaseError("no conversations table: not a Forge database")
    updated = "updated_at" if "updated_at" in present else "''"
    rows = conn.execute(f"SELECT conversation_id, {updated}, LENGTH(context) FROM conversations "
                        "WHERE context IS NOT NULL ORDER BY created_at, rowid")
    return [(str(cid), f"{stamp}:{size}") for cid, stamp, size in rows if cid is not None]


def discover(root: Path) -> Iterator[SourceUnit]:
    """The conversations of the Forge database at or in ``root``; raises
    TraceReadError for a database that cannot be read."""
    db = _database(root)
    if db is None:
        return
    for conversation_id, signature in read_only(db, _conversations):
        yield SourceUnit(HARNESS, db, conversation_id, signature)


# --------------------------------------------------------------------------- one message

def _arguments(value: Any) -> Any:
    """Tool-call arguments as stored: a JSON object, or (unparsed) its text."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return decode_json(value)
        except ValueError:
            return value
    return value


def _tool_use(call: dict[str, Any]) -> Block:
    name = opt_str(call.get("name"))
    raw = call.get("arguments")
    args = _arguments(raw)
    block = Block("tool_use", tool_input_text(raw), name, opt_str(call.get("call_id")))
    if isinstance(args, dict):
        if name in _FILE_TOOLS:
            block.files = file_touch(args.get("file_path") or args.get("path"), _FILE_TOOLS[name])
        elif name in _SHELL_TOOLS:
            block.command = command_text(args.get("command"))
    return block


def _assistant_blocks(text: dict[str, Any]) -> list[Block]:
    blocks = [Block("thinking", as_str(detail.get("text"))) for detail in text.get("reasoning_details") or ()
              if isinstance(detail, dict)]
    blocks.append(Block("text", as_str(text.get("content"))))
    blocks += [_tool_use(call) for call in text.get("tool_calls") or () if isinstance(call, dict)]
    return blocks


def _user_text(text: dict[str, Any]) -> str:
    raw = text.get("raw_content")
    if isinstance(raw, dict) and isinstance(raw.get("Text"), str):
        return raw["Text"]
    return as_str(text.get("content"))


def _value_text(value: Any) -> str:
    """One value of a tool output: ``{"text": s}`` (also the legacy ``markdown``),
    ``{"aI": {value}}`` (a subagent's answer), ``{"pair": [llm, display]}``; images
    and ``"empty"`` give nothing."""
    if not isinstance(value, dict):
        return ""
    for key in ("text", "markdown"):
        if isinstance(value.get(key), str):
            return value[key]
    answer = value.get("aI")
    if isinstance(answer, dict):
        return as_str(answer.get("value"))
    pair = value.get("pair")
    if isinstance(pair, list) and pair:
        return _value_text(pair[0])
    return ""


def _tool_result(tool: dict[str, Any]) -> Block:
    output = tool.get("output") if isinstance(tool.get("output"), dict) else {}
    values = output.get("values") if isinstance(output.get("values"), list) else []
    text = "\n".join(part for part in map(_value_text, values) if part)
    name = opt_str(tool.get("name"))
    exit_code = None
    if name in _SHELL_TOOLS:
        match = _SHELL_EXIT.search(text, 0, 4096)
        exit_code = int(match.group(1)) if match else None
    return Block("tool_result", text, name, opt_str(tool.get("call_id")), exit_code=exit_code)


# --------------------------------------------------------------------------- parsing

def parse(unit: SourceUnit) -> Session:
    db, conversation_id = unit.path, unit.session_id

    def load(conn: sqlite3.Connection) -> tuple[Any, Any, Any] | None:
        return conn.execute("SELECT context, created_at, rowid FROM conversations WHERE conversation_id = ?",
                            (conversation_id,)).fetchone()

    row = read_only(db, load)
    session = Session(harness=HARNESS, session_id=conversation_id, source_path=str(db), cwd="", workdir="")
    if row is None or not isinstance(row[0], str):
        return finish_session(session)  # deleted since discovery: nothing to index
    context_text, created, rowid = row
    ts = normalize_ts(created)
    try:
        context = decode_json(context_text)
    except ValueError as exc:
        session.warnings.append(ParseWarning(str(db), rowid, f"conversation {conversation_id}: context is not JSON "
                                                             f"({exc})"))
        return finish_session(session)
    messages = context.get("messages") if isinstance(context, dict) else None
    if not isinstance(messages, list):
        session.warnings.append(ParseWarning(str(db), rowid, f"conversation {conversation_id}: no messages list"))
        return finish_session(session)
    turns = TurnCollector(session)
    for index, entry in enumerate(messages):
        turn_uuid = f"{conversation_id}:{index}"
        try:
            message = entry.get("message") if isinstance(entry, dict) and isinstance(entry.get("message"), dict) \
                else entry
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
            if isinstance(message.get("text"), dict):
                text = message["text"]
                role = text.get("role")
                if role == "System":
                    match = _CWD.search(as_str(text.get("content")))
                    if match and not session.cwd:
                        session.cwd = match.group(1).strip()
                    continue
                if role == "User" and not text.get("droppable"):
                    turns.add(turn_uuid, turns.last_uuid, "user", ts, [Block("text", _user_text(text))])
                elif role == "Assistant":
                    turns.add(turn_uuid, turns.last_uuid, "assistant", ts, _assistant_blocks(text))
            elif isinstance(message.get("tool"), dict):
                turns.add(turn_uuid, turns.last_uuid, "tool", ts, [_tool_result(message["tool"])])
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(db), rowid, f"conversation {conversation_id} message {index}: "
                                                                 f"unexpected shape ({type(exc).__name__}: {exc})"))
    session.workdir = workdir_facet(session.cwd, HARNESS)
    return finish_session(session)

