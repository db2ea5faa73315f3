"""Codebuff chats: ``<config>/projects/<project folder name>/chats/<chat id>/chat-messages.json``.

Format facts: FORMAT.md.  ``<config>`` is ``~/.config/manicode`` (every OS).  The
chat id is the chat's start time, ``new Date().toISOString()`` with ``:`` made ``-``;
the file is the CLI's message list (``ChatMessage[]``), rewritten whole after each
turn.  One unit per file; session id = the chat id.

A message is ``{id, variant: user|ai|agent|error, content, blocks?, timestamp,
metadata?}``; ``blocks`` are the rendered turn: ``text`` (``textType`` ``reasoning``
→ thinking), ``tool`` (``toolName``, ``input``, ``output``, ``outputRaw``: a tool_use
and its tool_result), ``agent`` (a spawned agent: its ``content`` and its own
``blocks``, kept in the turn), ``plan`` (text); images, HTML, mode dividers, agent
lists, gate states and questions are skipped, as are ``error`` messages.  Turn id =
message ``id``; parent = the previous retained turn.  Times: the message's
``timestamp`` when it reads as a time (the CLI writes a display time, which does
not), else the epoch milliseconds its id opens with (``ai-<ms>-<hex>``), else the
chat's start.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.codebuff import AGENT, MESSAGES
from funes.traces.common import (
    TurnCollector,
    as_str,
    command_text,
    file_touch,
    file_touches,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    paused_gc,
    tool_input_text,
    walk_files,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, load_json_file, message_objects, shape_warning
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness
_FILE_TOOLS = {"write_file": "write", "str_replace": "edit"}
_READ_TOOLS = frozenset({"read_files"})
_SHELL_TOOLS = frozenset({"run_terminal_command"})
_MAX_AGENT_DEPTH = 8
_ID_TIME = re.compile(r"[a-z]+-([0-9]{13})(?:-|$)")


def default_roots() -> list[Path]:
    return AGENT.roots()


def discover(root: Path) -> Iterator[SourceUnit]:
    for path in walk_files(root, lambda name: name == MESSAGES):
        unit = file_unit(HARNESS, path, path.parent.name)
        if unit is not None:
            yield unit


def chat_started(chat_id: str) -> str:
    """The chat's start time from its id (an ISO time with ``:`` written ``-``)."""
    date, _, time = chat_id.partition("T")
    return normalize_ts(f"{date}T{time.replace('-', ':')}") if time else ""


def _id_time(message_id: Any) -> str:
    """The time a message id records: ``<kind>-<epoch ms>[-…]``, as the CLI makes them."""
    match = _ID_TIME.match(message_id) if isinstance(message_id, str) else None
    return normalize_ts(int(match.group(1))) if match else ""


def _exit_code(raw: Any) -> int | None:
    """``exitCode`` of a terminal command's output (``[{type: json, value: {…}}]``)."""
    for item in raw if isinstance(raw, list) else [raw]:
        value = item.get("value") if isinstance(item, dict) and "value" in item else item
        if isinstance(value, dict) and type(value.get("exitCode")) is int:
            return value["exitCode"]
    return None


def _tool_blocks(block: dict[str, Any]) -> list[Block]:
    name, call_id, arguments = opt_str(block.get("toolName")), opt_str(block.get("toolCallId")), block.get("input")
    use = Block("tool_use", tool_input_text(arguments), name, call_id)
    if isinstance(arguments, dict):
        if name in _READ_TOOLS and isinstance(arguments.get("paths"), list):
            use.files = file_touches([p for p in arguments["paths"] if isinstance(p, str) and p.strip()], "read")
        elif name in _FILE_TOOLS:
            use.files = file_touch(arguments.get("path"), _FILE_TOOLS[name])
        elif name in _SHELL_TOOLS:
            use.command = command_text(arguments.get("command"))
    output = block.get("output")
    result = Block("tool_result", output if isinstance(output, str) else tool_input_text(block.get("outputRaw"))
                   if block.get("outputRaw") is not None else "", name, call_id,
                   exit_code=_exit_code(block.get("outputRaw")) if name in _SHELL_TOOLS else None)
    return [use, result]


def _blocks(blocks: Any, depth: int = 0) -> list[Block]:
    found: list[Block] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            found.append(Block("thinking" if block.get("textType") == "reasoning" else "text",
                               as_str(block.get("content"))))
        elif kind == "tool":
            found += _tool_blocks(block)
        elif kind == "plan":
            found.append(Block("text", as_str(block.get("content"))))
        elif kind == "agent" and depth < _MAX_AGENT_DEPTH:
            found += _blocks(block.get("blocks"), depth + 1)
            found.append(Block("text", as_str(block.get("content"))))
    return found


@paused_gc()
def parse(unit: SourceUnit) -> Session:
    path = unit.path
    chat_id = path.parent.name
    session = Session(harness=HARNESS, session_id=chat_id, source_path=str(path), cwd="", workdir="")
    started = chat_started(chat_id)
    messages = load_json_file(path, session.warnings)
    turns = TurnCollector(session)
    for index, where, message in message_objects(path, messages if isinstance(messages, list) else [],
                                                 session.warnings):
        try:
            turn_uuid = turns.claim(message.get("id"), f"{chat_id}:{index}")
            variant = message.get("variant")
            metadata = message.get("metadata")
            if not session.cwd and isinstance(metadata, dict) and opt_str(metadata.get("bashCwd")):
                session.cwd = metadata["bashCwd"]
            ts = normalize_ts(message.get("timestamp")) or _id_time(message.get("id")) or started
            if variant == "user":
                blocks = _blocks(message.get("blocks")) or [Block("text", as_str(message.get("content")))]
                turns.add(turn_uuid, turns.last_uuid, "user", ts, blocks)
            elif variant in ("ai", "agent"):
                blocks = _blocks(message.get("blocks")) if message.get("blocks") else \
                    [Block("text", as_str(message.get("content")))]
                turns.add(turn_uuid, turns.last_uuid, "assistant", ts, blocks)
        except SHAPE_ERRORS as exc:
            session.warnings.append(shape_warning(path, where, exc))
    # The project folder is the project's name (Codebuff keys it by basename, not path).
    session.workdir = workdir_facet(session.cwd, path.parent.parent.parent.name)
    return finish_session(session)
