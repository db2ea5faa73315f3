"""Synthetic histories in the on-disk shapes of Kimi CLI, Mistral Vibe, Auggie and OpenHands (kept
apart from synthetic.py, which holds the other formats; scripted.py makes the sessions
these writers render).  Each writer takes a folder and the scripted sessions and returns the
path to discover from; the shapes follow each agent's FORMAT.md and test fixtures."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

from scripted import ScriptedSession, _jsonl, _steps

_KIMI_TOOLS = {"shell": "Shell", "read": "ReadFile", "edit": "StrReplaceFile", "write": "WriteFile", "search": "Grep"}


def _kimi_args(kind: str, args: dict) -> dict:
    if kind == "edit":
        return {"path": args["path"], "edit": {"old": args["old"], "new": args["new"]}}
    return args


def write_kimi(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions/<md5 of cwd>/<session id>/{context,wire}.jsonl`` and
    ``<root>/kimi.json`` mapping the hashes back to the work dirs."""
    work_dirs = {}
    for session in sessions:
        digest = hashlib.md5(session.cwd.encode()).hexdigest()
        work_dirs[session.cwd] = {"path": session.cwd, "kaos": "local", "last_session_id": session.id}
        context = [{"role": "_system_prompt", "content": "You are Kimi Code CLI."}]
        wire: list[dict] = [{"type": "metadata", "protocol_version": "1.10"}]
        for number, exchange in enumerate(session.exchanges):
            context += [{"role": "_checkpoint", "id": number}, {"role": "user", "content": exchange.prompt}]
            wire.append({"timestamp": exchange.started, "message": {"type": "TurnBegin",
                                                                    "payload": {"user_input": exchange.prompt}}})
            for offset, step in _steps(exchange):
                parts = ([{"type": "think", "think": step.thinking, "encrypted": None}] if step.thinking else [])
                message: dict = {"role": "assistant", "content": [*parts, {"type": "text", "text": step.text}]}
                if step.calls:
                    message["tool_calls"] = [{"type": "function", "id": c.id, "function": {
                        "name": _KIMI_TOOLS[c.kind], "arguments": json.dumps(_kimi_args(c.kind, c.args))}}
                        for c in step.calls]
                context.append(message)
                for c in step.calls:
                    status = "<system>ERROR: Command failed with exit code: 1.</system>" if c.is_error else \
                        "<system>Command executed successfully.</system>"
                    context.append({"role": "tool", "tool_call_id": c.id, "content": [
                        {"type": "text", "text": status}, {"type": "text", "text": c.result}]})
                wire.append({"timestamp": exchange.at(offset), "message": {"type": "StepBegin",
                                                                          "payload": {"n": offset}}})
            context.append({"role": "_usage", "token_count": 4096})
        folder = root / "sessions" / digest / session.id
        _jsonl(folder / "context.jsonl", context)
        _jsonl(folder / "wire.jsonl", wire)
    root.mkdir(parents=True, exist_ok=True)
    (root / "kimi.json").write_text(json.dumps({"work_dirs": list(work_dirs.values())}))
    return root


_VIBE_TOOLS = {"shell": "bash", "read": "read", "edit": "edit", "write": "write_file", "search": "grep"}


def _vibe_args(kind: str, args: dict) -> dict:
    if kind in ("read", "edit"):
        renamed = {"path": "file_path", "old": "old_string", "new": "new_string"}
        return {renamed.get(key, key): value for key, value in args.items()}
    return args


def write_vibe(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/logs/session/session_<time>_<short id>/messages.jsonl`` and its
    ``meta.json``."""
    for session in sessions:
        messages: list[dict] = []
        for exchange in session.exchanges:
            messages.append({"role": "user", "content": exchange.prompt, "injected": False,
                             "message_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session.id}/{len(messages)}"))})
            for _, step in _steps(exchange):
                message: dict = {"role": "assistant", "content": step.text, "injected": False,
                                 "message_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session.id}/{len(messages)}"))}
                if step.thinking:
                    message["reasoning_content"] = step.thinking
                if step.calls:
                    message["tool_calls"] = [{"id": c.id, "index": n, "type": "function", "function": {
                        "name": _VIBE_TOOLS[c.kind], "arguments": json.dumps(_vibe_args(c.kind, c.args))}}
                        for n, c in enumerate(step.calls)]
                messages.append(message)
                messages += [{"role": "tool", "content": f"stdout: {c.result}\nreturncode: {int(c.is_error)}"
                              if c.kind == "shell" else c.result, "injected": False, "name": _VIBE_TOOLS[c.kind],
                              "tool_call_id": c.id} for c in step.calls]
        started = datetime.fromtimestamp(session.exchanges[0].started, timezone.utc)
        folder = root / "logs" / "session" / f"session_{started:%Y%m%d_%H%M%S}_{session.id[:8]}"
        _jsonl(folder / "messages.jsonl", messages)
        (folder / "meta.json").write_text(json.dumps({
            "session_id": session.id, "parent_session_id": None, "start_time": started.isoformat(),
            "end_time": None, "git_commit": None, "git_branch": "main",
            "environment": {"working_directory": session.cwd}, "username": "dev", "title": None,
            "total_messages": len(messages), "system_prompt": {"role": "system", "content": "You are Vibe."}},
            indent=2))
    return root / "logs" / "session"


_AUGGIE_TOOLS = {"shell": "launch-process", "read": "view", "edit": "str-replace-editor", "write": "save-file",
                 "search": "grep-search"}


def write_auggie(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions/<session id>.json``: one document per session whose
    ``chatHistory`` holds one exchange per model call."""
    for session in sessions:
        history: list[dict] = []
        ide = {"id": 9, "type": 4, "ide_state_node": {"workspace_folders": [
            {"repository_root": session.cwd, "folder_root": session.cwd}]}}
        for exchange in session.exchanges:
            request_nodes: list[dict] = [{"id": 1, "type": 0, "text_node": {"content": exchange.prompt}}, ide]
            message = exchange.prompt
            for offset, step in _steps(exchange):
                nodes: list[dict] = ([{"id": 0, "type": 8, "content": step.thinking,
                                       "thinking": {"content": step.thinking}}] if step.thinking else [])
                nodes.append({"id": len(nodes), "type": 0, "content": step.text})
                nodes += [{"id": len(nodes) + n, "type": 5, "content": "", "tool_use": {
                    "tool_use_id": c.id, "tool_name": _AUGGIE_TOOLS[c.kind], "input_json": json.dumps(c.args)}}
                    for n, c in enumerate(step.calls)]
                history.append({"exchange": {"request_message": message, "response_text": step.text,
                                             "request_id": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                                          f"{session.id}/{len(history)}")),
                                             "request_nodes": request_nodes, "response_nodes": nodes},
                                "completed": True, "sequenceId": len(history) + 1,
                                "finishedAt": datetime.fromtimestamp(exchange.at(offset), timezone.utc).isoformat(),
                                "isHistorySummary": False, "source": "local"})
                message = ""
                request_nodes = [{"id": n, "type": 1, "tool_result_node": {
                    "tool_use_id": c.id, "is_error": c.is_error, "content":
                    f"<return-code>{int(c.is_error)}</return-code>\n<output>{c.result}</output>"
                    if c.kind == "shell" else c.result}} for n, c in enumerate(step.calls)]
        started = datetime.fromtimestamp(session.exchanges[0].started, timezone.utc).isoformat()
        document = {"sessionId": session.id, "created": started, "modified": started, "chatHistory": history,
                    "agentState": {"userGuidelines": "", "workspaceGuidelines": "", "modelId": "claude-sonnet-4-5"}}
        folder = root / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{session.id}.json").write_text(json.dumps(document, indent=2))
    return root / "sessions"


# The CLI 1.16 tools (openhands-tools 1.21): terminal and file_editor.
_OPENHANDS_TOOLS = {"shell": "terminal", "read": "file_editor", "edit": "file_editor", "write": "file_editor",
                    "search": "terminal"}


def _openhands_action(kind: str, args: dict) -> dict:
    if kind == "shell":
        return {"kind": "TerminalAction", "command": args["command"]}
    if kind == "search":
        return {"kind": "TerminalAction", "command": f"grep -rn {json.dumps(args.get('pattern', ''))} ."}
    editor = {"read": "view", "edit": "str_replace", "write": "create"}[kind]
    return {"kind": "FileEditorAction", "command": editor, **args}


def write_openhands(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/conversations/<id>/base_state.json`` and ``events/event-<n>-<id>.json``,
    one openhands-sdk event per file."""
    for session in sessions:
        folder = root / "conversations" / session.id.replace("-", "")
        (folder / "events").mkdir(parents=True, exist_ok=True)
        (folder / "base_state.json").write_text(json.dumps({"id": session.id, "workspace": {
            "kind": "LocalWorkspace", "working_dir": session.cwd}}))
        events: list[dict] = []
        for exchange in session.exchanges:
            events.append({"kind": "MessageEvent", "timestamp": exchange.started, "source": "user",
                           "llm_message": {"role": "user", "content": [{"type": "text", "text": exchange.prompt}]}})
            for offset, step in _steps(exchange):
                at = exchange.at(offset)
                for c in step.calls:
                    events.append({"kind": "ActionEvent", "timestamp": at, "source": "agent",
                                   "thought": [{"type": "text", "text": step.thinking or ""}],
                                   "tool_name": _OPENHANDS_TOOLS[c.kind], "tool_call_id": c.id,
                                   "action": _openhands_action(c.kind, c.args)})
                    events.append({"kind": "ObservationEvent", "timestamp": at, "source": "environment",
                                   "tool_name": _OPENHANDS_TOOLS[c.kind], "tool_call_id": c.id, "observation": {
                                       "kind": "TerminalObservation", "content": [{"type": "text", "text": c.result}],
                                       "exit_code": 1 if c.is_error else 0}})
                events.append({"kind": "MessageEvent", "timestamp": at, "source": "agent", "llm_message": {
                    "role": "assistant", "content": [{"type": "text", "text": step.text}]}})
        for index, event in enumerate(events):
            event_id = str(uuid.UUID(int=index + 1))
            event["id"] = event_id
            (folder / "events" / f"event-{index:05d}-{event_id}.json").write_text(json.dumps(event))
    return root / "conversations"


WRITERS = {"kimi": write_kimi, "vibe": write_vibe, "auggie": write_auggie, "openhands": write_openhands}
