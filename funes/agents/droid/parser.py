"""Factory Droid sessions: ``<factory home>/sessions/<encoded cwd>/<session id>.jsonl``.

Format facts: FORMAT.md.  One file is one session, appended record by record:

* ``{"type": "session_start", id, title, sessionTitle, owner, version, cwd}`` first:
  the session id and the working directory;
* ``{"type": "message", id, timestamp, parentId?, message: {role, content: [parts]}}``:
  Anthropic Messages parts, ``text``, ``thinking``, ``tool_use {id, name, input}``
  and, in user messages, ``tool_result {tool_use_id, content, is_error?}``.  A user
  message of tool results only is a tool turn.  Droid prefixes what the person typed
  with ``<system-reminder>`` blocks (its own context): those are cut out;
* other record types (todo and compaction state) are not conversation: skipped.

turn_uuid = the message's ``id``, else ``"{session}:L{line}"``; parent = ``parentId``.
The ``<id>.settings.json`` beside each file (model, token usage) is not read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.droid import AGENT
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
    patch_touches,
    path_touches,
    tagged_spans,
    workdir_facet,
)
from funes.traces.content_parts import text_part_block, tool_use_part_block
from funes.traces.jsonl import each_record
from funes.traces.model import Block, FileTouch, Session, SourceUnit

HARNESS = AGENT.harness
_REMINDER_OPEN, _REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"
# Droid's tools (the hooks reference's matchers and the names its sessions record) and what
# each does to the file its arguments name.
_FILE_TOOLS = {"Read": "read", "Create": "write", "Write": "write", "Edit": "edit", "MultiEdit": "edit"}
_SHELL_TOOLS = frozenset({"Execute", "Bash"})
_PATCH_TOOLS = frozenset({"ApplyPatch"})
_PATH_KEYS = ("file_path", "path")


def default_roots() -> list[Path]:
    return AGENT.roots()


def discover(root: Path) -> Iterator[SourceUnit]:
    if root.is_file():
        paths = [root] if root.suffix == ".jsonl" else []
    else:
        paths = sorted(Path(folder, name) for folder, _, names in os.walk(root) for name in names
                       if name.endswith(".jsonl"))
    for path in paths:
        unit = file_unit(HARNESS, path, path.stem)
        if unit is not None:
            yield unit


def _provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if name in _FILE_TOOLS:
        return path_touches(arguments, _PATH_KEYS, _FILE_TOOLS[name])[:1], None
    mapping = call_arguments(arguments)
    if name in _SHELL_TOOLS and mapping is not None:
        return (), command_text(mapping.get("command"))
    if name in _PATCH_TOOLS:
        return patch_touches(mapping.get("input") if mapping is not None else arguments), None
    return (), None


def without_reminders(text: str) -> str:
    """``text`` without its ``<system-reminder>…</system-reminder>`` blocks."""
    if _REMINDER_OPEN not in text:
        return text
    kept, at = [], 0
    for start, end in tagged_spans(text, _REMINDER_OPEN, _REMINDER_CLOSE):
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    return "".join(kept).strip()


def _blocks(content: Any, role: str) -> list[Block]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    blocks = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool_use":
            blocks.append(tool_use_part_block(part, _provenance))
        elif kind == "tool_result":
            blocks.append(Block("tool_result", joined_text(part.get("content")) or as_str(part.get("content")),
                                None, opt_str(part.get("tool_use_id"))))
        elif (block := text_part_block(part)) is not None:
            if role == "user" and block.block_type == "text":
                block.text = without_reminders(block.text)
            blocks.append(block)
    return blocks


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    turns = TurnCollector(session)

    def handle(index: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "session_start":
            session.cwd = session.cwd or as_str(record.get("cwd"))
            return
        if kind != "message":
            return
        turn_uuid = turns.claim(record.get("id"), f"{unit.session_id}:L{index}")
        message = record.get("message")
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if role != "user" and role != "assistant":
            return
        blocks = _blocks(message.get("content"), role)
        if role == "user" and blocks and all(block.block_type == "tool_result" for block in blocks):
            role = "tool"
        turns.add(turn_uuid, opt_str(record.get("parentId")), role, normalize_ts(record.get("timestamp")), blocks)

    each_record(path, session.warnings, handle)
    session.workdir = workdir_facet(session.cwd, HARNESS)
    return finish_session(session)
