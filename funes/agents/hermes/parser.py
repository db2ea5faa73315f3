"""Hermes (NousResearch/hermes-agent) sessions, stored in SQLite.

Format facts: FORMAT.md beside this module.  ``<hermes home>/state.db`` and each
``profiles/<name>/state.db``; a root may be a database file or a folder holding one.

The database is live (WAL mode, written while we read): it is read through
:func:`funes.traces.sqlite.read_only` (read-only, one snapshot per read, retried
while Hermes checkpoints; ``immutable=1`` for a closed WAL database, so no
``-wal``/``-shm`` files are left behind; TraceReadError when it stays unreadable).
Columns are probed with ``PRAGMA table_info``: older schemas
lack many of them.

One unit per session; its signature is ``"{max message id}:{message count}"``.  Rows
become turns in id order (timestamps are not monotonic), turn_uuid = ``str(id)``,
parent = the previous retained turn; a ParseWarning's ``line`` is the row id.
Branch = ``sessions.git_branch``; repository = the ``origin`` remote of the checkout
at ``sessions.git_repo_root`` (Hermes records the root, not the remote), else of
the cwd's checkout.
Skipped rows: system rows, compaction summaries (``_compressed_summary = 1``),
model-only scaffolding (``display_kind = 'hidden'``), and the synthetic
background-review prompts.

De-duplication.  In-place compaction archives old rows (``compacted = 1`` /
``active = 0``) and re-inserts the kept tail as new rows with identical content.  A
row is dropped when an earlier row of the session with the same ``(role, content,
tool_call_id, tool_calls)`` was archived: the lowest id survives.  Matching only
against archived rows keeps genuine repeats ("yes", "continue") that a plain
de-duplication would eat.  Schemas without the archive columns cannot tell the two
apart; there any repeat of an earlier row is dropped, as the spec recommends.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from funes.agents.hermes import AGENT, DB_NAME
from funes.traces.common import (
    TurnCollector,
    call_arguments,
    checkout_identity,
    clean_branch,
    discovery_warning,
    finish_session,
    joined_text,
    json_exit_code,
    normalize_ts,
    opt_str,
    patch_touches,
    record_call,
    tool_input_text,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json
from funes.traces.model import Block, ParseWarning, Session, SourceUnit
from funes.traces.sqlite import columns, decode_text, read_only

HARNESS = AGENT.harness

MULTIMODAL_PREFIX = "\x00json:"  # content holding JSON-encoded OpenAI-style parts
_REVIEW_PROMPT = "Review the conversation above and"  # Hermes' background self-review harness
_ROLES = frozenset({"user", "assistant", "tool"})
# What Hermes' file tools do to the file their ``path`` names (``patch`` in its
# default replace mode edits one); its shell tool.
_FILE_TOOLS = {"read_file": "read", "write_file": "write", "patch": "edit"}
_SHELL_TOOL = "terminal"
_MESSAGE_COLUMNS = (
    "id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp", "reasoning",
    "reasoning_content", "_compressed_summary", "display_kind", "active", "compacted",
)
_SESSION_COLUMNS = ("id", "parent_session_id", "cwd", "git_branch", "git_repo_root", "model_config", "end_reason")
# A child session that continues its parent (not a delegated subagent).
_CONTINUATION_MARKERS = ("_branched_from", "_reset_from")
_CONTINUATION_END_REASONS = frozenset({"compression", "branched", "new_session", "session_reset"})

def default_roots() -> list[Path]:
    return AGENT.roots()


def databases(root: Path) -> list[Path]:
    """The state databases under a Hermes home (its own and every profile's), or
    ``root`` itself when it is a file."""
    if root.is_file():
        return [root]
    found = [root / DB_NAME] if (root / DB_NAME).is_file() else []
    profiles = root / "profiles"
    if profiles.is_dir():
        try:
            names = sorted(os.listdir(profiles))
        except OSError as exc:
            discovery_warning(profiles, f"cannot read folder ({exc.strerror or exc}): its profiles were skipped")
            names = []
        found += [profiles / name / DB_NAME for name in names if (profiles / name / DB_NAME).is_file()]
    return found


def _select(conn: sqlite3.Connection, table: str, wanted: tuple[str, ...], where: str, args: tuple) -> list[dict]:
    present = columns(conn, table)
    if not present:
        raise sqlite3.DatabaseError(f"no {table} table: not a Hermes state database")
    names = [name for name in wanted if name in present]
    order = " ORDER BY id" if "id" in present else ""
    rows = conn.execute(f"SELECT {', '.join(names)} FROM {table} WHERE {where}{order}", args)
    return [dict(zip(names, row)) for row in rows]


def _session_stats(conn: sqlite3.Connection) -> list[tuple]:
    if "session_id" not in columns(conn, "messages"):
        raise sqlite3.DatabaseError("no messages table: not a Hermes state database")
    return conn.execute(
        "SELECT session_id, MAX(id), COUNT(*) FROM messages GROUP BY session_id ORDER BY MIN(id)"
    ).fetchall()


def discover(root: Path) -> Iterator[SourceUnit]:
    """One unit per session with messages; raises TraceReadError for a database that
    cannot be read (so a sweep reports it rather than silently skipping it)."""
    for db in databases(root):
        for session_id, max_id, count in read_only(db, _session_stats):
            if session_id is not None:
                yield SourceUnit(HARNESS, db, str(session_id), f"{max_id}:{count}")


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return decode_text(value)
    return value if isinstance(value, str) else "" if value is None else str(value)


def _content_text(content: str) -> str:
    """Message text, with multimodal content decoded to its text parts."""
    if content.startswith(MULTIMODAL_PREFIX):
        return joined_text(decode_json(content[len(MULTIMODAL_PREFIX):]), ("text", "input_text"))
    return content


def _tool_uses(tool_calls: str) -> list[Block]:
    calls = decode_json(tool_calls) if tool_calls.strip() else []
    blocks = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        name = opt_str(function.get("name"))
        block = Block("tool_use", tool_input_text(function.get("arguments")), name, opt_str(call.get("id")))
        blocks.append(_provenance(block, name, function.get("arguments")))
    return blocks


def _provenance(block: Block, name: str | None, raw: Any) -> Block:
    """Files and command of a Hermes tool call: ``patch`` in patch mode names its
    files in V4A headers, every other file tool in ``path``; ``terminal`` runs
    ``command``."""
    arguments = call_arguments(raw)
    if name == "patch" and arguments is not None and arguments.get("mode") == "patch":
        block.files = patch_touches(arguments.get("patch"))
        return block
    return record_call(block, arguments, action=_FILE_TOOLS.get(name or ""), shell=name == _SHELL_TOOL)


def _blocks(row: dict[str, Any], warn: Callable[[str], None]) -> list[Block]:
    role = row["role"]
    text = _content_text(_text(row.get("content")))
    if role == "user":
        return [Block("text", text)]
    if role == "tool":
        name = opt_str(row.get("tool_name"))
        block = Block("tool_result", text, name, opt_str(row.get("tool_call_id")))
        if name == _SHELL_TOOL:
            block.exit_code = json_exit_code(text)  # {"output": …, "exit_code": N, "error": …}
        return [block]
    thinking = _text(row.get("reasoning_content")) or _text(row.get("reasoning"))
    try:
        tool_uses = _tool_uses(_text(row.get("tool_calls")))
    except ValueError as exc:  # the calls are lost, the reply is not
        warn(f"unreadable tool_calls ({exc})")
        tool_uses = []
    return [Block("thinking", thinking), Block("text", text), *tool_uses]


def _is_subagent(session_row: dict[str, Any], parent_end_reason: Any) -> bool:
    if not session_row.get("parent_session_id"):
        return False
    try:
        model_config = decode_json(_text(session_row.get("model_config")) or "{}")
    except ValueError:
        model_config = {}
    markers = model_config if isinstance(model_config, dict) else {}
    if "_delegate_from" in markers:
        return True
    if any(marker in markers for marker in _CONTINUATION_MARKERS):
        return False
    return parent_end_reason not in _CONTINUATION_END_REASONS


def parse(unit: SourceUnit) -> Session:
    db, session_id = unit.path, unit.session_id

    def load(conn: sqlite3.Connection) -> tuple[dict, Any, list[dict]]:
        found = _select(conn, "sessions", _SESSION_COLUMNS, "id = ?", (session_id,))
        session_row = found[0] if found else {}
        parent_end_reason = None
        if session_row.get("parent_session_id") and "end_reason" in session_row:
            parents = _select(conn, "sessions", ("end_reason",), "id = ?", (session_row["parent_session_id"],))
            parent_end_reason = parents[0]["end_reason"] if parents else None
        messages = _select(conn, "messages", _MESSAGE_COLUMNS, "session_id = ?", (session_id,))
        return session_row, parent_end_reason, messages

    session_row, parent_end_reason, messages = read_only(db, load)
    cwd = _text(session_row.get("cwd"))
    repo_root = _text(session_row.get("git_repo_root"))
    session = Session(
        harness=HARNESS,
        session_id=session_id,
        source_path=str(db),
        cwd=cwd,
        workdir=workdir_facet(cwd, "hermes"),
        repo=checkout_identity(repo_root)[0] if repo_root else None,
        branch=clean_branch(session_row.get("git_branch")),
        parent_session_id=opt_str(session_row.get("parent_session_id")),
        is_subagent=_is_subagent(session_row, parent_end_reason),
    )
    turns = TurnCollector(session)
    archive_aware = bool(messages) and ("compacted" in messages[0] or "active" in messages[0])
    earlier: set[tuple] = set()  # keys of archived rows, or of all rows when the schema cannot tell
    for row in messages:
        row_id = row.get("id") if type(row.get("id")) is int else 0

        def warn(message: str) -> None:
            session.warnings.append(ParseWarning(str(db), row_id, f"message {row_id}: {message}"))

        try:
            role = row.get("role")
            if role not in _ROLES or row.get("_compressed_summary") or row.get("display_kind") == "hidden":
                continue
            if role == "user" and _text(row.get("content")).startswith(_REVIEW_PROMPT):
                continue
            key = (role, row.get("content"), row.get("tool_call_id"), row.get("tool_calls"))
            if key in earlier:
                continue
            if not archive_aware or row.get("compacted") or row.get("active") == 0:
                earlier.add(key)
            blocks = _blocks(row, warn)
            turns.add(str(row["id"]), turns.last_uuid, role, normalize_ts(row.get("timestamp")), blocks)
        except SHAPE_ERRORS as exc:
            warn(f"unexpected message row ({type(exc).__name__}: {exc})")
    return finish_session(session)
