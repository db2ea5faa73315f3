"""GitHub Copilot CLI sessions: ``<copilot home>/session-state/<id>/events.jsonl``.

Format facts: FORMAT.md.  ``<copilot home>`` is ``$COPILOT_HOME``, else
``~/.copilot``; builds before the XDG migration kept session state under
``$XDG_STATE_HOME/.copilot``, which is read too when that variable is set.  Older
builds wrote a flat ``session-state/<id>.jsonl`` of the same events.

Each line is one event ``{type, data, id, timestamp, parentId, ephemeral?}``; ``id`` is
a UUID, so turn ids are native and survive the rewrite ``/rewind`` makes (it keeps
the lines before the rewind point).  Kept: ``user.message`` (``content``, not
``transformedContent``, which carries injected context), ``assistant.message``
(``reasoningText`` → thinking, ``content`` → text, ``toolRequests`` → tool_use),
``assistant.reasoning`` (thinking; the message after it repeats the text in
``reasoningText``, kept once) and
``tool.execution_complete`` (the result, ``shellExecution.exitCode``).  Skipped: every
``ephemeral`` event (deltas), ``system.message`` (the system prompt), usage, hooks,
``tool.execution_start`` (repeats the request), compaction summaries and the rest.
cwd, branch and repository come from ``session.start`` (else ``session.resume``, else
the session's ``workspace.yaml``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from funes.agents.copilot import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    clean_branch,
    file_unit,
    finish_session,
    normalize_ts,
    opt_str,
    patch_touches,
    path_touches,
    tool_input_text,
    trailing_uuid,
    walk_files,
    workdir_facet,
)
from funes.traces.jsonl import each_record, first_record
from funes.traces.model import Block, FileTouch, Session, SourceUnit

HARNESS = AGENT.harness

EVENTS_FILE = "events.jsonl"
SHELL_TOOLS = frozenset({"bash", "powershell"})
FILE_TOOLS: dict[str, tuple[tuple[str, ...], str]] = {
    "view": (("path",), "read"),
    "create": (("path",), "write"),
    "edit": (("path",), "edit"),
    "str_replace": (("path",), "edit"),
    "str_replace_editor": (("path",), "edit"),
}
_REPO = re.compile(r"[^/\s]+/[^/\s]+")
_WORKSPACE_KEYS = ("cwd", "branch", "repository")


def default_roots() -> list[Path]:
    return AGENT.roots()


def _session_files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    base = root / "session-state" if (root / "session-state").is_dir() else root
    if (base / EVENTS_FILE).is_file():  # a session folder itself
        yield base / EVENTS_FILE
        return
    for path in walk_files(base, lambda name: name.endswith(".jsonl")):
        if path.name == EVENTS_FILE and path.parent.parent == base:
            yield path
        elif path.parent == base and trailing_uuid(path.name):  # the older flat layout
            yield path


def _session_id(path: Path) -> str:
    record = first_record(path)
    data = record.get("data") if isinstance(record, dict) and record.get("type") == "session.start" else None
    found = opt_str(data.get("sessionId")) if isinstance(data, dict) else None
    return found or (path.parent.name if path.name == EVENTS_FILE else path.stem)


def discover(root: Path) -> Iterator[SourceUnit]:
    for path in _session_files(root):
        unit = file_unit(HARNESS, path, _session_id(path))
        if unit is not None:
            yield unit


def _workspace(folder: Path) -> dict[str, str]:
    """The plain ``key: value`` lines of ``workspace.yaml`` funes needs."""
    found: dict[str, str] = {}
    try:
        lines = (folder / "workspace.yaml").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        key, sep, value = line.partition(":")
        if sep and key in _WORKSPACE_KEYS and value.strip():
            found.setdefault(key, value.strip().strip("'\""))
    return found


def _provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
    if name in FILE_TOOLS:
        keys, action = FILE_TOOLS[name]
        return path_touches(arguments, keys, action), None
    if name in SHELL_TOOLS:
        return (), opt_str(arguments.get("command")) if isinstance(arguments, dict) else None
    if name == "apply_patch":
        patch = arguments if isinstance(arguments, str) else as_str(arguments.get("input")) \
            if isinstance(arguments, dict) else ""
        return patch_touches(patch), None
    return (), None


def _tool_use(request: dict[str, Any]) -> Block:
    name, arguments = opt_str(request.get("name")), request.get("arguments")
    files, command = _provenance(name, arguments)
    return Block("tool_use", tool_input_text(arguments), name, opt_str(request.get("toolCallId")),
                 files=files, command=command)


def _result(data: dict[str, Any]) -> Block:
    result = data.get("result")
    error = data.get("error")
    text = as_str(result.get("content")) if isinstance(result, dict) else ""
    if not text and isinstance(error, dict):
        text = as_str(error.get("message"))
    shell = data.get("shellExecution")
    exit_code = shell.get("exitCode") if isinstance(shell, dict) else None
    return Block("tool_result", text, None, opt_str(data.get("toolCallId")),
                 exit_code=exit_code if type(exit_code) is int else None)


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd="", workdir="")
    turns = TurnCollector(session)
    context: dict[str, Any] = {}
    recent: list[str] = []  # the reasoning of this response so far: an event and its message repeat it

    def thinking(text: str) -> list[Block]:
        if not text or text in recent:
            return []
        recent.append(text)
        return [Block("thinking", text)]

    def handle(index: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        data = record.get("data")
        if record.get("ephemeral") is True or not isinstance(data, dict):
            return
        if kind in ("session.start", "session.resume") and not context:
            if isinstance(data.get("context"), dict):
                context.update(data["context"])
            return
        turn_uuid = turns.claim(record.get("id"), f"{session.session_id}:L{index}")
        ts = normalize_ts(record.get("timestamp"))
        parent = turns.last_uuid
        if kind in ("user.message", "tool.execution_complete"):
            recent.clear()
        if kind == "user.message":
            turns.add(turn_uuid, parent, "user", ts, [Block("text", as_str(data.get("content")))])
        elif kind == "assistant.message":
            requests = data.get("toolRequests")
            calls = [_tool_use(r) for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []
            blocks = [*thinking(as_str(data.get("reasoningText"))), Block("text", as_str(data.get("content"))), *calls]
            turns.add(turn_uuid, parent, "assistant", ts, blocks)
        elif kind == "assistant.reasoning":
            turns.add(turn_uuid, parent, "assistant", ts, thinking(as_str(data.get("content"))))
        elif kind == "tool.execution_complete":
            turns.add(turn_uuid, parent, "tool", ts, [_result(data)])

    each_record(path, session.warnings, handle)
    workspace = _workspace(path.parent) if path.name == EVENTS_FILE else {}
    session.cwd = as_str(context.get("cwd")) or workspace.get("cwd", "")
    session.branch = clean_branch(context.get("branch") or workspace.get("branch"))
    session.workdir = workdir_facet(session.cwd, "copilot")
    finish_session(session)
    recorded = as_str(context.get("repository")) or workspace.get("repository", "")
    if session.repo is None and _REPO.fullmatch(recorded):
        session.repo = recorded  # the checkout may be gone; Copilot recorded its owner/name
    return session
