"""pi (badlogic/pi-mono) sessions: ``<pi agent dir>/sessions/--<cwd>--/<ts>_<uuid>.jsonl``.

Format facts: FORMAT.md beside this module.  Line 1 is the ``session`` header; session id
= its ``id`` (else the UUID in the file name).  Every session-format version is read:
v1 (no entry ids), v2 (``id``/``parentId`` tree) and v3.

Turn ids.  pi's own entry ids (8 hex chars) are what pi, its extension API and
the LoCoMo qrels call a turn, so they are used wherever they are stable.  They are
not stable in one case: a v1 file has no ids, and when pi later opens it, it
migrates the file to v3 and rewrites it with *random* ids.  Rule:

* a file written natively in the tree format (header ``version`` >= 2 and none of
  the v1-only header fields ``provider``/``modelId``/``thinkingLevel``/
  ``branchedFrom``, which pi's migration keeps in the header): turn_uuid = entry
  ``id``, parent = the nearest retained ancestor along ``parentId``;
* a v1 file, or one migrated from v1 (detected by those header fields):
  turn_uuid = ``"{session_id}:{line_index}"``, parent = the previous retained
  turn.  Migration keeps line order, so these ids survive it, and appends never
  move earlier lines.

An entry without an id, or repeating an earlier one, falls back to the positional id.

Only ``message`` entries are conversation: user text, assistant text / thinking /
``toolCall``, ``toolResult`` (role ``tool``), and ``bashExecution`` (a user's
``!command``: a ``bash`` tool_use and its tool_result).  Timestamps: the entry's
ISO ``timestamp``, else the message's epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funes.agents.pi import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    record_call,
    stated_exit_code,
    tool_input_text,
    trailing_uuid,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import text_part_block
from funes.traces.jsonl import each_record, first_record
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness

# Written only by v1 pi; its v1 -> v2 migration leaves them in the header.
_V1_HEADER_FIELDS = ("provider", "modelId", "thinkingLevel", "branchedFrom")
# What pi's file tools do to the file their ``path`` names; its shell tool.
_FILE_TOOLS = {"read": "read", "edit": "edit", "write": "write"}
_SHELL_TOOL = "bash"


@dataclass(frozen=True)
class EntryTools:
    """The tools of an agent that records pi's entries (pi, and agents built on
    it): what each file tool does to the file its arguments name, and the shell
    tools (their results get exit codes)."""

    files: Mapping[str, str]
    shell: frozenset[str]


PI_TOOLS = EntryTools(_FILE_TOOLS, frozenset({_SHELL_TOOL}))


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_session_file(name: str) -> bool:
    return name.endswith(".jsonl")


def _header(record: dict[str, Any] | None) -> dict[str, Any] | None:
    return record if record is not None and record.get("type") == "session" else None


def _session_id(header: dict[str, Any] | None, path: Path) -> str:
    if header is not None and opt_str(header.get("id")):
        return header["id"]
    return trailing_uuid(path.name) or path.stem


def discover(root: Path) -> Iterator[SourceUnit]:
    base = root / "sessions" if (root / "sessions").is_dir() else root
    for path in walk_files(base, _is_session_file):
        unit = file_unit(HARNESS, path, _session_id(_header(first_record(path)), path))
        if unit is not None:
            yield unit


def uses_native_ids(header: dict[str, Any] | None) -> bool:
    """Whether the file was written in the tree format from its first line, so its
    entry ids were never rewritten by a migration."""
    if header is None:
        return False
    version = header.get("version")
    return type(version) is int and version >= 2 and not any(field in header for field in _V1_HEADER_FIELDS)


def _exit_code(text: str, is_error: bool) -> int:
    """pi's bash tool ends a failed command's output with ``Command exited with
    code N``; a failure without that line (a timeout, say) reads 1, success 0."""
    if not is_error:
        return 0
    last = text.rstrip().rsplit("\n", 1)[-1]
    stated = stated_exit_code(last)
    return 1 if stated is None or stated == 0 else stated


def _blocks(role: Any, message: dict[str, Any], tools: EntryTools) -> tuple[str, list[Block]] | None:
    content = message.get("content")
    if role == "user":
        parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        return "user", [Block("text", joined_text(part)) for part in parts]
    if role == "assistant":
        blocks = []
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if (block := text_part_block(part)) is not None:
                blocks.append(block)
            elif part.get("type") == "toolCall":
                name, arguments = opt_str(part.get("name")), part.get("arguments")
                block = Block("tool_use", tool_input_text(arguments), name, opt_str(part.get("id")))
                action, shell = tools.files.get(name or ""), name in tools.shell
                # A call of a tool that names no file and runs no command has nothing for record_call.
                blocks.append(record_call(block, arguments, action=action, shell=shell)
                              if action is not None or shell else block)
        return "assistant", blocks
    if role == "toolResult":
        name, call_id = opt_str(message.get("toolName")), opt_str(message.get("toolCallId"))
        block = Block("tool_result", joined_text(content), name, call_id)
        if name in tools.shell:
            details = message.get("details")
            recorded = details.get("exitCode") if isinstance(details, dict) else None
            block.exit_code = recorded if type(recorded) is int else _exit_code(block.text, message.get("isError") is True)
        return "tool", [block]
    if role == "bashExecution":
        command = as_str(message.get("command"))
        exit_code = message.get("exitCode")
        return "user", [Block("tool_use", command, _SHELL_TOOL, command=command or None),
                        Block("tool_result", as_str(message.get("output")), _SHELL_TOOL,
                              exit_code=exit_code if type(exit_code) is int else None)]
    return None  # custom / hookMessage / branchSummary / compactionSummary: synthetic


def read_entries(session: Session, feed: Callable[[Callable[[int, dict[str, Any]], None]], None],
                 tools: EntryTools = PI_TOOLS) -> None:
    """Fill ``session`` with the turns of pi-format entries: ``feed(handle)`` calls
    ``handle(index, record)`` for each record in order, the header first when there
    is one (its ``id`` replaces ``session.session_id``, its ``cwd`` sets the cwd)."""
    turns = TurnCollector(session)
    started = native = False
    default_id = session.session_id
    nearest_turn: dict[str, str | None] = {}  # entry id -> its nearest retained turn (native ids only)

    def handle(index: int, record: dict[str, Any]) -> None:
        nonlocal started, native
        if not started:  # the first record: the header, if the file has one
            started = True
            header = _header(record)
            session.session_id = opt_str(header.get("id")) or default_id if header is not None else default_id
            native = uses_native_ids(header)
            if header is not None:
                session.cwd = as_str(header.get("cwd"))
                parent_file = opt_str(header.get("parentSession")) or opt_str(header.get("branchedFrom"))
                session.parent_session_id = trailing_uuid(Path(parent_file).name) if parent_file else None
                return
        if native:
            entry_id, parent_id = record.get("id"), record.get("parentId")
            parent_uuid = nearest_turn.get(parent_id) if isinstance(parent_id, str) else None
        else:
            entry_id, parent_uuid = None, turns.last_uuid
        turn_uuid = turns.claim(entry_id, f"{session.session_id}:{index}")
        turn = None
        message = record.get("message") if record.get("type") == "message" else None
        converted = _blocks(message.get("role"), message, tools) if isinstance(message, dict) else None
        if converted is not None:
            ts = normalize_ts(record.get("timestamp")) or normalize_ts(message.get("timestamp"))
            turn = turns.add(turn_uuid, parent_uuid, converted[0], ts, converted[1])
        if native and isinstance(entry_id, str):
            nearest_turn[entry_id] = turn.turn_uuid if turn is not None else parent_uuid

    feed(handle)


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=_session_id(None, path), source_path=str(path), cwd="", workdir="")
    read_entries(session, lambda handle: each_record(path, session.warnings, handle))
    session.workdir = workdir_facet(session.cwd, path.parent.name)
    return finish_session(session)
