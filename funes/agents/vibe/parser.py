"""Mistral Vibe (mistralai/mistral-vibe) session logs:
``<vibe home>/logs/session/<prefix>_<YYYYmmdd_HHMMSS>_<short id>/messages.jsonl``.

Format facts: FORMAT.md.  ``messages.jsonl`` holds the conversation but the system
prompt, one ``LLMMessage`` per line, appended after each turn (OpenAI's chat shape:
``{role, content, reasoning_content?, tool_calls?, tool_call_id?, name?,
message_id?, injected?}``, ``content`` always a string).  ``meta.json`` beside it,
rewritten after each turn, holds the session's ``start_time``, ``git_branch`` and
``environment.working_directory``.  A subagent run by the ``task`` tool logs to
``<session folder>/agents/<agent>_<time>_<short id>/``.

Kept: user messages but those Vibe injects (``injected: true``: middleware notes,
compaction summaries, hook output), assistant messages (``reasoning_content`` →
thinking, ``content`` → text, ``tool_calls`` → tool_use) and ``tool`` messages (→
tool_result; a ``bash`` result's exit code from its ``returncode:`` or ``Return
code:`` line).  Messages carry no time: every turn gets the session's
``start_time``.  Session id = the session folder's name (it ends with the first 8
characters of Vibe's session id).  turn_uuid = the message's ``message_id`` (a
``tool`` message has none: ``"{folder}:L{line}"``), parent = the previous turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.vibe import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    clean_branch,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import function_call_blocks, named_tool_provenance
from funes.traces.jsonl import decode_json, each_record
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness
MESSAGES = "messages.jsonl"
FILE_TOOLS = {"read": (("file_path",), "read"), "edit": (("file_path",), "edit"), "write_file": (("path",), "write")}
SHELL_TOOLS = frozenset({"bash"})
_provenance = named_tool_provenance(FILE_TOOLS, SHELL_TOOLS)
_RETURN_CODE = re.compile(r"^(?:returncode: |Return code: )(-?\d+)$", re.MULTILINE)


def default_roots() -> list[Path]:
    return AGENT.roots()


def discover(root: Path) -> Iterator[SourceUnit]:
    paths = iter([root]) if root.is_file() else walk_files(root, lambda name: name == MESSAGES)
    for path in paths:
        unit = file_unit(HARNESS, path, path.parent.name)
        if unit is not None:
            yield unit


def _tool_result(message: dict[str, Any]) -> Block:
    text = as_str(message.get("content"))
    name = opt_str(message.get("name"))
    exit_code = None
    if name in SHELL_TOOLS and (match := _RETURN_CODE.search(text)) is not None:
        exit_code = int(match.group(1))
    return Block("tool_result", text, name, opt_str(message.get("tool_call_id")), exit_code=exit_code)


def _metadata(folder: Path) -> dict[str, Any]:
    try:
        meta = decode_json((folder / "meta.json").read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    folder = path.parent
    subagent = folder.parent.name == "agents"
    meta = _metadata(folder)
    environment = meta.get("environment")
    cwd = as_str(environment.get("working_directory")) if isinstance(environment, dict) else ""
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd=cwd,
                      workdir=workdir_facet(cwd), branch=clean_branch(meta.get("git_branch")),
                      is_subagent=subagent, parent_session_id=folder.parent.parent.name if subagent else None)
    turns = TurnCollector(session)
    started = normalize_ts(meta.get("start_time"))

    def handle(index: int, record: dict[str, Any]) -> None:
        role = record.get("role")
        turn_uuid = turns.claim(record.get("message_id"), f"{unit.session_id}:L{index}")
        if role == "user":
            if record.get("injected") is True:
                return
            blocks = [Block("text", as_str(record.get("content")))]
        elif role == "assistant":
            blocks = [Block("thinking", as_str(record.get("reasoning_content"))),
                      Block("text", as_str(record.get("content"))),
                      *function_call_blocks(record.get("tool_calls"), _provenance)]
        elif role == "tool":
            blocks = [_tool_result(record)]
        else:
            return  # system
        turns.add(turn_uuid, turns.last_uuid, role, started, blocks)

    each_record(path, session.warnings, handle)
    return finish_session(session)
