"""Auggie (Augment Code's CLI) sessions: ``~/.augment/sessions/<session id>.json``.

Format facts: FORMAT.md.  One JSON document per session, rewritten whole (temp file,
then rename) after every exchange: ``{sessionId, created, modified, chatHistory:
[...], agentState, workspaceId?, title?, …}``.  Each ``chatHistory`` item is
``{exchange, completed, sequenceId, finishedAt, isHistorySummary, …}``; an exchange is
one model call: ``request_message`` (what the user typed, "" when the call only
carries tool results), ``request_nodes`` (``type`` 0 text, 1 tool result, 4 IDE
state with the workspace folders, …), ``response_text`` and ``response_nodes``
(``type`` 0 text, 5 tool use, 8 thinking, …), ``request_id``.

Per exchange: a request turn (the user's words; tool results → tool_result, the
turn's role ``tool`` when that is all it holds) and a response turn (thinking,
text, tool_use; ``response_text`` when there are no nodes), both at the item's
``finishedAt``.  Skipped: history-summary items (Auggie's compaction), backup files
(``<id>-backup<n>.json``).  cwd = the first IDE state node's first workspace folder
(``repository_root``, else ``folder_root``), as Auggie itself reads it.
turn_uuid = ``"{request_id}:request"`` / ``":response"`` (``"{session}:{index}…"``
without a request id); parent = the previous turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.auggie import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    tool_input_text,
    tool_turn_role,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import named_tool_provenance
from funes.traces.jsonl import SHAPE_ERRORS, load_json_file, message_objects, shape_warning
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness
TEXT, TOOL_RESULT, IDE_STATE = 0, 1, 4  # request node types
RAW_RESPONSE, TOOL_USE, THINKING = 0, 5, 8  # response node types
FILE_TOOLS = {"view": (("path",), "read"), "str-replace-editor": (("path",), "edit"),
              "save-file": (("path",), "write"), "remove-files": (("file_paths",), "delete")}
SHELL_TOOLS = frozenset({"launch-process"})
_provenance = named_tool_provenance(FILE_TOOLS, SHELL_TOOLS)
_RETURN_CODE = re.compile(r"<return-code>\s*(-?\d+)\s*</return-code>")
_NOT_SESSIONS = re.compile(r".*-backup\d+\.json|.*\.tmp")


def default_roots() -> list[Path]:
    return AGENT.roots()


def discover(root: Path) -> Iterator[SourceUnit]:
    if root.is_file():
        paths: Iterator[Path] = iter([root])
    else:
        base = root / "sessions" if (root / "sessions").is_dir() else root
        paths = walk_files(base, lambda name: name.endswith(".json") and not _NOT_SESSIONS.fullmatch(name))
    for path in paths:
        unit = file_unit(HARNESS, path, path.stem)
        if unit is not None:
            yield unit


def _nodes(value: Any) -> list[dict[str, Any]]:
    return [node for node in value if isinstance(node, dict)] if isinstance(value, list) else []


def _request(exchange: dict[str, Any]) -> list[Block]:
    nodes = _nodes(exchange.get("request_nodes"))
    typed = as_str(exchange.get("request_message")) or "\n".join(
        as_str(node["text_node"].get("content")) for node in nodes
        if node.get("type") == TEXT and isinstance(node.get("text_node"), dict))
    blocks = [Block("text", typed)]
    for node in nodes:
        result = node.get("tool_result_node")
        if node.get("type") == TOOL_RESULT and isinstance(result, dict):
            text = as_str(result.get("content"))
            match = _RETURN_CODE.search(text)
            blocks.append(Block("tool_result", text, None, opt_str(result.get("tool_use_id")),
                                exit_code=int(match.group(1)) if match else None))
    return blocks


def _response(exchange: dict[str, Any]) -> list[Block]:
    nodes = _nodes(exchange.get("response_nodes"))
    if not nodes:
        return [Block("text", as_str(exchange.get("response_text")))]
    blocks = []
    for node in nodes:
        kind = node.get("type")
        if kind == RAW_RESPONSE:
            blocks.append(Block("text", as_str(node.get("content"))))
        elif kind == THINKING and isinstance(node.get("thinking"), dict):
            thinking = node["thinking"]
            blocks.append(Block("thinking", as_str(thinking.get("content")) or as_str(thinking.get("summary"))))
        elif kind == TOOL_USE and isinstance(node.get("tool_use"), dict):
            use = node["tool_use"]
            name, arguments = opt_str(use.get("tool_name")), use.get("input_json")
            files, command = _provenance(name, arguments)
            blocks.append(Block("tool_use", tool_input_text(arguments), name, opt_str(use.get("tool_use_id")),
                                files=files, command=command))
    return blocks


def _workspace(exchange: dict[str, Any]) -> str:
    for node in _nodes(exchange.get("request_nodes")):
        state = node.get("ide_state_node")
        folders = state.get("workspace_folders") if isinstance(state, dict) else None
        if node.get("type") == IDE_STATE and isinstance(folders, list):
            for folder in folders:
                if isinstance(folder, dict):
                    return as_str(folder.get("repository_root")) or as_str(folder.get("folder_root"))
    return ""


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    document = load_json_file(path, session.warnings, "chatHistory")
    history = document.get("chatHistory") if isinstance(document, dict) else None
    turns = TurnCollector(session)
    for index, where, item in message_objects(path, history if isinstance(history, list) else [], session.warnings):
        exchange = item.get("exchange")
        if item.get("isHistorySummary") is True or not isinstance(exchange, dict):
            continue
        try:
            ts = normalize_ts(item.get("finishedAt"))
            if not session.cwd:
                session.cwd = _workspace(exchange)
            request_id = opt_str(exchange.get("request_id"))
            base = request_id or f"{unit.session_id}:{index}"
            request = _request(exchange)
            ask = turns.claim(f"{base}:request", f"{unit.session_id}:{index}:request")
            turns.add(ask, turns.last_uuid, tool_turn_role("user", request), ts, request)
            answer = turns.claim(f"{base}:response", f"{unit.session_id}:{index}:response")
            turns.add(answer, turns.last_uuid, "assistant", ts, _response(exchange))
        except SHAPE_ERRORS as exc:
            session.warnings.append(shape_warning(path, where, exc))
    session.workdir = workdir_facet(session.cwd)
    return finish_session(session)
