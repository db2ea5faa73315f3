"""Kimi CLI (MoonshotAI/kimi-cli) sessions:
``<share>/sessions/<md5 of the work dir>/<session id>/context.jsonl``.

Format facts: FORMAT.md.  ``context.jsonl`` is the model's message history, one
kosong ``Message`` per line (``{role, content, tool_calls?, tool_call_id?}``, OpenAI's
chat shape; ``content`` a string or a list of ``text``/``think``/media parts), and
bookkeeping lines whose role starts with ``_`` (``_system_prompt``, ``_checkpoint``,
``_usage``).  The lines carry no time: each user message's time is that of the
matching ``TurnBegin`` record in the session's ``wire.jsonl`` (the n-th real user
message, the n-th TurnBegin), and the turns after it share it.  The work dir is
read from ``<share>/kimi.json`` (``work_dirs[].path``, whose md5 names the folder).
Subagents: ``<session>/subagents/<agent id>/context.jsonl``.

Kept: user messages but Kimi's own (checkpoint markers and reminders, whose text is
wrapped in ``<system>``/``<system-reminder>``), assistant messages (``think`` parts →
thinking, text, ``tool_calls`` → tool_use) and ``tool`` messages (→ tool_result; a
``Shell`` result's exit code from its ``<system>`` status line).  turn_uuid =
``"{session id}:L{line}"`` (lines are only appended; a revert or ``/clear``
rotates the file, see FORMAT.md), parent = the previous turn.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.kimi import AGENT
from funes.traces.common import (
    TurnCollector,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    walk_files,
    workdir_facet,
)
from funes.traces.content_parts import function_call_blocks, named_tool_provenance
from funes.traces.jsonl import decode_json, each_record
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness
CONTEXT = "context.jsonl"
FILE_TOOLS = {"ReadFile": (("path",), "read"), "ReadMediaFile": (("path",), "read"), "WriteFile": (("path",), "write"),
              "StrReplaceFile": (("path",), "edit")}
SHELL_TOOLS = frozenset({"Shell"})
_provenance = named_tool_provenance(FILE_TOOLS, SHELL_TOOLS)
_OWN_TEXT = ("<system>", "<system-reminder>")
_EXIT = re.compile(r"<system>(?:ERROR: )?Command failed with exit code: (-?\d+)")
_SUCCESS = "<system>Command executed successfully.</system>"
_LEGACY = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl")


def default_roots() -> list[Path]:
    return AGENT.roots()


def _session_id(path: Path) -> str | None:
    """The session a context file holds: the folder of ``context.jsonl`` (a
    subagent's: ``<session>-<agent id>``), or the name of a context file from before
    sessions had folders (``<hash>/<session id>.jsonl``); None for any other file
    (``wire.jsonl``, rotated ``context_<n>.jsonl``)."""
    if path.name == CONTEXT:
        if path.parent.parent.name == "subagents":
            return f"{path.parent.parent.parent.name}-{path.parent.name}"
        return path.parent.name
    if _LEGACY.fullmatch(path.name) and path.parent.parent.name == "sessions":
        return path.stem
    return None


def discover(root: Path) -> Iterator[SourceUnit]:
    if root.is_file():
        paths: Iterator[Path] = iter([root])
    else:
        base = root / "sessions" if (root / "sessions").is_dir() else root
        paths = walk_files(base, lambda name: name == CONTEXT or bool(_LEGACY.fullmatch(name)))
    for path in paths:
        session_id = _session_id(path) or path.stem
        unit = file_unit(HARNESS, path, session_id)
        if unit is not None:
            yield unit


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _texts(content: Any, kind: str = "text") -> list[str]:
    return [part[kind] for part in _parts(content)
            if isinstance(part, dict) and part.get("type") == kind and isinstance(part.get(kind), str)]


def _tool_result(message: dict[str, Any]) -> Block:
    texts = _texts(message.get("content"))
    text = "\n".join(texts)
    status = texts[0] if texts else ""
    exit_code = 0 if status == _SUCCESS else None
    if (match := _EXIT.match(status)) is not None:
        exit_code = int(match.group(1))
    return Block("tool_result", text, None, opt_str(message.get("tool_call_id")), exit_code=exit_code)


def _turn_times(folder: Path) -> list[str]:
    """The times of the session's TurnBegin records in ``wire.jsonl``, in order
    (RFC 3339 UTC, "" for one unreadable); [] when there is no such file.  Only
    the lines naming TurnBegin are decoded: the rest is the streamed reply."""
    times: list[str] = []
    try:
        with (folder / "wire.jsonl").open("rb") as wire:
            for line in wire:
                if b'"TurnBegin"' not in line:
                    continue
                try:
                    record = decode_json(line.decode("utf-8", errors="replace").strip())
                    if record["message"]["type"] == "TurnBegin":
                        times.append(normalize_ts(record.get("timestamp")))
                except (ValueError, TypeError, KeyError, AttributeError):
                    continue
    except OSError:
        return []
    return times


def _work_dirs(share: Path) -> dict[str, str]:
    """md5 folder name → work dir path, from ``<share>/kimi.json``."""
    try:
        data = decode_json((share / "kimi.json").read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    found: dict[str, str] = {}
    for entry in data.get("work_dirs", ()) if isinstance(data, dict) else ():
        path = entry.get("path") if isinstance(entry, dict) else None
        if isinstance(path, str) and path:
            digest = hashlib.md5(path.encode("utf-8")).hexdigest()
            kaos = entry.get("kaos")
            found[digest if kaos in (None, "local") else f"{kaos}_{digest}"] = path
    return found


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    subagent = path.name == CONTEXT and path.parent.parent.name == "subagents"
    session_folder = path.parents[2] if subagent else path.parent
    hash_folder = session_folder.parent if path.name == CONTEXT else path.parent  # legacy: <hash>/<id>.jsonl
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="",
                      is_subagent=subagent, parent_session_id=session_folder.name if subagent else None)
    turns = TurnCollector(session)
    times = _turn_times(path.parent) if path.name == CONTEXT else []
    asked = 0
    now = ""

    def handle(index: int, record: dict[str, Any]) -> None:
        nonlocal asked, now
        role = record.get("role")
        turn_uuid = f"{unit.session_id}:L{index}"
        content = record.get("content")
        if role == "user":
            texts = _texts(content)
            if texts and all(text.lstrip().startswith(_OWN_TEXT) for text in texts):
                return  # a checkpoint marker or a reminder Kimi sent itself
            now = times[asked] if asked < len(times) else now
            asked += 1
            blocks = [Block("text", "\n".join(text for text in texts if not text.lstrip().startswith(_OWN_TEXT)))]
        elif role == "assistant":
            blocks = [Block("thinking", "\n".join(_texts(content, "think"))), Block("text", "\n".join(_texts(content))),
                      *function_call_blocks(record.get("tool_calls"), _provenance)]
        elif role == "tool":
            blocks = [_tool_result(record)]
        else:
            return  # _system_prompt, _checkpoint, _usage, system
        turns.add(turn_uuid, turns.last_uuid, role, now, blocks)

    each_record(path, session.warnings, handle)
    session.cwd = _work_dirs(hash_folder.parent.parent).get(hash_folder.name, "")  # <share>/sessions/<hash>
    session.workdir = workdir_facet(session.cwd, hash_folder.name)
    return finish_session(session)
