"""Claude Code transcripts: ``<claude home>/projects/<slug>/<session>.jsonl``.

Format facts: FORMAT.md beside this module.  One file is one session, named by its stem.
Subagent transcripts live in ``<slug>/<session>/subagents/agent-<id>.jsonl`` (older
versions: ``<slug>/agent-<id>.jsonl``); their records carry the parent's
``sessionId``, which becomes ``parent_session_id``.

Only ``user`` and ``assistant`` records are conversation.  Skipped as noise: the
compaction summary Claude Code injects after ``/compact`` (``isCompactSummary``),
API error stand-ins (``isApiErrorMessage``), ``[Request interrupted by user…]``
markers, local-command terminal output, and ``isMeta`` records (caveats, ``<command-name>`` and
``<system-reminder>`` wrappers) except for their ``tool_result`` parts: newer
versions flag genuine tool output as meta too, and that output is worth recalling.

turn_uuid = the record's ``uuid`` (stable, unique); a record without one, or
repeating an earlier record's, gets ``"{session_id}:L{line_index}"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.claude import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    clean_branch,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    record_call,
    stated_exit_code,
    tool_input_text,
    walk_files,
    workdir_facet,
)
from funes.traces.jsonl import each_record
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness

_SKIPPED_DIRS = frozenset({"tool-results"})  # externalised big outputs, previewed in the transcript
_SKIPPED_FILES = frozenset({"journal.jsonl"})  # workflow journals, not conversations
# Text that is not what anyone said: interruption markers, and the terminal output
# of local slash commands (/context, /cost: ANSI art) that older versions wrote as
# ordinary user records.
_NOISE_PREFIXES = ("[Request interrupted by user", "<local-command-stdout>", "<local-command-stderr>")
# What each tool does to the file its input names; which tools run a shell command.
_FILE_TOOLS = {"Read": "read", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit", "Write": "write"}
_SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
INTERRUPTED_EXIT_CODE = 130


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_transcript(name: str) -> bool:
    return name.endswith(".jsonl") and name not in _SKIPPED_FILES


def discover(root: Path) -> Iterator[SourceUnit]:
    base = root / "projects" if (root / "projects").is_dir() else root
    for path in walk_files(base, _is_transcript, _SKIPPED_DIRS):
        unit = file_unit(HARNESS, path, path.stem)
        if unit is not None:
            yield unit


def _fallback_workdir(path: Path) -> str:
    """The project folder name (Claude's own cwd slug) when no record has a cwd."""
    folders = path.parts[:-1]
    if "projects" in folders:
        after = len(folders) - folders[::-1].index("projects")
        if after < len(folders):
            return folders[after]
    return path.parent.name


def _text_block(text: str) -> Block:
    return Block("text", "" if text.startswith(_NOISE_PREFIXES) else text)


def _exit_code(text: str, is_error: bool) -> int:
    """A command result's exit status: Claude states it only on failure, as the
    first line (``Exit code 2``); a failure without one reads 1, success 0."""
    if not is_error:
        return 0
    stated = stated_exit_code(text.split("\n", 1)[0])
    return 1 if stated is None or stated == 0 else stated


def _blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [_text_block(content)]
    blocks: list[Block] = []
    if not isinstance(content, list):
        return blocks
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.append(_text_block(as_str(part.get("text"))))
        elif kind == "thinking":
            blocks.append(Block("thinking", as_str(part.get("thinking"))))
        elif kind == "tool_use":
            name = opt_str(part.get("name"))
            block = Block("tool_use", tool_input_text(part.get("input")), name, opt_str(part.get("id")))
            blocks.append(record_call(block, part.get("input"), action=_FILE_TOOLS.get(name or ""),
                                      shell=name in _SHELL_TOOLS))
        elif kind == "tool_result":
            text = joined_text(part.get("content")) or as_str(part.get("text"))
            block = Block("tool_result", text, None, opt_str(part.get("tool_use_id")))
            block.exit_code = _exit_code(text, part.get("is_error") is True)
            blocks.append(block)
        # redacted_thinking (opaque), image, document, server tool parts: nothing to recall
    return blocks


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session_id = path.stem
    session = Session(
        harness=HARNESS,
        session_id=session_id,
        source_path=str(path),
        cwd="",
        workdir="",
        is_subagent=session_id.startswith("agent-"),
    )
    turns = TurnCollector(session)

    def handle(index: int, record: dict[str, Any]) -> None:
        if not session.cwd:
            cwd = record.get("cwd")
            if isinstance(cwd, str) and workdir_facet(cwd):
                session.cwd = cwd
        if session.branch is None:
            session.branch = clean_branch(record.get("gitBranch"))
        kind = record.get("type")
        if kind != "user" and kind != "assistant":
            return
        if session.is_subagent and session.parent_session_id is None:
            parent = opt_str(record.get("sessionId"))
            if parent != session_id:
                session.parent_session_id = parent
        turn_uuid = turns.claim(record.get("uuid"), f"{session_id}:L{index}")
        if record.get("isCompactSummary") is True or record.get("isApiErrorMessage") is True:
            return
        message = record.get("message")
        if not isinstance(message, dict):
            return
        blocks = _blocks(message.get("content"))
        outcome = record.get("toolUseResult")
        if isinstance(outcome, dict) and outcome.get("interrupted") is True:
            for block in blocks:  # the user stopped the command: the status a shell gives Ctrl-C
                if block.block_type == "tool_result":
                    block.exit_code = INTERRUPTED_EXIT_CODE
        if record.get("isMeta") is True:
            blocks = [block for block in blocks if block.block_type == "tool_result"]
        if not blocks:
            return
        role = message.get("role")
        if role != "user" and role != "assistant":
            role = kind
        if role == "user" and all(block.block_type == "tool_result" for block in blocks):
            role = "tool"
        parent_uuid = opt_str(record.get("parentUuid"))
        turn = turns.add(turn_uuid, parent_uuid, role, normalize_ts(record.get("timestamp")), blocks)
        if turn is not None and record.get("isSidechain") is True:
            turn.is_subagent = True

    each_record(path, session.warnings, handle)
    if session.is_subagent and session.parent_session_id is None and path.parent.name == "subagents":
        session.parent_session_id = path.parent.parent.name  # <session>/subagents/agent-*.jsonl
    session.workdir = workdir_facet(session.cwd, _fallback_workdir(path))
    return finish_session(session)
