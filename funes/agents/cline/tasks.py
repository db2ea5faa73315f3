"""Task folders of Cline's classic extension and of its forks (Roo Code).

Format facts: FORMAT.md ("Classic task folders").
A task is a folder ``<storage>/tasks/<task id>/`` holding
``api_conversation_history.json`` (the conversation as sent to the model: one JSON
array of Anthropic-style ``{role, content, ts?, …}`` messages, rewritten whole after
every message), ``ui_messages.json`` (what the panel showed, each with an epoch-ms
``ts``) and, by agent, ``task_metadata.json`` or ``history_item.json``.

One unit per task folder; its path is the ``api_conversation_history.json`` and its
signature that file's size and mtime (it is rewritten on every message).

turn_uuid = ``"{task id}:{digest}"``, the digest being the first 12 hex of SHA-1 over
the message's role and content, with ``#n`` appended for the n-th repeat of the same
message.  Agents rewrite the array in place: Roo tags old messages on condensing and
inserts truncation markers, any rewind drops a tail.  Ids that follow content rather
than position keep every unchanged message's id through all of these.

Both agents let the model call tools two ways, and a history can hold both: native
``tool_use``/``tool_result`` parts, or (older builds) XML in the assistant's text,
``<read_file><path>src/a.ts</path></read_file>``, answered by a user text that starts
``[read_file for 'src/a.ts'] Result:``.  XML calls become ``tool_use`` blocks with
ids ``"{turn_uuid}:x{n}"``, and the next matching result gets the same id.  The
``<thinking>`` the classic prompts asked for becomes a thinking block, and the
``<environment_details>`` appended to every user message (open tabs, time, file
lists) is dropped after its working directory is noted.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funes.traces.common import (
    TurnCollector,
    as_str,
    compact_json,
    file_unit,
    finish_session,
    joined_text,
    normalize_ts,
    opt_str,
    patch_touches,
    path_touches,
    paused_gc,
    tagged_spans,
    tool_input_text,
    tool_turn_role,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, load_json_file, message_objects, shape_warning
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

API_HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
# Folders of an extension's storage that never hold tasks (checkpoints are whole git repositories).
SKIPPED_DIRS = frozenset({"checkpoints", "cache", "puppeteer", "settings", "state", "workspaces", "logs",
                          "node_modules", ".git"})

# VS Code and its forks, by the folder name of their user data.
_EDITORS = ("Code", "Code - Insiders", "Code - OSS", "VSCodium", "Cursor", "Windsurf")
_REMOTE_SERVERS = (".vscode-server", ".vscode-server-insiders", ".cursor-server", ".windsurf-server")


def editor_user_dirs() -> list[Path]:
    """The ``User`` folders of the VS Code family on this OS, remote servers included."""
    home = Path.home()
    if sys.platform == "darwin":
        bases = [home / "Library" / "Application Support"]
    elif sys.platform == "win32":
        bases = [Path(os.environ["APPDATA"])] if os.environ.get("APPDATA") else []
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME")
        bases = [Path(xdg).expanduser() if xdg else home / ".config"]
    users = [base / editor / "User" for base in bases for editor in _EDITORS]
    return users + [home / server / "data" / "User" for server in _REMOTE_SERVERS]


def global_storage_dirs(extension_id: str) -> list[Path]:
    """Where each editor keeps an extension's global storage."""
    return [user / "globalStorage" / extension_id for user in editor_user_dirs()]


def task_files(root: Path) -> Iterator[Path]:
    """Every task's ``api_conversation_history.json`` under ``root`` (an extension's
    storage, its ``tasks`` folder, one task folder, or a file inside one)."""
    if root.is_file():
        path = root if root.name == API_HISTORY else root.parent / API_HISTORY
        if path.is_file():
            yield path
        return
    if (root / API_HISTORY).is_file():
        yield root / API_HISTORY
        return
    base = root / "tasks" if (root / "tasks").is_dir() else root
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        if API_HISTORY in files:
            dirs[:] = []  # a task folder holds no tasks
            yield Path(folder, API_HISTORY)


def discover_tasks(harness: str, root: Path) -> Iterator[SourceUnit]:
    for path in task_files(root):
        unit = file_unit(harness, path, path.parent.name)
        if unit is not None:
            yield unit


# --- Text the agents wrap around what people said -----------------------------------------

_ENV_OPEN, _ENV_CLOSE = "<environment_details>", "</environment_details>"
_ENV_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \(([^)\n]+)\) Files")
_WRAPPERS = ("task", "user_message")
_THINKING_OPEN, _THINKING_CLOSE = "<thinking>", "</thinking>"
_RESULT_PREFIX = re.compile(r"\[([A-Za-z_][A-Za-z0-9_]*)(?: for '(?:[^\n]*?)')?[^\]\n]*\] Result:")
_EXIT_CODE = re.compile(r"\bExit code: (-?\d+)")


def environment_cwd(text: str) -> str:
    """The working directory an ``<environment_details>`` block names ("" when none)."""
    match = _ENV_CWD.search(text)
    if not match or match.group(1).startswith("Primary:"):
        return ""
    return match.group(1).strip()


def strip_environment(text: str) -> str:
    """``text`` without its ``<environment_details>`` blocks (an unclosed one runs to the end)."""
    start = text.find(_ENV_OPEN)
    while start != -1:
        end = text.find(_ENV_CLOSE, start)
        text = text[:start] + ("" if end == -1 else text[end + len(_ENV_CLOSE):])
        start = text.find(_ENV_OPEN, start)
    return text.strip()


def _unwrap(text: str) -> str:
    for tag in _WRAPPERS:
        if text.startswith(f"<{tag}>") and text.endswith(f"</{tag}>"):
            return text[len(tag) + 2: -(len(tag) + 3)].strip()
    return text


# --- Tools: names, arguments, provenance ------------------------------------------------------

@dataclass(frozen=True)
class ToolSpec:
    """What a tool's arguments say it did: files under ``keys`` with ``action``, and
    the shell command under ``command_keys``."""

    keys: tuple[str, ...] = ()
    action: str = "read"
    command_keys: tuple[str, ...] = ()
    patch_keys: tuple[str, ...] = ()


_PATH = ("path", "file_path", "filePath")
# Classic Cline and Roo Code tool names (XML and native calls use the same ones).
TOOLS: dict[str, ToolSpec] = {
    "read_file": ToolSpec(_PATH),
    "write_to_file": ToolSpec(_PATH, "write"),
    "replace_in_file": ToolSpec(_PATH, "edit"),
    "apply_diff": ToolSpec(_PATH, "edit"),
    "insert_content": ToolSpec(_PATH, "edit"),
    "search_and_replace": ToolSpec(_PATH, "edit"),
    "search_replace": ToolSpec(_PATH, "edit"),
    "edit": ToolSpec(_PATH, "edit"),
    "edit_file": ToolSpec(_PATH, "edit"),
    "apply_patch": ToolSpec(patch_keys=("patch", "input")),
    "execute_command": ToolSpec(command_keys=("command",)),
}
# Tags that open an XML tool call in assistant text (those above and the rest of both agents' tools).
XML_TOOLS = frozenset(TOOLS) | {
    "search_files", "list_files", "list_code_definition_names", "browser_action", "use_mcp_tool",
    "access_mcp_resource", "ask_followup_question", "attempt_completion", "plan_mode_respond",
    "act_mode_respond", "new_task", "switch_mode", "fetch_instructions", "codebase_search", "update_todo_list",
    "load_mcp_documentation", "web_fetch", "condense", "summarize_task", "report_bug", "new_rule",
    "run_slash_command", "generate_image", "read_command_output", "skill",
}
_XML_CALL = re.compile(r"<(" + "|".join(sorted(XML_TOOLS, key=len, reverse=True)) + r")>(.*?)</\1>", re.DOTALL)
_XML_PARAM = re.compile(r"<([a-z_]+)>\n?(.*?)\n?</\1>", re.DOTALL)


def provenance(name: str | None, arguments: Any, tools: dict[str, ToolSpec]) -> tuple[tuple[FileTouch, ...], str | None]:
    """The files a call touched and the command it ran, from its arguments."""
    spec = tools.get(name or "")
    if spec is None or not isinstance(arguments, (dict, list, str)):
        return (), None
    files: tuple[FileTouch, ...] = ()
    if spec.keys:
        files = path_touches(arguments, spec.keys, spec.action)
    if spec.patch_keys:
        body = arguments if isinstance(arguments, str) else next(
            (arguments[key] for key in spec.patch_keys if isinstance(arguments, dict) and key in arguments), None)
        files = files + patch_touches(body)
    command = None
    if spec.command_keys and isinstance(arguments, dict):
        command = next((arguments[key].strip() for key in spec.command_keys
                        if isinstance(arguments.get(key), str) and arguments[key].strip()), None)
    return files, command


def _xml_arguments(body: str) -> dict[str, str]:
    """A call's parameters (first level); a nested one (Roo's ``<args><file>…``) keeps its XML."""
    return {m.group(1): m.group(2) for m in _XML_PARAM.finditer(body)}


# --- One task --------------------------------------------------------------------------------

@dataclass
class TaskContext:
    """What the agent module knows about a task before its messages are read."""

    cwd: str = ""
    parent_session_id: str | None = None
    is_subagent: bool = False
    tools: dict[str, ToolSpec] = field(default_factory=lambda: TOOLS)


def message_digest(role: Any, content: Any, kind: Any = None) -> str:
    """A message's content hash: what its turn id is built from.  The decoded value is
    serialized with marshal format 0 (by value, keys in file order, which the agents
    keep when they rewrite; unchanged since Python 3.0), three times faster than a JSON
    encode of the same value."""
    return hashlib.sha1(marshal.dumps((role, kind, content), 0)).hexdigest()[:12]


def _ui_times(path: Path) -> dict[int, tuple[int, int]]:
    """Earliest and latest panel timestamp per ``conversationHistoryIndex`` (the
    index of the last history message when the panel message was added)."""
    warnings: list[ParseWarning] = []
    try:
        messages = load_json_file(path, warnings)
    except Exception:  # noqa: BLE001 - timestamps are a nicety; their absence costs nothing else
        return {}
    times: dict[int, tuple[int, int]] = {}
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        index, ts = message.get("conversationHistoryIndex"), message.get("ts")
        if type(index) is int and type(ts) is int:
            low, high = times.get(index, (ts, ts))
            times[index] = (min(low, ts), max(high, ts))
    return times


class _Converter:
    """Turns one task's messages into blocks, pairing XML calls with their results."""

    def __init__(self, context: TaskContext) -> None:
        self.context = context
        self.pending: list[tuple[str, str]] = []  # (tool name, id) of XML calls awaiting a result
        self.cwd_seen = ""

    def tool_use(self, name: str | None, arguments: Any, text: str, tool_use_id: str | None) -> Block:
        files, command = provenance(name, arguments, self.context.tools)
        return Block("tool_use", text, name, tool_use_id, files=files, command=command)

    def tool_result(self, text: str, name: str | None, tool_use_id: str | None) -> Block:
        exit_code = None
        if name == "execute_command" or (name is None and text.startswith("Command executed")):
            match = _EXIT_CODE.search(text[:2000])
            exit_code = int(match.group(1)) if match else None
        return Block("tool_result", text, name, tool_use_id, exit_code=exit_code)

    def assistant_text(self, text: str, turn_uuid: str) -> list[Block]:
        if "</" not in text:  # no XML call, no <thinking>: the regexes would find nothing
            return [Block("text", text.strip())]
        blocks: list[Block] = []
        at = 0
        for match in _XML_CALL.finditer(text):
            blocks.extend(self._prose(text[at:match.start()]))
            name, body = match.group(1), match.group(2)
            call_id = f"{turn_uuid}:x{len(self.pending)}"
            self.pending.append((name, call_id))
            arguments = _xml_arguments(body)
            blocks.append(self.tool_use(name, arguments, compact_json(arguments), call_id))
            at = match.end()
        blocks.extend(self._prose(text[at:]))
        return blocks

    def _prose(self, text: str) -> list[Block]:
        if "<thinking>" not in text:
            return [Block("text", text.strip())]
        spans = tagged_spans(text, _THINKING_OPEN, _THINKING_CLOSE)
        blocks = [Block("thinking", text[start + len(_THINKING_OPEN):end - len(_THINKING_CLOSE)].strip())
                  for start, end in spans]
        outside = "".join(text[a:b] for a, b in zip([0] + [end for _, end in spans], [start for start, _ in spans]
                                                     + [len(text)]))
        return blocks + [Block("text", outside.strip())]

    def user_text(self, text: str) -> list[Block]:
        if not self.cwd_seen and _ENV_OPEN in text:
            self.cwd_seen = environment_cwd(text)
        text = _unwrap(strip_environment(text))
        match = _RESULT_PREFIX.match(text)
        if match is None:
            return [Block("text", text)]
        name = match.group(1)  # a result, answering the oldest open XML call of that tool if there is one
        index = next((i for i, (pending, _) in enumerate(self.pending) if pending == name), None)
        call_id = self.pending.pop(index)[1] if index is not None else None
        return [self.tool_result(text, name, call_id)]

    def parts(self, role: str, content: Any, turn_uuid: str) -> list[Block]:
        if isinstance(content, str):
            return self.assistant_text(content, turn_uuid) if role == "assistant" else self.user_text(content)
        blocks: list[Block] = []
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                text = as_str(part.get("text"))
                if role == "assistant":
                    blocks.extend(self.assistant_text(text, turn_uuid))
                elif blocks and blocks[-1].block_type == "tool_result" and _RESULT_PREFIX.fullmatch(blocks[-1].text):
                    blocks[-1].text += "\n" + strip_environment(text)  # older builds: header and output apart
                else:
                    blocks.extend(self.user_text(text))
            elif kind == "thinking":
                blocks.append(Block("thinking", as_str(part.get("thinking"))))
            elif kind == "reasoning":  # Roo Code: provider reasoning kept beside the reply
                blocks.append(Block("thinking", as_str(part.get("text")) or joined_text(part.get("summary"),
                                                                                      ("summary_text", "text"))))
            elif kind == "tool_use":
                name, arguments = opt_str(part.get("name")), part.get("input")
                blocks.append(self.tool_use(name, arguments, tool_input_text(arguments), opt_str(part.get("id"))))
            elif kind == "tool_result":
                result = part.get("content")
                text = result if isinstance(result, str) else joined_text(result)
                blocks.append(self.tool_result(strip_environment(text), opt_str(part.get("name")),
                                               opt_str(part.get("tool_use_id"))))
            # image, document, redacted_thinking, thoughtSignature: nothing to recall
        return blocks


@paused_gc()
def parse_task(unit: SourceUnit, context: TaskContext) -> Session:
    """The Session of the task whose ``api_conversation_history.json`` is ``unit.path``."""
    path, task_id = unit.path, unit.session_id
    session = Session(harness=unit.harness, session_id=task_id, source_path=str(path), cwd=context.cwd,
                      workdir="", parent_session_id=context.parent_session_id,
                      is_subagent=context.is_subagent)
    messages = load_json_file(path, session.warnings)
    if messages is not None and not isinstance(messages, list):
        session.warnings.append(ParseWarning(str(path), 0, f"not a message array ({type(messages).__name__})"))
        messages = None
    turns = TurnCollector(session)
    converter = _Converter(context)
    seen: dict[str, int] = {}
    ui_times: dict[int, tuple[int, int]] | None = None
    last_ts = normalize_ts(int(task_id)) if task_id.isdigit() and len(task_id) == 13 else ""  # Cline: Date.now()

    def timestamp(index: int, role: str, message: dict[str, Any]) -> str:
        nonlocal ui_times
        if message.get("ts") is not None:
            return normalize_ts(message["ts"])
        if ui_times is None:
            ui_times = _ui_times(path.with_name(UI_MESSAGES))
        if role == "user" and index in ui_times:
            return normalize_ts(ui_times[index][0])
        if role == "assistant" and index - 1 in ui_times:
            return normalize_ts(ui_times[index - 1][1])
        return ""

    for index, where, message in message_objects(path, messages or [], session.warnings):
        try:
            role, kind = message.get("role"), message.get("type")
            if kind == "reasoning" and role is None:
                role = "assistant"
            digest = message_digest(role, message.get("content"), kind)
            seen[digest] = seen.get(digest, 0) + 1
            repeat = seen[digest]
            turn_uuid = turns.claim(f"{task_id}:{digest}" + (f"#{repeat}" if repeat > 1 else ""), f"{task_id}:m{index}")
            if role not in ("user", "assistant") or message.get("isSummary") or message.get("isTruncationMarker"):
                continue  # condense summaries and truncation markers are the agent's, not the conversation
            ts = timestamp(index, role, message) or last_ts
            last_ts = ts
            if kind == "reasoning":
                blocks = converter.parts(role, [{**message, "type": "reasoning"}], turn_uuid)
            else:
                blocks = converter.parts(role, message.get("content"), turn_uuid)
            if role == "assistant" and isinstance(message.get("reasoning_content"), str):
                blocks.insert(0, Block("thinking", message["reasoning_content"]))
            turns.add(turn_uuid, turns.last_uuid, tool_turn_role(role, blocks), ts, blocks)
        except SHAPE_ERRORS as exc:
            session.warnings.append(shape_warning(path, where, exc))
    if not session.cwd:
        session.cwd = converter.cwd_seen
    session.workdir = workdir_facet(session.cwd, unit.harness)
    return finish_session(session)


def read_json_object(path: Path) -> dict[str, Any]:
    """A small side file's JSON object, or {} when it is missing or unreadable (the
    conversation does not depend on it)."""
    try:
        value = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}

