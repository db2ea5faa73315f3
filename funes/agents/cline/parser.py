"""Cline (cline/cline): the SDK's session files and the classic extension's task folders.

Format facts: FORMAT.md.  Two layouts, both indexed:

* **SDK sessions** (the CLI ``cline`` 3.x, and the VS Code and JetBrains extensions
  since they moved onto the SDK): ``<sessions>/<id>/<id>.messages.json``, one JSON
  envelope ``{version, updated_at, agent, sessionId, origin, messages, …}`` rewritten
  whole (``writeFileSync``, no rename) after every turn, beside the manifest
  ``<id>.json`` (cwd, workspace root).  Subagents and team tasks write
  ``<root id>/<agent id>[__<task id>].messages.json`` into their root's folder; their
  session ids are the SDK's own, ``<root>__<agent>`` and
  ``<root>__teamtask__<agent>__<task>``.  ``<id>.compaction.json`` (the compacted
  working context, a summary) is not read: the messages file keeps full history.  ``<sessions>`` is
  ``$CLINE_SESSION_DATA_DIR``, else ``$CLINE_DATA_DIR/sessions``, else
  ``$CLINE_DIR/data/sessions`` (default ``~/.cline/data/sessions``).
  turn_uuid = the message's ``id`` (the SDK assigns one to every message it
  persists and keeps it across rewrites), else ``"{session}:m{index}"``.
* **Classic task folders** (the extension before the SDK, and the CLI 1.x/2.x):
  ``<data>/tasks/<id>/`` and each editor's ``globalStorage/saoudrizwan.claude-dev/tasks/<id>/``;
  parsed by :mod:`funes.agents.cline.tasks`.  The working directory comes from the
  ``cwdOnTaskInitialization`` of the task's entry in ``<storage>/state/taskHistory.json``,
  else from the environment details of its first message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from funes.agents.cline import AGENT
from funes.agents.cline import tasks as cline_tasks
from funes.agents.cline.tasks import TaskContext
from funes.traces.common import (
    TurnCollector,
    as_str,
    file_touches,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    patch_touches,
    path_touches,
    paused_gc,
    tool_input_text,
    tool_turn_role,
    workdir_facet,
)
from funes.traces.content_parts import tool_use_part_block
from funes.traces.jsonl import SHAPE_ERRORS, load_json_file, message_objects, shape_warning
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness
MESSAGES_SUFFIX = ".messages.json"
_TEAM_MARKER = "__teamtask__"


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_messages_file(name: str) -> bool:
    return name.endswith(MESSAGES_SUFFIX)


def sdk_session_id(path: Path) -> str:
    """The SDK's id for a messages file: its folder's name for the root session's own
    file, else the sub-session id the SDK built the file name from."""
    stem, root = path.name[: -len(MESSAGES_SUFFIX)], path.parent.name
    if stem == root:
        return root
    if "__" in stem:  # <agent>__<team task>
        return f"{root}{_TEAM_MARKER}{stem}"
    return f"{root}__{stem}"


def _sdk_files(root: Path) -> Iterator[Path]:
    if root.is_file():
        if _is_messages_file(root.name):
            yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in cline_tasks.SKIPPED_DIRS)
        for name in sorted(files):
            if _is_messages_file(name):
                yield Path(folder, name)


def discover(root: Path) -> Iterator[SourceUnit]:
    """SDK sessions first, so a classic task the SDK migrated under the same id is
    read from its SDK file."""
    if root.is_file() and not _is_messages_file(root.name):
        yield from cline_tasks.discover_tasks(HARNESS, root)
        return
    for path in _sdk_files(root):
        unit = file_unit(HARNESS, path, sdk_session_id(path))
        if unit is not None:
            yield unit
    if root.is_dir():
        yield from cline_tasks.discover_tasks(HARNESS, root)


def parse(unit: SourceUnit) -> Session:
    if _is_messages_file(unit.path.name):
        return _parse_sdk(unit)
    return cline_tasks.parse_task(unit, _classic_context(unit.path.parent))


# --- Classic task folders --------------------------------------------------------------------

@lru_cache(maxsize=8)
def _task_history(path: Path, signature: tuple[int, int]) -> dict[str, dict[str, Any]]:
    """``state/taskHistory.json`` by task id (cached per file version: it lists every task)."""
    del signature  # the cache key: a rewritten file is read again
    try:
        entries = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(entries, list):
        return {}
    return {entry["id"]: entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str)}


def _classic_context(task_dir: Path) -> TaskContext:
    history = task_dir.parent.parent / "state" / "taskHistory.json"
    try:
        stat = history.stat()
    except OSError:
        return TaskContext()
    entry = _task_history(history, (stat.st_size, stat.st_mtime_ns)).get(task_dir.name, {})
    return TaskContext(cwd=as_str(entry.get("cwdOnTaskInitialization")))


# --- SDK sessions -----------------------------------------------------------------------------

def _commands(arguments: Any) -> list[str]:
    """The shell commands of a run_commands call, in any of the shapes the SDK accepts."""
    if isinstance(arguments, str):
        return [arguments]
    if isinstance(arguments, dict):
        for key in ("commands", "command", "cmd"):
            if key in arguments:
                return _commands(arguments[key])
        return []
    if isinstance(arguments, list):
        found = []
        for item in arguments:
            if isinstance(item, str):
                found.append(item)
            elif isinstance(item, dict) and isinstance(item.get("command"), str):
                args = item.get("args") if isinstance(item.get("args"), list) else []
                found.append(" ".join([item["command"], *(a for a in args if isinstance(a, str))]))
        return found
    return []


_READ_KEYS = ("files", "file_paths", "paths", "path", "file_path", "filePath")


def _sdk_provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if name == "read_files":
        if isinstance(arguments, str):
            return file_touches([arguments], "read"), None
        return path_touches(arguments, _READ_KEYS, "read"), None
    if name == "editor" and isinstance(arguments, dict):
        action = "edit" if arguments.get("old_text") or arguments.get("insert_line") is not None else "write"
        return path_touches(arguments, ("path",), action), None
    if name == "apply_patch":
        return patch_touches(arguments.get("input") if isinstance(arguments, dict) else arguments), None
    if name == "run_commands":
        commands = [command.strip() for command in _commands(arguments) if command.strip()]
        return (), "\n".join(commands) or None
    return cline_tasks.provenance(name, arguments, cline_tasks.TOOLS)


_EXIT = re.compile(r"Command exited with code (-?\d+)")


def _operation_text(item: dict[str, Any]) -> str:
    """One ToolOperationResult (``{query, result, error, success}``) as text."""
    result = item.get("result")
    text = result if isinstance(result, str) else "" if result is None else tool_input_text(result)
    error = as_str(item.get("error"))
    return "\n".join(part for part in (text, error) if part)


def _result_text(content: Any) -> tuple[str, list[dict[str, Any]]]:
    """A tool result's text and its operation records.  The SDK stores a string (often
    one JSON-encoded operation), or a list of text parts or operation records."""
    if isinstance(content, str):
        stripped = content.lstrip()
        if stripped.startswith("{") and '"query"' in stripped[:200]:
            try:
                decoded = json.loads(content)
            except (ValueError, RecursionError):
                return content, []
            if isinstance(decoded, dict) and "query" in decoded:
                return _operation_text(decoded), [decoded]
        return content, []
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return "", []
    operations = [item for item in content if isinstance(item, dict) and "query" in item and "type" not in item]
    texts = [_operation_text(item) if item in operations else joined_text(item) for item in content
             if isinstance(item, dict)]
    return "\n".join(text for text in texts if text), operations


def _exit_code(name: str | None, operations: list[dict[str, Any]]) -> int | None:
    """The exit status of a run_commands call that ran one command: 0 on success,
    the code its error names otherwise."""
    if name != "run_commands" or len(operations) != 1:
        return None
    operation = operations[0]
    if operation.get("success") is True:
        return 0
    match = _EXIT.search(as_str(operation.get("error")))
    return int(match.group(1)) if match else None


_USER_WRAPPERS = re.compile(r"</?user_(?:input|command)\b[^>]*>")
_MODE_NOTICE = re.compile(r"<mode_notice>.*?</mode_notice>", re.DOTALL)


def _user_text(text: str) -> str:
    """What the user typed, without the runtime's ``<user_input mode=…>`` wrapper and notices."""
    if "<" not in text:
        return text
    return _MODE_NOTICE.sub("", _USER_WRAPPERS.sub("", text)).strip()


def _sdk_blocks(role: str, content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block("text", _user_text(content) if role == "user" else content)]
    blocks: list[Block] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = as_str(part.get("text"))
            blocks.append(Block("text", _user_text(text) if role == "user" else text))
        elif kind == "thinking":
            blocks.append(Block("thinking", as_str(part.get("thinking"))))
        elif kind == "tool_use":
            blocks.append(tool_use_part_block(part, _sdk_provenance))
        elif kind == "tool_result":
            name = opt_str(part.get("name"))
            text, operations = _result_text(part.get("content"))
            blocks.append(Block("tool_result", text, name, opt_str(part.get("tool_use_id")),
                                exit_code=_exit_code(name, operations)))
        # file (an attached file's whole content), image, media, redacted_thinking: nothing to recall
    return blocks


def _manifest(path: Path) -> dict[str, Any]:
    """The root session's manifest ``<root>/<root>.json``."""
    return cline_tasks.read_json_object(path.parent / f"{path.parent.name}.json")


@paused_gc()
def _parse_sdk(unit: SourceUnit) -> Session:
    path, session_id = unit.path, unit.session_id
    manifest = _manifest(path)
    cwd = as_str(manifest.get("cwd")) or as_str(manifest.get("workspace_root"))
    session = Session(harness=HARNESS, session_id=session_id, source_path=str(path), cwd=cwd, workdir="")
    if session_id != path.parent.name:
        session.parent_session_id, session.is_subagent = path.parent.name, True
    else:
        metadata = manifest.get("metadata")
        fork = metadata.get("fork") if isinstance(metadata, dict) else None
        session.parent_session_id = opt_str(fork.get("forkedFromSessionId")) if isinstance(fork, dict) else None
    envelope = load_json_file(path, session.warnings, items_key="messages")
    messages = envelope.get("messages") if isinstance(envelope, dict) else None
    if envelope is not None and not isinstance(messages, list):
        session.warnings.append(ParseWarning(str(path), 0, "no messages array: not a Cline messages file"))
        messages = None
    if isinstance(envelope, dict) and isinstance(envelope.get("origin"), dict):
        if envelope["origin"].get("mode") in ("subagent", "team"):
            session.is_subagent = True
    turns = TurnCollector(session)
    for index, where, message in message_objects(path, messages or [], session.warnings):
        try:
            turn_uuid = turns.claim(message.get("id"), f"{session_id}:m{index}")
            role = message.get("role")
            if role != "user" and role != "assistant":
                continue
            blocks = _sdk_blocks(role, message.get("content"))
            turns.add(turn_uuid, turns.last_uuid, tool_turn_role(role, blocks), normalize_ts(message.get("ts")), blocks)
        except SHAPE_ERRORS as exc:
            session.warnings.append(shape_warning(path, where, exc))
    session.workdir = workdir_facet(session.cwd, path.parent.name)
    return finish_session(session)

