"""Gemini CLI (google-gemini/gemini-cli) chats: ``<gemini dir>/tmp/<project>/chats/``.

Format facts: FORMAT.md.  ``<gemini dir>`` is ``~/.gemini``, or
``$GEMINI_CLI_HOME/.gemini``.  ``<project>`` is a short slug (older builds: the
SHA-256 of the project root); the project folder's ``.project_root`` names the cwd.

A session file is replayable JSON Lines (since 0.37): a metadata line
(``sessionId``, ``projectHash``, ``startTime``, ``kind``), then message records
appended whole, each time they change (same ``id``), ``{"$set": {...}}`` metadata
updates, where ``$set.messages`` is a checkpoint holding the whole history again, and
``{"$rewindTo": id}`` rewinds.  Older builds wrote one whole-file JSON
(``session-*.json``), rewritten every turn; resuming one migrates it to a ``.jsonl``
beside it with the same message ids.  Subagents: ``chats/<parent id>/<id>.jsonl``.

Replay keeps every message ever written, first position, last version: rewound and
checkpointed-away messages stay (they were said), and a message rewritten in place
keeps its turn id.  Tool results are taken from the ``toolCalls[].result`` of the
model message that made the call; the copies Gemini also writes as user messages of
``functionResponse`` parts (and as ``<id>_response`` messages in a checkpoint) are
skipped by call id, and a result later masked (``<tool_output_masked>``) keeps its
first full text.  Skipped: ``info``/``error``/``warning`` messages and injected user
context (``<session_context>``, ``<hook_context>``), and slash commands.

turn_uuid = the message ``id``; a tool result's turn is ``"{message id}:{call id}"``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.gemini import AGENT
from funes.errors import TraceReadError
from funes.traces.common import (
    TurnCollector,
    as_str,
    file_signature,
    finish_session,
    normalize_ts,
    opt_str,
    path_touches,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import call_block, part_list, part_text, response_text, shell_exit_code
from funes.traces.jsonl import SHAPE_ERRORS, decode_json, each_record, first_record
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness

PROJECT_ROOT_FILE = ".project_root"
_MASKED = "<tool_output_masked"
_INJECTED_PREFIXES = ("<session_context>", "<hook_context>")
_SLASH_COMMAND = re.compile(r"/[A-Za-z][\w:-]*(?:\s[^\n]*)?")
SHELL_TOOLS = frozenset({"run_shell_command"})
# Built-in tools that name files, with the argument keys and what they do to them.
FILE_TOOLS: dict[str, tuple[tuple[str, ...], str]] = {
    "read_file": (("file_path", "absolute_path", "path"), "read"),
    "read_many_files": (("include", "paths"), "read"),
    "write_file": (("file_path", "absolute_path"), "write"),
    "replace": (("file_path", "absolute_path"), "edit"),
}


def default_roots() -> list[Path]:
    return AGENT.roots()


# ---------------------------------------------------------------- discovery

def _chat_dirs(root: Path) -> list[Path]:
    if (root / "tmp").is_dir():
        root = root / "tmp"
    if (root / "chats").is_dir():
        return [root / "chats"]
    if root.name == "tmp" or any((child / "chats").is_dir() for child in _subdirs(root)):
        return [child / "chats" for child in _subdirs(root) if (child / "chats").is_dir()]
    return [root]


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(child for child in folder.iterdir() if child.is_dir())
    except OSError:
        return []


def _is_chat_file(name: str) -> bool:
    return name.endswith((".jsonl", ".json"))


def _legacy_record(path: Path) -> dict[str, Any] | None:
    try:
        record = decode_json(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _file_session_id(path: Path) -> str:
    record = first_record(path) if path.suffix == ".jsonl" else _legacy_record(path)
    session_id = opt_str(record.get("sessionId")) if record else None
    return session_id or path.stem


def discover(root: Path) -> Iterator[SourceUnit]:
    """One unit per session.  Files sharing a session id in one folder (a legacy
    ``.json`` and the ``.jsonl`` it migrated to; the near-empty file Gemini starts
    before it resumes a session) are one session: the biggest ``.jsonl`` holds it."""
    files = [root] if root.is_file() else [
        path for folder in _chat_dirs(root) for path in walk_files(folder, _is_chat_file)]
    chosen: dict[tuple[Path, str], Path] = {}
    for path in files:
        key = (path.parent, _file_session_id(path))
        best = chosen.get(key)
        if best is None or _rank(path) > _rank(best):
            chosen[key] = path
    for (_, session_id), path in chosen.items():
        signature = file_signature(path)
        if signature is not None:
            yield SourceUnit(HARNESS, path, session_id, signature)


def _rank(path: Path) -> tuple[bool, int, str]:
    try:
        size = path.stat().st_size
    except OSError:
        size = -1
    return path.suffix == ".jsonl", size, path.name


# ---------------------------------------------------------------- replay

class Replay:
    """A session file's state: metadata and every message ever written, in the
    order first written, each as last written."""

    def __init__(self) -> None:
        self.metadata: dict[str, Any] = {}
        self.messages: dict[str, dict[str, Any]] = {}
        self.results: dict[str, Any] = {}  # call id -> first unmasked result

    def message(self, record: dict[str, Any]) -> None:
        message_id = record["id"]
        earlier = self.messages.get(message_id)
        if earlier is not None:
            record = dict(record)
            if not record.get("thoughts") and earlier.get("thoughts"):
                record["thoughts"] = earlier["thoughts"]
            record["toolCalls"] = _merge_calls(earlier.get("toolCalls"), record.get("toolCalls"))
        for call in record.get("toolCalls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str) and call.get("result"):
                known = self.results.get(call["id"])
                if known is None or (_MASKED in _result_text(known) and _MASKED not in _result_text(call["result"])):
                    self.results[call["id"]] = call["result"]
        self.messages[message_id] = record

    def record(self, record: dict[str, Any]) -> None:
        if isinstance(record.get("$rewindTo"), str):
            return  # rewound messages stay: they were said
        update = record.get("$set")
        if isinstance(update, dict):
            self.metadata.update({k: v for k, v in update.items() if k != "messages"})
            for message in update.get("messages") or [] if isinstance(update.get("messages"), list) else []:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.message(message)
            return
        if isinstance(record.get("id"), str):
            self.message(record)
            return
        if isinstance(record.get("sessionId"), str):  # the metadata line (or a whole legacy record)
            self.metadata.update({k: v for k, v in record.items() if k != "messages"})
            for message in record.get("messages") if isinstance(record.get("messages"), list) else []:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.message(message)


def _merge_calls(earlier: Any, later: Any) -> list[Any]:
    merged: dict[str, Any] = {}
    for calls in (earlier, later):
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                merged[call["id"]] = {**merged.get(call["id"], {}), **call}
    return list(merged.values())


# ---------------------------------------------------------------- parts → blocks

def _result_text(result: Any) -> str:
    texts = []
    for part in part_list(result):
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            texts.append(response_text(part["functionResponse"].get("response")))
        else:
            texts.append(part_text(part))
    return "\n".join(text for text in texts if text)


def tool_provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if name in FILE_TOOLS:
        keys, action = FILE_TOOLS[name]
        return path_touches(arguments, keys, action), None
    if name in SHELL_TOOLS and isinstance(arguments, dict):
        return (), opt_str(arguments.get("command"))
    return (), None


def tool_use(name: str | None, call_id: str | None, arguments: Any) -> Block:
    block = call_block(name, call_id, arguments)
    block.files, block.command = tool_provenance(name, arguments)
    return block


def _thinking(message: dict[str, Any]) -> list[Block]:
    thoughts = message.get("thoughts")
    if isinstance(thoughts, list) and thoughts:
        texts = []
        for thought in thoughts:
            if isinstance(thought, dict):
                subject, description = as_str(thought.get("subject")), as_str(thought.get("description"))
                texts.append(f"**{subject}** {description}".strip() if subject else description)
        return [Block("thinking", text) for text in texts]
    return [Block("thinking", part_text(part, thought=True)) for part in part_list(message.get("content"))]


def _is_noise(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith(_INJECTED_PREFIXES) or stripped == "?" or bool(_SLASH_COMMAND.fullmatch(stripped))


# ---------------------------------------------------------------- parse

def _cwd(path: Path, metadata: dict[str, Any], *, subagent: bool) -> str:
    project_dir = path.parent.parent.parent if subagent else path.parent.parent
    try:
        text = (project_dir / PROJECT_ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    if text:
        return text
    registry = _registry(project_dir.parent.parent / "projects.json")
    for root, slug in registry.items():
        if slug == project_dir.name:
            return root
    project_hash = metadata.get("projectHash")
    if isinstance(project_hash, str):
        for root in registry:
            if hashlib.sha256(root.encode("utf-8")).hexdigest() == project_hash:
                return root
    directories = metadata.get("directories")
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        return directories[0]
    return ""


def _registry(path: Path) -> dict[str, str]:
    """``projects.json``: project root → its folder under ``tmp/``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(projects, dict) else {}


def _read(path: Path, warnings: list[ParseWarning]) -> Replay:
    replay = Replay()
    if path.suffix == ".json":
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise TraceReadError(f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            record = decode_json(text)
        except ValueError:
            warnings.append(ParseWarning(str(path), 0, "not JSON (a session file being rewritten?)"))
            return replay
        if not isinstance(record, dict):
            warnings.append(ParseWarning(str(path), 0, f"not a JSON object ({type(record).__name__})"))
            return replay
        try:
            replay.record(record)
        except SHAPE_ERRORS as exc:
            warnings.append(ParseWarning(str(path), 0, f"unexpected record shape ({type(exc).__name__}: {exc})"))
        return replay
    each_record(path, warnings, lambda _index, record: replay.record(record))
    return replay


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    replay = _read(path, session.warnings)
    metadata = replay.metadata
    nested = path.parent.parent.name == "chats"  # chats/<parent id>/<id>.jsonl
    session.is_subagent = metadata.get("kind") == "subagent" or nested
    if nested:
        session.parent_session_id = path.parent.name
    session.cwd = _cwd(path, metadata, subagent=nested)
    project_dir = path.parent.parent.parent if session.parent_session_id else path.parent.parent
    session.workdir = workdir_facet(session.cwd, project_dir.name)

    answered = set(replay.results)  # call ids whose result the model message carries
    emitted: set[str] = set()
    turns = TurnCollector(session)
    for message_id, message in replay.messages.items():
        try:
            _add_message(turns, message_id, message, replay, answered, emitted)
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(path), 0, f"message {message_id}: unexpected shape "
                                                 f"({type(exc).__name__}: {exc})"))
    return finish_session(session)


def _add_message(turns: TurnCollector, message_id: str, message: dict[str, Any], replay: Replay,
                 answered: set[str], emitted: set[str]) -> None:
    kind = message.get("type")
    ts = normalize_ts(message.get("timestamp"))
    turn_uuid = turns.claim(message_id, message_id)
    if kind == "user":
        _add_user(turns, turn_uuid, message, ts, answered, emitted)
    elif kind == "gemini":
        _add_model(turns, turn_uuid, message, ts, replay, emitted)
    # info, error, warning: the CLI's own notices


def _add_user(turns: TurnCollector, turn_uuid: str, message: dict[str, Any], ts: str,
              answered: set[str], emitted: set[str]) -> None:
    shown = message.get("displayContent")
    parts = part_list(shown if shown else message.get("content"))
    text = "".join(part_text(part) for part in parts)
    results = []
    for part in part_list(message.get("content")):
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(response, dict):
            continue
        call_id = opt_str(response.get("id"))
        if call_id in answered or call_id in emitted:
            continue  # a copy of a result the model message carries
        if call_id:
            emitted.add(call_id)
        name = opt_str(response.get("name"))
        result = response_text(response.get("response"))
        results.append(Block("tool_result", result, name, call_id,
                             exit_code=shell_exit_code(result) if name in SHELL_TOOLS else None))
    if results:
        turns.add(turn_uuid, turns.last_uuid, "tool", ts, results)
    elif not _is_noise(text):
        turns.add(turn_uuid, turns.last_uuid, "user", ts, [Block("text", text)])


def _add_model(turns: TurnCollector, turn_uuid: str, message: dict[str, Any], ts: str, replay: Replay,
               emitted: set[str]) -> None:
    content = part_list(message.get("content"))
    blocks = [*_thinking(message), Block("text", "".join(part_text(part) for part in content))]
    calls = [call for call in message.get("toolCalls") or [] if isinstance(call, dict)]
    called = {call.get("id") for call in calls}
    for call in calls:
        blocks.append(tool_use(opt_str(call.get("name")), opt_str(call.get("id")), call.get("args")))
    for part in content:  # calls a checkpoint rebuilt from history that no toolCalls record names
        function_call = part.get("functionCall") if isinstance(part, dict) else None
        if isinstance(function_call, dict) and function_call.get("id") not in called:
            blocks.append(tool_use(opt_str(function_call.get("name")), opt_str(function_call.get("id")),
                                   function_call.get("args")))
    turns.add(turn_uuid, turns.last_uuid, "assistant", ts, blocks)
    for call in calls:
        call_id = opt_str(call.get("id"))
        if not call_id or call_id in emitted or call_id not in replay.results:
            continue
        emitted.add(call_id)
        name = opt_str(call.get("name"))
        text = _result_text(replay.results[call_id])
        block = Block("tool_result", text, name, call_id,
                      exit_code=shell_exit_code(text) if name in SHELL_TOOLS else None)
        result_uuid = turns.claim(f"{turn_uuid}:{call_id}", f"{turn_uuid}:{call_id}")
        turns.add(result_uuid, turns.last_uuid, "tool", normalize_ts(call.get("timestamp")) or ts, [block])
