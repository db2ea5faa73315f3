"""Amp (ampcode.com) threads: one JSON document per thread.

Format facts: FORMAT.md.  Amp's CLI keeps threads on ampcode.com; what a
user can have on disk is the thread files early CLI builds wrote,
``$XDG_DATA_HOME/amp/threads/T-<uuid>.json`` (default ``~/.local/share/amp``), and
the documents ``amp threads export <id>`` prints, which have the same shape:
``{v, id, created (epoch ms), title?, env.initial.trees[{uri, repository}], messages}``.
Each file is rewritten whole as the thread grows.

One unit per ``T-*.json`` file (or any JSON file given by path); session id = the
file stem, which is the thread id for Amp's own files (save an export as
``amp threads export T-… > T-….json``).  turn_uuid =
``"{thread}:{messageId}"`` (Amp numbers the messages of a thread), else
``"{thread}:m{index}"``.  Times: a user message's ``meta.sentAt``, an assistant
message's ``usage.timestamp``, else the thread's ``created``.  cwd, repository and
branch come from the first tree of ``env.initial``.  Tool results are
``{type: tool_result, toolUseID, run: {status, result | error}}``; the legacy
``Bash {cmd, cwd}`` and the newer ``shell_command {command, workdir}`` both carry the
shell command, their results ``{output, exitCode}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from funes.agents.amp import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    clean_branch,
    compact_json,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    path_touches,
    paused_gc,
    repo_from_remote_url,
    tool_turn_role,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import text_part_block, tool_use_part_block
from funes.traces.jsonl import SHAPE_ERRORS, load_json_file, message_objects, shape_warning
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness
_PATH_KEYS = ("path", "file_path", "filePath")
# Tool name -> what its path arguments did (Amp's built-in tools, old and new names).
_FILE_TOOLS = {
    "Read": "read", "read_file": "read",
    "edit_file": "edit", "undo_edit": "edit", "format_file": "edit",
    "create_file": "write",
    "delete_file": "delete",
}
_SHELL_TOOLS = {"Bash": ("cmd", "command"), "shell_command": ("command", "cmd")}


def default_roots() -> list[Path]:
    return AGENT.roots()


def discover(root: Path) -> Iterator[SourceUnit]:
    """Each thread file: a ``T-*.json`` in a folder, or the file given."""
    base = root / "threads" if (root / "threads").is_dir() else root
    for path in walk_files(base, lambda name: name.startswith("T-") and name.endswith(".json")):
        unit = file_unit(HARNESS, path, path.name.removesuffix(".json"))
        if unit is not None:
            yield unit


def _tree(document: dict[str, Any]) -> dict[str, Any]:
    env = document.get("env")
    initial = env.get("initial") if isinstance(env, dict) else None
    trees = initial.get("trees") if isinstance(initial, dict) else None
    return trees[0] if isinstance(trees, list) and trees and isinstance(trees[0], dict) else {}


def _cwd(tree: dict[str, Any]) -> str:
    uri = as_str(tree.get("uri"))
    if uri.startswith("file://"):
        return unquote(urlparse(uri).path)
    return uri


def _provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if name in _FILE_TOOLS:
        return path_touches(arguments, _PATH_KEYS, _FILE_TOOLS[name]), None
    if name in _SHELL_TOOLS and isinstance(arguments, dict):
        for key in _SHELL_TOOLS[name]:
            if isinstance(arguments.get(key), str) and arguments[key].strip():
                return (), arguments[key].strip()
    return (), None


def _result(part: dict[str, Any]) -> tuple[str, int | None]:
    """A tool result's text and, for shell tools, its exit code."""
    run = part.get("run")
    if not isinstance(run, dict):  # the Anthropic shape some exports use
        content = part.get("content")
        return (content if isinstance(content, str) else joined_text(content)), None
    result, exit_code = run.get("result"), None
    if isinstance(result, dict):
        code = result.get("exitCode", result.get("exit_code"))
        exit_code = code if type(code) is int else None
        text = next((result[key] for key in ("output", "content", "text") if isinstance(result.get(key), str)),
                    None)
        text = compact_json(result) if text is None else text
    elif isinstance(result, list):
        text = joined_text(result) or compact_json(result)
    else:
        text = as_str(result)
    error = run.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    status = as_str(run.get("status"))
    if isinstance(error, str) and error:
        text = "\n".join(part for part in (text, error) if part)
    elif not text and status and status != "done":
        text = f"[{status}]"  # cancelled, rejected-by-user: what happened is the status
    return text, exit_code


def _blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block("text", content)]
    blocks: list[Block] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if (block := text_part_block(part)) is not None:
            blocks.append(block)
        elif kind == "tool_use":
            blocks.append(tool_use_part_block(part, _provenance))
        elif kind == "tool_result":
            text, exit_code = _result(part)
            tool_use_id = opt_str(part.get("toolUseID")) or opt_str(part.get("tool_use_id"))
            blocks.append(Block("tool_result", text, None, tool_use_id, exit_code=exit_code))
        # redacted_thinking, image: nothing to recall
    return blocks


def _timestamp(message: dict[str, Any]) -> str:
    meta, usage = message.get("meta"), message.get("usage")
    if isinstance(meta, dict) and meta.get("sentAt") is not None:
        return normalize_ts(meta["sentAt"])
    if isinstance(usage, dict) and usage.get("timestamp") is not None:
        return normalize_ts(usage["timestamp"])
    return ""


@paused_gc()
def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    document = load_json_file(path, session.warnings, items_key="messages")
    if document is not None and not isinstance(document, dict):
        session.warnings.append(ParseWarning(str(path), 0, f"not a thread object ({type(document).__name__})"))
        document = None
    document = document or {}
    tree = _tree(document)
    session.cwd = _cwd(tree)
    repository = tree.get("repository") if isinstance(tree.get("repository"), dict) else {}
    ref = as_str(repository.get("ref"))
    session.branch = clean_branch(ref.removeprefix("refs/heads/")) if ref.startswith("refs/heads/") else None
    created = normalize_ts(document.get("created"))
    messages = document.get("messages")
    if document and not isinstance(messages, list):
        session.warnings.append(ParseWarning(str(path), 0, "no messages array: not an Amp thread"))
        messages = None
    turns = TurnCollector(session)
    ts = created
    for index, where, message in message_objects(path, messages or [], session.warnings):
        try:
            number = message.get("messageId")
            preferred = f"{session.session_id}:{number}" if type(number) is int else None
            turn_uuid = turns.claim(preferred, f"{session.session_id}:m{index}")
            role = message.get("role")
            if role != "user" and role != "assistant":
                continue  # info messages: Amp's own notices
            ts = _timestamp(message) or ts
            blocks = _blocks(message.get("content"))
            turns.add(turn_uuid, turns.last_uuid, tool_turn_role(role, blocks), ts, blocks)
        except SHAPE_ERRORS as exc:
            session.warnings.append(shape_warning(path, where, exc))
    session.workdir = workdir_facet(session.cwd, "amp")
    recorded = repo_from_remote_url(as_str(repository.get("url"))) if repository.get("url") else None
    finish_session(session)
    session.repo = session.repo or recorded
    return session
