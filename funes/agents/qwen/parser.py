"""Qwen Code (QwenLM/qwen-code) chats: ``<runtime>/projects/<cwd slug>/chats/<id>.jsonl``.

Format facts: FORMAT.md.  Qwen Code forked Google's agent CLI but records its own
way: an append-only JSON Lines tree like Claude Code's (``uuid``/``parentUuid``,
``sessionId``, ``timestamp``, ``cwd``, ``gitBranch`` on every record), each record's
``message`` a Google GenAI ``Content`` (``{role, parts}``).  ``<runtime>`` is
``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen``; the slug is the project
root with every non-alphanumeric character replaced by ``-``.  Archived sessions sit in
``chats/archive/``; background subagents in ``subagents/<session id>/agent-<id>.jsonl``
(their records carry the parent's ``sessionId`` and ``isSidechain``).

Kept: ``user`` records typed by the user (``provenance`` ``real_user``; mid-turn
messages), ``assistant`` records (parts: ``thought`` → thinking, text, ``functionCall``
→ tool_use) and ``tool_result`` records (``functionResponse`` parts).  Skipped: every
``system`` record (telemetry, compression checkpoints, slash commands, rewinds, file
snapshots) and synthetic user records (notifications, cron prompts, goal runtime).
``/rewind`` appends a new branch (a record whose ``parentUuid`` is earlier); both
branches stay.

turn_uuid = the record ``uuid`` (or ``"{session id}:L{line}"`` when missing or repeated);
parent = the nearest ancestor that is a turn (parents are often telemetry records), so
a rewind's branch points at the turn it continues from.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.qwen import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    clean_branch,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    path_touches,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import call_block, part_list, part_text, response_text, shell_exit_code
from funes.traces.jsonl import each_record
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness

_SYNTHETIC_USER_SUBTYPES = frozenset({"notification", "cron", "goal_runtime"})
_REMINDER = "<system-reminder>"
SHELL_TOOLS = frozenset({"run_shell_command"})
FILE_TOOLS: dict[str, tuple[tuple[str, ...], str]] = {
    "read_file": (("file_path",), "read"),
    "write_file": (("file_path",), "write"),
    "edit": (("file_path",), "edit"),
    "notebook_edit": (("notebook_path",), "edit"),
}


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_transcript(path: Path) -> bool:
    parts = path.parts
    return path.name.endswith(".jsonl") and ("chats" in parts[-3:-1] or "subagents" in parts[-3:-2])


def discover(root: Path) -> Iterator[SourceUnit]:
    if root.is_file():
        paths: Iterator[Path] = iter([root])
    else:
        base = root / "projects" if (root / "projects").is_dir() else root
        paths = (path for path in walk_files(base, lambda name: name.endswith(".jsonl")) if _is_transcript(path))
    for path in paths:
        unit = file_unit(HARNESS, path, path.stem)
        if unit is not None:
            yield unit


def _tool_use(name: str | None, call_id: str | None, arguments: Any) -> Block:
    block = call_block(name, call_id, arguments)
    if name in FILE_TOOLS:
        keys, action = FILE_TOOLS[name]
        block.files = path_touches(arguments, keys, action)
    elif name in SHELL_TOOLS and isinstance(arguments, dict):
        block.command = opt_str(arguments.get("command"))
    return block


def _user_blocks(parts: list[Any]) -> list[Block]:
    texts = [part_text(part) for part in parts]
    return [Block("text", "\n".join(text for text in texts if text and not text.lstrip().startswith(_REMINDER)))]


def _model_blocks(parts: list[Any]) -> list[Block]:
    blocks = []
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            blocks.append(_tool_use(opt_str(call.get("name")), opt_str(call.get("id")), call.get("args")))
        elif isinstance(part, dict) and part.get("thought"):
            blocks.append(Block("thinking", part_text(part, thought=True)))
        else:
            blocks.append(Block("text", part_text(part)))
    return blocks


def _result_blocks(parts: list[Any], tool_call_result: Any) -> list[Block]:
    display = tool_call_result.get("resultDisplay") if isinstance(tool_call_result, dict) else None
    recorded_exit = display.get("exitCode") if isinstance(display, dict) and display.get("type") == "shell_result" else None
    blocks = []
    for part in parts:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(response, dict):
            continue
        name = opt_str(response.get("name"))
        text = response_text(response.get("response"))
        exit_code = None
        if name in SHELL_TOOLS:
            exit_code = recorded_exit if type(recorded_exit) is int else shell_exit_code(text)
        blocks.append(Block("tool_result", text, name, opt_str(response.get("id")), exit_code=exit_code))
    return blocks


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session_id = path.stem
    session = Session(harness=HARNESS, session_id=session_id, source_path=str(path), cwd="", workdir="",
                      is_subagent=path.parent.parent.name == "subagents")
    turns = TurnCollector(session)
    parents: dict[str, str | None] = {}  # every record's parent, skipped ones too
    kept: set[str] = set()

    def retained_parent(parent: str | None) -> str | None:
        """The nearest ancestor that is a turn: parents often are telemetry records."""
        seen: set[str] = set()
        while parent is not None and parent not in kept and parent not in seen:
            seen.add(parent)
            parent = parents.get(parent)
        return parent if parent in kept else None

    def handle(index: int, record: dict[str, Any]) -> None:
        uuid = opt_str(record.get("uuid"))
        if uuid is not None and uuid not in parents:
            parents[uuid] = opt_str(record.get("parentUuid"))
        if not session.cwd and workdir_facet(as_str(record.get("cwd"))):
            session.cwd = record["cwd"]
        if session.branch is None:
            session.branch = clean_branch(record.get("gitBranch"))
        if record.get("isSidechain") is True:
            session.is_subagent = True
        if session.is_subagent and session.parent_session_id is None:
            parent = opt_str(record.get("sessionId"))
            if parent != session_id:
                session.parent_session_id = parent
        kind = record.get("type")
        if kind not in ("user", "assistant", "tool_result"):
            return  # system records: telemetry, checkpoints, commands, rewinds
        turn_uuid = turns.claim(record.get("uuid"), f"{session_id}:L{index}")
        if kind == "user" and (record.get("subtype") in _SYNTHETIC_USER_SUBTYPES or record.get("provenance") == "system"):
            return
        message = record.get("message")
        parts = part_list(message.get("parts")) if isinstance(message, dict) else []
        if kind == "user":
            role, blocks = "user", _user_blocks(parts)
        elif kind == "assistant":
            role, blocks = "assistant", _model_blocks(parts)
        else:
            role, blocks = "tool", _result_blocks(parts, record.get("toolCallResult"))
        parent = retained_parent(opt_str(record.get("parentUuid")))
        if turns.add(turn_uuid, parent, role, normalize_ts(record.get("timestamp")), blocks) is not None:
            kept.add(turn_uuid)

    each_record(path, session.warnings, handle)
    if session.is_subagent and session.parent_session_id is None and path.parent.parent.name == "subagents":
        session.parent_session_id = path.parent.name
    nested = path.parent.name == "archive" or path.parent.parent.name == "subagents"
    project_dir = path.parent.parent.parent if nested else path.parent.parent
    session.workdir = workdir_facet(session.cwd, project_dir.name)
    return finish_session(session)
