"""Continue chat sessions: ``<continue home>/sessions/<session id>.json``.

Format facts: FORMAT.md.  One unit per session file (``sessions.json``, the list
of sessions, is read only for each session's creation time).  The file is
``{sessionId, title, workspaceDirectory, history, mode?, chatModelTitle?, usage?}``,
rewritten whole (``writeFileSync``, no rename) after every change; ``history`` is a
list of ChatHistoryItems ``{message, contextItems, toolCallStates?, reasoning?,
conversationSummary?, …}`` whose ``message.role`` is:

* ``user``: ``content`` a string or parts (``text``; ``imageUrl`` skipped) → text;
  the attached ``contextItems`` (file contents, docs) are context, not words: skipped;
* ``assistant``: ``content`` → text, ``toolCalls[].function{name, arguments}`` →
  tool_use; the item's ``reasoning.text`` → thinking; then one tool turn per
  ``toolCallStates`` entry with ``output`` (the CLI and the IDE keep results there);
* ``thinking`` (the IDE's separate reasoning message) → a thinking block;
* ``tool`` ``{content, toolCallId}`` → tool_result, unless the call's state already
  gave it;
* ``system``: skipped.

Messages carry no time: a turn gets its item's ``reasoning.startAt`` when there is
one, else the session's creation time from ``sessions.json``, else the file's
mtime.  Turn id = ``"{session}:{index}"`` (``:{index}:{call id}`` for results).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from funes.agents.continuedev import AGENT, SESSION_LIST
from funes.traces.common import (
    TurnCollector,
    as_str,
    call_arguments,
    command_text,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    path_touches,
    workdir_facet,
)
from funes.traces.content_parts import function_call_blocks
from funes.traces.jsonl import SHAPE_ERRORS, load_json_file
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness

# Continue's built-in tools (core/tools/builtIn.ts, the CLI's extensions/cli/src/tools) and what
# each does to the file its arguments name.
_FILE_TOOLS = {"read_file": "read", "read_file_range": "read", "create_new_file": "write",
               "edit_existing_file": "edit", "single_find_and_replace": "edit", "multi_edit": "edit",
               "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit"}
_SHELL_TOOLS = frozenset({"run_terminal_command", "Bash"})
_FILE_KEYS = ("filepath", "file_path", "path")


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_session_file(path: Path) -> bool:
    return path.suffix == ".json" and path.name != SESSION_LIST


def discover(root: Path) -> Iterator[SourceUnit]:
    if root.is_file():
        paths = [root] if _is_session_file(root) else []
    elif root.is_dir():
        paths = sorted(p for p in root.iterdir() if _is_session_file(p) and p.is_file())
        if not paths and (root / "sessions").is_dir():  # the Continue home itself
            paths = sorted(p for p in (root / "sessions").iterdir() if _is_session_file(p) and p.is_file())
    else:
        paths = []
    for path in paths:
        unit = file_unit(HARNESS, path, path.stem)
        if unit is not None:
            yield unit


@lru_cache(maxsize=8)
def _created(path: Path, signature: tuple[int, int]) -> dict[str, str]:
    """``sessions.json``'s creation time (epoch ms, as a string) by session id
    (cached per file version: it lists every session)."""
    del signature  # the cache key: a rewritten list is read again
    try:
        entries = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(entries, list):
        return {}
    return {entry["sessionId"]: normalize_ts(_number(entry.get("dateCreated"))) for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str)}


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isdigit() else value


def _session_ts(path: Path, session_id: str) -> str:
    listing = path.parent / SESSION_LIST
    try:
        stat = listing.stat()
        created = _created(listing, (stat.st_size, stat.st_mtime_ns)).get(session_id, "")
    except OSError:
        created = ""
    if created:
        return created
    try:
        return normalize_ts(path.stat().st_mtime)
    except OSError:
        return ""


def _cwd(value: Any) -> str:
    """The workspace folder: a path, or (the IDE extensions) a ``file://`` URI."""
    text = as_str(value)
    if text.startswith("file://"):
        return unquote(urlparse(text).path) or text
    return text


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else joined_text(content)


def _provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if name in _FILE_TOOLS:
        return path_touches(arguments, _FILE_KEYS, _FILE_TOOLS[name])[:1], None
    if name in _SHELL_TOOLS:
        mapping = call_arguments(arguments)
        return (), command_text(mapping.get("command")) if mapping is not None else None
    return (), None


def _state_result(state: dict[str, Any]) -> Block | None:
    output = state.get("output")
    if not isinstance(output, list) or not output:
        return None
    call = state.get("toolCall") if isinstance(state.get("toolCall"), dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    text = "\n".join(as_str(item.get("content")) for item in output if isinstance(item, dict) and item.get("content"))
    return Block("tool_result", text, opt_str(function.get("name")), opt_str(state.get("toolCallId")))


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    document = load_json_file(path, session.warnings, items_key="history")
    if not isinstance(document, dict):
        if document is not None:
            session.warnings.append(ParseWarning(str(path), 0, "not a Continue session (no JSON object)"))
        return finish_session(session)
    session.cwd = _cwd(document.get("workspaceDirectory"))
    history = document.get("history")
    if not isinstance(history, list):
        session.warnings.append(ParseWarning(str(path), 0, "no history list"))
        return finish_session(session)
    fallback_ts = _session_ts(path, unit.session_id)
    names = {}  # call id → tool name, for results that do not repeat it
    answered = set()  # call ids whose result a tool-call state gave
    turns = TurnCollector(session)
    for index, item in enumerate(history):
        turn_uuid = f"{unit.session_id}:{index}"
        try:
            message = item["message"]
            role = message["role"]
            reasoning = item.get("reasoning") if isinstance(item.get("reasoning"), dict) else {}
            ts = normalize_ts(reasoning.get("startAt")) or fallback_ts
            content = _content_text(message.get("content"))
            if role == "user":
                turns.add(turn_uuid, turns.last_uuid, "user", ts, [Block("text", content)])
            elif role == "assistant":
                blocks = [Block("thinking", as_str(reasoning.get("text"))), Block("text", content),
                          *function_call_blocks(message.get("toolCalls"), _provenance)]
                names.update({block.tool_use_id: block.tool_name for block in blocks if block.tool_use_id})
                turns.add(turn_uuid, turns.last_uuid, "assistant", ts, blocks)
                for state in item.get("toolCallStates") or ():
                    result = _state_result(state) if isinstance(state, dict) else None
                    if result is not None:
                        answered.add(result.tool_use_id)
                        turns.add(f"{turn_uuid}:{result.tool_use_id}", turns.last_uuid, "tool", ts, [result])
            elif role == "thinking":
                turns.add(turn_uuid, turns.last_uuid, "assistant", ts, [Block("thinking", content)])
            elif role == "tool":
                call_id = opt_str(message.get("toolCallId"))
                if call_id not in answered or call_id is None:
                    turns.add(turn_uuid, turns.last_uuid, "tool", ts,
                              [Block("tool_result", content, names.get(call_id), call_id)])
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(path), 0, f"history item {index}: unexpected shape "
                                                               f"({type(exc).__name__}: {exc})"))
    session.workdir = workdir_facet(session.cwd, HARNESS)
    return finish_session(session)
