"""OpenHands CLI conversations: ``~/.openhands/conversations/<id hex>/events/*.json``,
one openhands-sdk event per file (``event-<index>-<event id>.json``, the index
zero-padded so names sort in order).  Format facts: FORMAT.md.

A unit is one conversation folder; its signature is the ``events`` folder's
(a new event file changes the folder's mtime).  Kept: ``MessageEvent`` (user and
agent text, reasoning → thinking), ``ActionEvent`` (thought → thinking, the tool
call → tool_use), ``ObservationEvent``, ``AgentErrorEvent`` and
``UserRejectObservation`` (→ tool_result; a command's exit code from
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
    joined_text,
    normalize_ts,
    opt_str,
    paused_gc,
    workdir_facet,
)
from funes.traces.jsonl import decode_json, decode_json_fast
from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness
EVENTS = "events"
# file_editor's commands (FileEditorAction, and PlanningFileEditorAction built on it);
# glob and grep actions carry a ``path`` too, but a folder searched is no file touched.
_FILE_ACTIONS = {"view": "read", "create": "write", "str_replace": "edit", "insert": "edit", "undo_edit": "edit"}
# The terminal tool's action: ExecuteBashAction in openhands-tools 1.2, TerminalAction in 1.21.
_SHELL_ACTIONS = frozenset({"TerminalAction", "ExecuteBashAction"})


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


def _thinking(record: dict[str, Any]) -> str:
    """Reasoning text of a message or an action: ``reasoning_content``, Anthropic
    ``thinking_blocks`` (redacted ones carry no text) and the summaries of an OpenAI
    Responses ``responses_reasoning_item``."""
    texts = [record.get("reasoning_content")]
    for block in record.get("thinking_blocks") or ():
        if isinstance(block, dict):
            texts.append(block.get("thinking"))
    item = record.get("responses_reasoning_item")
    if isinstance(item, dict) and isinstance(item.get("summary"), list):
        texts.extend(item["summary"])
    return "\n".join(text for text in texts if isinstance(text, str) and text)


def _tool_use(event: dict[str, Any]) -> Block:
    action = event.get("action")
    name = opt_str(event.get("tool_name"))
    if not isinstance(action, dict):
        # A call whose arguments failed validation: no action, the model's raw
        # arguments in tool_call (an AgentErrorEvent follows with the reason).
        call = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
        return Block("tool_use", opt_str(call.get("arguments")) or "", name or opt_str(call.get("name")),
                     opt_str(event.get("tool_call_id")))
    kind = action.get("kind")
    arguments = {key: value for key, value in action.items() if key != "kind"}
    command = action.get("command")
    files: tuple[FileTouch, ...] = ()
    if isinstance(action.get("path"), str) and command in _FILE_ACTIONS:
        files = (FileTouch(action["path"], _FILE_ACTIONS[command]),)
    return Block("tool_use", compact_json(arguments), name or opt_str(kind), opt_str(event.get("tool_call_id")),
                 files=files, command=opt_str(command) if kind in _SHELL_ACTIONS else None)


def _exit_code(observation: dict[str, Any]) -> int | None:
    for value in (observation.get("exit_code"), (observation.get("metadata") or {}).get("exit_code")):
        if isinstance(value, int) and not isinstance(value, bool) and value != -1:
            return value
    return None


def _tool_result(event: dict[str, Any], text: str, exit_code: int | None = None) -> Block:
    return Block("tool_result", text, opt_str(event.get("tool_name")), opt_str(event.get("tool_call_id")),
                 exit_code=exit_code)


def _blocks(event: dict[str, Any]) -> tuple[str, list[Block]] | None:
    kind = event.get("kind")
    if kind == "MessageEvent":
        message = event["llm_message"]
        role = "user" if event.get("source") == "user" else "assistant"
        return role, [Block("thinking", _thinking(message)), Block("text", joined_text(message.get("content")))]
    if kind == "ActionEvent":
        thought = "\n".join(filter(None, (_thinking(event), joined_text(event.get("thought")))))
        return "assistant", [Block("thinking", thought), _tool_use(event)]
    if kind == "ObservationEvent":
        observation = event["observation"]
        text = joined_text(observation.get("content")) or opt_str(observation.get("output")) or ""
        return "tool", [_tool_result(event, text, _exit_code(observation))]
    if kind == "AgentErrorEvent":  # the answer to a call that failed validation or raised
        return "tool", [_tool_result(event, opt_str(event.get("error")) or "")]
    if kind == "UserRejectObservation":  # the user (or a hook) refused the call
        return "tool", [_tool_result(event, opt_str(event.get("rejection_reason")) or "")]
    return None  # SystemPromptEvent, state updates, condensation, pauses, conversation errors


def _event_order(name: str) -> tuple[int, str]:
    """``event-<index>-<id>.json`` by its index as a number: the SDK pads it to five
    digits, so from 100000 on the names no longer sort as text."""
    index = name[6:name.find("-", 6)]
    return (int(index) if name.startswith("event-") and index.isdigit() else -1, name)


@paused_gc()
def parse(unit: SourceUnit) -> Session:
    events = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(events), cwd="", workdir="")
    turns = TurnCollector(session)
    # os.scandir, plain string paths and unbuffered reads: an event is one small
    # file, so the cost of opening it (pathlib's per-path objects, a buffer per
    # file) weighs as much as decoding it.
    folder = str(events)
    try:
        with os.scandir(folder) as entries:
            names = sorted((entry.name for entry in entries if entry.name.endswith(".json")), key=_event_order)
    except OSError as error:
        session.warnings.append(ParseWarning(folder, 0, f"unreadable events folder: {error.strerror}"))
        names = []
    prefix = os.path.join(folder, "")
    for name in names:
        path = prefix + name
        try:
            with open(path, "rb", buffering=0) as file:
                event = decode_json_fast(file.readall())
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
