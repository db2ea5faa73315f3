"""OpenHands CLI conversations: ``~/.openhands/conversations/<id>/events/*.json``,
one openhands-sdk event per file (``event-<index>-<event id>.json``, the index
zero-padded so names sort in order).  Format facts: FORMAT.md.

A unit is one conversation folder; its signature is the ``events`` folder's
(a new event file changes the folder's mtime).  Kept: ``MessageEvent`` (user and
agent text, reasoning → thinking), ``ActionEvent`` (thought → thinking, the tool
call → tool_use), ``ObservationEvent`` (→ tool_result, a command's exit code from
``observation.exit_code`` or ``observation.metadata.exit_code``).  An unreadable
event file costs that event (one warning), never the conversation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.openhands import AGENT
from funes.traces.common import (
    TurnCollector,
    compact_json,
    file_signature,
    finish_session,
    normalize_ts,
    opt_str,
    workdir_facet,
)
from funes.traces.jsonl import decode_json
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness
EVENTS = "events"
_FILE_ACTIONS = {"view": "read", "create": "write", "str_replace": "edit", "insert": "edit", "undo_edit": "edit"}


def default_roots() -> list[Path]:
    return AGENT.roots()


def _unit(folder: Path) -> SourceUnit | None:
    signature = file_signature(folder / EVENTS)
    return None if signature is None else SourceUnit(HARNESS, folder / EVENTS, folder.name, signature)


def discover(root: Path) -> Iterator[SourceUnit]:
    if (root / EVENTS).is_dir():
        folders = [root]
    elif root.name == EVENTS and root.is_dir():
        folders = [root.parent]
    else:
        try:
            folders = sorted(child for child in root.iterdir() if (child / EVENTS).is_dir())
        except OSError:
            return
    for folder in folders:
        unit = _unit(folder)
        if unit is not None:
            yield unit


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(part["text"] for part in parts
                     if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))


def _thinking(record: dict[str, Any]) -> str:
    texts = [record.get("reasoning_content")]
    for block in record.get("thinking_blocks") or ():
        if isinstance(block, dict):
            texts.append(block.get("thinking"))
    return "\n".join(text for text in texts if isinstance(text, str) and text)


def _tool_use(event: dict[str, Any]) -> Block:
    action = event.get("action") if isinstance(event.get("action"), dict) else {}
    name = opt_str(event.get("tool_name")) or opt_str(action.get("kind"))
    arguments = {key: value for key, value in action.items() if key != "kind"}
    command = opt_str(action.get("command"))
    files: tuple[FileTouch, ...] = ()
    if isinstance(action.get("path"), str):
        kind = "edit" if command is None else _FILE_ACTIONS.get(command, "edit")
        files = (FileTouch(action["path"], kind),)
        command = None
    return Block("tool_use", compact_json(arguments), name, opt_str(event.get("tool_call_id")),
                 files=files, command=command)


def _exit_code(observation: dict[str, Any]) -> int | None:
    for value in (observation.get("exit_code"), (observation.get("metadata") or {}).get("exit_code")):
        if isinstance(value, int) and not isinstance(value, bool) and value != -1:
            return value
    return None


def _tool_result(event: dict[str, Any]) -> Block:
    observation = event.get("observation") if isinstance(event.get("observation"), dict) else {}
    text = _texts(observation.get("content")) or opt_str(observation.get("output")) or ""
    return Block("tool_result", text, opt_str(event.get("tool_name")), opt_str(event.get("tool_call_id")),
                 exit_code=_exit_code(observation))


def _blocks(event: dict[str, Any]) -> tuple[str, list[Block]] | None:
    kind = event.get("kind")
    if kind == "MessageEvent":
        message = event["llm_message"]
        role = "user" if event.get("source") == "user" else "assistant"
        return role, [Block("thinking", _thinking(message)), Block("text", _texts(message.get("content")))]
    if kind == "ActionEvent":
        thought = "\n".join(filter(None, (_thinking(event), _texts(event.get("thought")))))
        return "assistant", [Block("thinking", thought), _tool_use(event)]
    if kind == "ObservationEvent":
        return "tool", [_tool_result(event)]
    return None  # SystemPromptEvent, state updates, condensation, errors


def parse(unit: SourceUnit) -> Session:
    events = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(events), cwd="", workdir="")
    turns = TurnCollector(session)
    # os.scandir and plain string paths: an event is one small file, so pathlib's
    # per-path objects were a fifth of the parse.
    folder = str(events)
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries if entry.name.endswith(".json"))
    except OSError as error:
        session.warnings.append(ParseWarning(folder, 0, f"unreadable events folder: {error.strerror}"))
        names = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as file:
                event = decode_json(file.read().decode("utf-8", errors="replace"))
        except OSError as error:
            session.warnings.append(ParseWarning(path, 0, f"unreadable event: {error.strerror}"))
            continue
        except ValueError:
            session.warnings.append(ParseWarning(path, 0, "not JSON (still being written?)"))
            continue
        try:
            found = _blocks(event)
            if found is None:
                continue
            role, blocks = found
            turn_uuid = opt_str(event.get("id")) or f"{unit.session_id}:{name}"
            turns.add(turn_uuid, turns.last_uuid, role, normalize_ts(event.get("timestamp")), blocks)
        except (TypeError, KeyError, AttributeError, ValueError):
            session.warnings.append(ParseWarning(path, 0, "event of an unexpected shape"))
    session.cwd = _work_dir(events.parent)
    session.workdir = workdir_facet(session.cwd, "")
    return finish_session(session)


def _work_dir(folder: Path) -> str:
    """The workspace the conversation ran in, from ``base_state.json``'s
    ``workspace.working_dir``; "" when absent."""
    try:
        state = decode_json((folder / "base_state.json").read_text(encoding="utf-8", errors="replace"))
        return opt_str(state["workspace"]["working_dir"]) or ""
    except (OSError, ValueError, TypeError, KeyError):
        return ""
