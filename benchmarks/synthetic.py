"""Synthetic agent histories.

``make_history``: copies of the real fixture transcripts (Claude, pi, Codex) under a
HOME, the way each agent stores its sessions; each copy gets a new session id
(Claude: the file name; pi: the header id; Codex: the session_meta id), so every
copy yields distinct chunk ids.  Indexing and recall benchmarks use it; with
``days_apart`` every copy's timestamps move back that many days more than the
copy before it, so sessions have distinct dates spread over a long history.

``make_agent_history``: a history in any agent's format (FORMATS), for parse
throughput per format: copies of the real transcripts for Claude and pi, and for
every other format scripted coding sessions rendered in that agent's own on-disk
shape (below)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from scripted import Call, ScriptedSession, _iso, _jsonl, _steps, scripted_session
from synthetic_clis import WRITERS as CLI_WRITERS
from synthetic_more import WRITERS as MORE_WRITERS
from synthetic_stores import (write_crush, write_cursor_ide, write_forge, write_goose, write_grok, write_hermes,
                              write_kiro_db, write_openclaw, write_opencode, write_parquet)

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
# Chunks per MB of these transcripts at the memory's 600-character splits
# (measured: 149,440 chunks from 157 MB).
CHUNKS_PER_MB = 950
CLAUDE = ["episodic_memory/9a9eadc8-c1f1-493e-a0f1-884aa996b05b.jsonl",
          "episodic_memory/0fae0449-64d3-4788-8622-d3a47d82c14b.jsonl",
          "episodic_memory/67a8478e-78dc-44ab-82ea-f65c8ead85f6.jsonl", "claude_session.jsonl"]
PI = ["pi_large_session_v1.jsonl", "pi_session.jsonl"]
CODEX = ["codex_session.jsonl"]


def _with_new_id(text: str, kind: str, new_id: str) -> str:
    lines = text.splitlines()
    first = json.loads(lines[0])
    if kind == "pi":
        first["id"] = new_id
    else:
        first["payload"]["id"] = new_id
    return "\n".join([json.dumps(first), *lines[1:]]) + "\n"


# An ISO-8601 UTC timestamp as the transcripts write them, a JSON string ("...Z").
_ISO_TS = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)((?:\.\d+)?Z)"')


def _moved_back(text: str, days: float) -> str:
    """``text`` with every ISO timestamp string ``days`` earlier (fraction and format kept)."""
    if not days:
        return text
    delta = timedelta(seconds=round(days * 86_400))

    def earlier(match: re.Match) -> str:
        moved = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S") - delta
        return f'"{moved:%Y-%m-%dT%H:%M:%S}{match.group(2)}"'
    return _ISO_TS.sub(earlier, text)


def make_history(home: Path, target_bytes: int, seed: int = 0, only: str | None = None,
                 days_apart: float = 0.0) -> tuple[int, int]:
    """Fill ``home`` with copies until ``target_bytes`` (of one agent's transcripts
    when ``only`` names it), copy ``n`` dated ``n * days_apart`` days before the
    fixtures; returns (files, bytes)."""
    rng = uuid.UUID(int=seed)
    sources = {name: (FIXTURES / name).read_bytes().decode("utf-8") for name in (*CLAUDE, *PI, *CODEX)}
    files = written = 0
    copy = 0

    def write(target: Path, text: str) -> None:
        nonlocal files, written
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_moved_back(text, copy * days_apart).encode("utf-8"))
        written += target.stat().st_size
        files += 1

    while written < target_bytes:
        for name in CLAUDE if only in (None, "claude") else ():
            session = str(uuid.uuid5(rng, f"claude-{copy}-{name}"))
            write(home / ".claude" / "projects" / f"-synthetic-proj{copy % 25}" / f"{session}.jsonl", sources[name])
        for name in PI if only in (None, "pi") else ():
            session = str(uuid.uuid5(rng, f"pi-{copy}-{name}"))
            write(home / ".pi" / "agent" / "sessions" / f"--synthetic-proj{copy % 25}--"
                  / f"2026-01-01T00-00-00-000Z_{session}.jsonl", _with_new_id(sources[name], "pi", session))
        for name in CODEX if only in (None, "codex") else ():
            session = str(uuid.uuid5(rng, f"codex-{copy}-{name}"))
            write(home / ".codex" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{session}.jsonl",
                  _with_new_id(sources[name], "codex", session))
        copy += 1
    return files, written


def make_history_of_chunks(home: Path, chunks: int, days_apart: float = 0.0) -> tuple[int, int]:
    """A history that indexes into about ``chunks`` chunks (``days_apart``: as make_history)."""
    return make_history(home, int(chunks / CHUNKS_PER_MB * 1e6), days_apart=days_apart)


# --------------------------------------------------------------------------- per agent format
#
# The scripted sessions (scripted.py) in the shapes of agents that keep files; the
# database stores are in synthetic_stores.py, more formats in synthetic_more.py and
# synthetic_clis.py.

# ---- JSON Lines --------------------------------------------------------------------------------

_GEMINI_TOOLS = {"shell": "run_shell_command", "read": "read_file", "edit": "replace", "write": "write_file",
                 "search": "search_file_content"}


def _gemini_args(call: Call) -> dict:
    a = call.args
    return {"shell": lambda: {"command": a["command"], "description": "run"},
            "read": lambda: {"absolute_path": a["path"]},
            "edit": lambda: {"file_path": a["path"], "old_string": a["old"], "new_string": a["new"]},
            "write": lambda: {"file_path": a["path"], "content": a["content"]},
            "search": lambda: {"pattern": a["pattern"], "path": a["path"]}}[call.kind]()


def write_gemini(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/tmp/<project>/chats/session-*.jsonl``: a metadata line, then each message
    appended whole every time it changes (a model message again once its calls ran), the
    ``functionResponse`` copies as user messages, and ``$set`` metadata updates."""
    for number, session in enumerate(sessions):
        project = root / "tmp" / f"proj{number % 7}"
        project.mkdir(parents=True, exist_ok=True)
        (project / ".project_root").write_text(session.cwd)
        records: list[dict] = [{"sessionId": session.id, "projectHash": f"{number:064x}",
                                "startTime": _iso(session.exchanges[0].started),
                                "lastUpdated": _iso(session.exchanges[0].started), "kind": "main"}]
        for e, exchange in enumerate(session.exchanges):
            records.append({"id": f"{session.id[:8]}-u{e}", "timestamp": _iso(exchange.started), "type": "user",
                            "content": [{"text": exchange.prompt}]})
            records.append({"$set": {"lastUpdated": _iso(exchange.started)}})
            for s, (offset, step) in enumerate(_steps(exchange)):
                message = {"id": f"{session.id[:8]}-m{e}-{s}", "timestamp": _iso(exchange.at(offset)),
                           "type": "gemini", "content": step.text,
                           "thoughts": [{"subject": "Plan", "description": step.thinking,
                                         "timestamp": _iso(exchange.at(offset))}] if step.thinking else [],
                           "tokens": {"input": 900, "output": 120, "cached": 0, "thoughts": 40, "tool": 0,
                                      "total": 1060}, "model": "gemini-2.5-pro"}
                records.append(message)
                if step.calls:
                    calls = [{"id": c.id, "name": _GEMINI_TOOLS[c.kind], "args": _gemini_args(c),
                              "result": [{"functionResponse": {"id": c.id, "name": _GEMINI_TOOLS[c.kind],
                                                               "response": {"output": c.result}}}],
                              "status": "error" if c.is_error else "success",
                              "timestamp": _iso(exchange.at(offset + 5))} for c in step.calls]
                    records.append(message | {"toolCalls": calls})
                    records.append({"id": f"{session.id[:8]}-r{e}-{s}", "timestamp": _iso(exchange.at(offset + 6)),
                                    "type": "user", "content": [call["result"][0] for call in calls]})
                records.append({"$set": {"lastUpdated": _iso(exchange.at(offset))}})
        stamp = datetime.fromtimestamp(session.exchanges[0].started, timezone.utc).strftime("%Y-%m-%dT%H-%M")
        _jsonl(project / "chats" / f"session-{stamp}-{session.id[:8]}.jsonl", records)
    return root


def write_codex(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``: session_meta, then
    response_item records (message, reasoning, function_call / custom_tool_call for
    apply_patch, their outputs) and event_msg token counts."""
    for session in sessions:
        first = session.exchanges[0].started
        records: list[dict] = [{"timestamp": _iso(first), "type": "session_meta", "payload": {
            "id": session.id, "timestamp": _iso(first), "cwd": session.cwd, "originator": "codex_cli_rs",
            "cli_version": "0.171.0", "source": "cli", "model_provider": "openai",
            "git": {"commit_hash": "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "branch": "main",
                    "repository_url": "https://github.com/acme/app.git"}}}]

        def item(at: float, payload: dict) -> None:
            records.append({"timestamp": _iso(at), "type": "response_item", "payload": payload})

        for exchange in session.exchanges:
            records.append({"timestamp": _iso(exchange.started), "type": "turn_context", "payload": {
                "cwd": session.cwd, "approval_policy": "on-request", "model": "gpt-5-codex"}})
            item(exchange.started, {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": exchange.prompt}]})
            for offset, step in _steps(exchange):
                at = exchange.at(offset)
                if step.thinking:
                    item(at, {"type": "reasoning", "summary": [{"type": "summary_text", "text": step.thinking}],
                              "content": None, "encrypted_content": "gAAAA" + "x" * 200})
                item(at, {"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": step.text}]})
                for c in step.calls:
                    if c.kind in ("edit", "write"):
                        patch = (f"*** Begin Patch\n*** Update File: {c.args['path']}\n@@\n"
                                 f"-{c.args.get('old', '')}\n+{c.args.get('new', c.args.get('content', ''))}\n*** End Patch")
                        item(at + 1, {"type": "custom_tool_call", "status": "completed", "call_id": c.id,
                                      "name": "apply_patch", "input": patch})
                        item(at + 5, {"type": "custom_tool_call_output", "call_id": c.id, "output":
                                      f"Exit code: 0\nWall time: 0 seconds\nOutput:\n{c.result}\n"})
                    else:
                        command = c.args.get("command") or f"cat {c.args.get('path', '')}"
                        item(at + 1, {"type": "function_call", "name": "exec_command", "call_id": c.id,
                                      "arguments": json.dumps({"cmd": command, "workdir": session.cwd,
                                                               "yield_time_ms": 10000})})
                        item(at + 5, {"type": "function_call_output", "call_id": c.id, "output":
                                      f"Chunk ID: 3af6c9\nWall time: 0.1 seconds\nProcess exited with code "
                                      f"{int(c.is_error)}\nOutput:\n{c.result}\n"})
                records.append({"timestamp": _iso(at + 6), "type": "event_msg", "payload": {
                    "type": "token_count", "info": {"total_token_usage": {"input_tokens": 900, "output_tokens": 120}}}})
        day = datetime.fromtimestamp(first, timezone.utc)
        _jsonl(root / "sessions" / f"{day:%Y/%m/%d}" / f"rollout-{day:%Y-%m-%dT%H-%M-%S}-{session.id}.jsonl", records)
    return root / "sessions"


_QWEN_TOOLS = {"shell": "run_shell_command", "read": "read_file", "edit": "edit", "write": "write_file",
               "search": "grep_search"}


def write_qwen(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/projects/<cwd slug>/chats/<session id>.jsonl``: uuid-chained records of
    user, assistant (Gemini-style parts), tool_result and system telemetry."""
    for session in sessions:
        records, parent = [], None
        base = {"sessionId": session.id, "cwd": session.cwd, "version": "0.24.4", "gitBranch": "main"}

        def add(kind: str, at: float, **fields) -> None:
            nonlocal parent
            ident = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session.id}/{len(records)}"))
            records.append({"uuid": ident, "parentUuid": parent, **base, "timestamp": _iso(at), "type": kind,
                            **fields})
            parent = ident

        for exchange in session.exchanges:
            add("user", exchange.started, provenance="real_user",
                message={"role": "user", "parts": [{"text": exchange.prompt}]})
            add("system", exchange.started, provenance="system", subtype="ui_telemetry",
                systemPayload={"uiEvent": {"event.name": "qwen-code.api_response"}})
            for offset, step in _steps(exchange):
                parts = ([{"text": step.thinking, "thought": True}] if step.thinking else []) + [{"text": step.text}]
                parts += [{"functionCall": {"id": c.id, "name": _QWEN_TOOLS[c.kind], "args": _gemini_args(c)}}
                          for c in step.calls]
                add("assistant", exchange.at(offset), provenance="assistant_output", model="qwen3-coder",
                    message={"role": "model", "parts": parts},
                    usageMetadata={"promptTokenCount": 900, "candidatesTokenCount": 120, "totalTokenCount": 1020})
                for c in step.calls:
                    add("tool_result", exchange.at(offset + 5), provenance="tool_result",
                        message={"role": "user", "parts": [{"functionResponse": {
                            "id": c.id, "name": _QWEN_TOOLS[c.kind], "response": {"output": c.result}}}]},
                        toolCallResult={"callId": c.id, "status": "error" if c.is_error else "success",
                                        "resultDisplay": c.result[:200]})
        slug = session.cwd.replace("/", "-")
        _jsonl(root / "projects" / slug / "chats" / f"{session.id}.jsonl", records)
    return root


_COPILOT_TOOLS = {"shell": "bash", "read": "view", "edit": "str_replace_editor", "write": "create", "search": "grep"}


def write_copilot(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/session-state/<id>/events.jsonl`` (+ ``workspace.yaml``): parent-chained
    events: session.start, user.message, assistant.turn_start/message/turn_end,
    tool.execution_start/complete, usage records."""
    for session in sessions:
        folder = root / "session-state" / session.id
        records, parent = [], None

        def add(kind: str, at: float, data: dict) -> None:
            nonlocal parent
            ident = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session.id}/{len(records)}"))
            records.append({"type": kind, "data": data, "id": ident, "timestamp": _iso(at), "parentId": parent})
            parent = ident

        first = session.exchanges[0].started
        add("session.start", first, {"sessionId": session.id, "version": 1, "producer": "copilot-agent",
                                     "copilotVersion": "1.0.102", "startTime": _iso(first), "selectedModel": "m1",
                                     "context": {"cwd": session.cwd, "gitRoot": session.cwd, "repository": "acme/app",
                                                 "branch": "main"}})
        turn = 0
        for e, exchange in enumerate(session.exchanges):
            interaction = f"{session.id[:8]}-i{e}"
            message_id = f"{session.id[:8]}-u{e}"
            add("user.message", exchange.started, {"content": exchange.prompt, "transformedContent": exchange.prompt,
                                                   "messageId": message_id, "interactionId": interaction,
                                                   "turnId": str(turn)})
            for s, (offset, step) in enumerate(_steps(exchange)):
                add("assistant.turn_start", exchange.at(offset), {"turnId": str(turn), "interactionId": interaction})
                add("session.usage_record", exchange.at(offset), {"usage": {"model": "m1", "inputTokens": 900,
                                                                             "outputTokens": 120}})
                requests = [{"toolCallId": c.id, "name": _COPILOT_TOOLS[c.kind], "arguments": c.args,
                             "type": "function"} for c in step.calls]
                data = {"messageId": f"{session.id[:8]}-a{e}-{s}", "originatingMessageId": message_id, "model": "m1",
                        "content": step.text, "toolRequests": requests, "interactionId": interaction,
                        "turnId": str(turn)}
                if step.thinking:
                    data["reasoningText"] = step.thinking
                add("assistant.message", exchange.at(offset), data)
                for c in step.calls:
                    add("tool.execution_start", exchange.at(offset + 1),
                        {"toolCallId": c.id, "toolName": _COPILOT_TOOLS[c.kind], "arguments": c.args,
                         "turnId": str(turn)})
                    add("tool.execution_complete", exchange.at(offset + 5),
                        {"toolCallId": c.id, "model": "m1", "interactionId": interaction, "turnId": str(turn),
                         "success": not c.is_error, "result": {"content": c.result}})
                add("assistant.turn_end", exchange.at(offset + 6), {"turnId": str(turn)})
                turn += 1
        _jsonl(folder / "events.jsonl", records)
        (folder / "workspace.yaml").write_text(f"id: {session.id}\ncwd: {session.cwd}\ngit_root: {session.cwd}\n"
                                               f"repository: acme/app\nbranch: main\nname: synthetic\n")
    return root


_CURSOR_TOOLS = {"shell": "Shell", "read": "Read", "edit": "StrReplace", "write": "Write", "search": "Grep"}


def write_cursor(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/projects/<slug>/agent-transcripts/<id>.jsonl``: role/message lines with
    text and tool_use parts (the CLI writes no tool results and no times), a
    ``turn_ended`` line after each prompt's answer."""
    for session in sessions:
        records: list[dict] = []
        for exchange in session.exchanges:
            records.append({"role": "user", "message": {"content": [
                {"type": "text", "text": f"<timestamp>{_iso(exchange.started)}</timestamp>\n<user_query>\n"
                                         f"{exchange.prompt}\n</user_query>"}]}})
            for _, step in _steps(exchange):
                content = [{"type": "text", "text": step.text}]
                content += [{"type": "tool_use", "name": _CURSOR_TOOLS[c.kind], "input": c.args} for c in step.calls]
                records.append({"role": "assistant", "message": {"content": content}})
            records.append({"type": "turn_ended", "status": "success"})
        slug = session.cwd.strip("/").replace("/", "-")
        _jsonl(root / "projects" / slug / "agent-transcripts" / f"{session.id}.jsonl", records)
    return root


_KIRO_TOOLS = {"shell": "shell", "read": "read", "edit": "write", "write": "write", "search": "grep"}


def write_kiro(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions/cli/<id>.jsonl`` + ``<id>.json``: versioned ``kind``/``data``
    records (Prompt, AssistantMessage with thinking/text/toolUse, ToolResults)."""
    folder = root / "sessions" / "cli"
    for session in sessions:
        records: list[dict] = []
        n = 0
        for exchange in session.exchanges:
            n += 1
            records.append({"version": "v1", "kind": "Prompt", "data": {
                "message_id": f"p-{n}", "content": [{"kind": "text", "data": exchange.prompt}],
                "meta": {"timestamp": exchange.started}}})
            for _, step in _steps(exchange):
                n += 1
                content = ([{"kind": "thinking", "data": {"text": step.thinking, "signature": None}}]
                           if step.thinking else []) + [{"kind": "text", "data": step.text}]
                content += [{"kind": "toolUse", "data": {"toolUseId": c.id, "name": _KIRO_TOOLS[c.kind],
                                                         "input": c.args}} for c in step.calls]
                records.append({"version": "v1", "kind": "AssistantMessage",
                                "data": {"message_id": f"a-{n}", "content": content}})
                if step.calls:
                    n += 1
                    records.append({"version": "v1", "kind": "ToolResults", "data": {"message_id": f"r-{n}", "content": [
                        {"kind": "toolResult", "data": {"toolUseId": c.id, "status": "error" if c.is_error else "success",
                                                        "content": [{"kind": "text", "data": c.result}]}}
                        for c in step.calls]}})
        _jsonl(folder / f"{session.id}.jsonl", records)
        (folder / f"{session.id}.json").write_text(json.dumps({"session_id": session.id, "cwd": session.cwd}))
    return root


# ---- whole-file JSON ---------------------------------------------------------------------------

_CLINE_TOOLS = {"shell": "execute_command", "read": "read_file", "edit": "replace_in_file", "write": "write_to_file",
                "search": "search_files"}


def _anthropic_messages(session: ScriptedSession, tools: dict[str, str], stamp: bool) -> list[dict]:
    """Anthropic-style messages as Cline and Roo Code store them (``api_conversation_history.json``)."""
    messages: list[dict] = []
    for e, exchange in enumerate(session.exchanges):
        user = {"role": "user", "content": [{"type": "text", "text": f"<task>\n{exchange.prompt}\n</task>"},
                                            {"type": "text", "text": "<environment_details>\n# Current Working "
                                             f"Directory ({session.cwd})\n</environment_details>"}]}
        messages.append(user | ({"ts": int(exchange.started * 1000)} if stamp else {}))
        for s, (offset, step) in enumerate(_steps(exchange)):
            text = (f"<thinking>\n{step.thinking}\n</thinking>\n\n" if step.thinking else "") + step.text
            content = [{"type": "text", "text": text}]
            content += [{"type": "tool_use", "id": c.id, "name": tools[c.kind], "input": c.args} for c in step.calls]
            message = {"role": "assistant", "id": f"msg_{e}_{s}", "content": content}
            messages.append(message | ({"ts": int(exchange.at(offset) * 1000)} if stamp else {}))
            if step.calls:
                results = {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": c.result, "is_error": c.is_error}
                    for c in step.calls]}
                messages.append(results | ({"ts": int(exchange.at(offset + 5) * 1000)} if stamp else {}))
    return messages


def _ui_messages(session: ScriptedSession) -> list[dict]:
    return [{"ts": int(exchange.started * 1000), "type": "say", "say": "task" if not e else "user_feedback",
             "text": exchange.prompt[:200]} for e, exchange in enumerate(session.exchanges)]


def write_cline(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/data/tasks/<ms id>/api_conversation_history.json`` (+ ui_messages,
    task_metadata) and ``data/state/taskHistory.json``."""
    history = []
    for number, session in enumerate(sessions):
        task_id = str(int(session.exchanges[0].started * 1000) + number)
        folder = root / "data" / "tasks" / task_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "api_conversation_history.json").write_text(json.dumps(_anthropic_messages(session, _CLINE_TOOLS, True)))
        (folder / "ui_messages.json").write_text(json.dumps(_ui_messages(session)))
        (folder / "task_metadata.json").write_text(json.dumps({"files_in_context": [], "model_usage": [],
                                                                "environment_history": []}))
        history.append({"id": task_id, "ts": int(session.exchanges[-1].started * 1000),
                        "task": session.exchanges[0].prompt[:100], "tokensIn": 1, "tokensOut": 1, "totalCost": 0,
                        "cwdOnTaskInitialization": session.cwd})
    (root / "data" / "state").mkdir(parents=True, exist_ok=True)
    (root / "data" / "state" / "taskHistory.json").write_text(json.dumps(history))
    return root


def write_roo(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/tasks/<uuid>/api_conversation_history.json`` (+ history_item,
    ui_messages), tab-indented as Roo Code writes them."""
    for number, session in enumerate(sessions):
        folder = root / "tasks" / session.id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "api_conversation_history.json").write_text(
            json.dumps(_anthropic_messages(session, _CLINE_TOOLS, True), indent="\t"))
        (folder / "ui_messages.json").write_text(json.dumps(_ui_messages(session), indent="\t"))
        (folder / "history_item.json").write_text(json.dumps({
            "id": session.id, "number": number + 1, "ts": int(session.exchanges[-1].started * 1000),
            "task": session.exchanges[0].prompt[:100], "tokensIn": 1, "tokensOut": 1, "totalCost": 0,
            "workspace": session.cwd, "mode": "code", "status": "completed"}, indent="\t"))
    return root


_AMP_TOOLS = {"shell": "Bash", "read": "Read", "edit": "edit_file", "write": "create_file", "search": "Grep"}


def write_amp(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/threads/T-<uuid>.json``: one thread document, rewritten whole each turn."""
    for session in sessions:
        messages: list[dict] = []
        for exchange in session.exchanges:
            messages.append({"role": "user", "messageId": len(messages), "content": [
                {"type": "text", "text": exchange.prompt}], "meta": {"sentAt": int(exchange.started * 1000)}})
            for offset, step in _steps(exchange):
                content = ([{"type": "thinking", "thinking": step.thinking, "signature": "sig"}]
                           if step.thinking else []) + [{"type": "text", "text": step.text}]
                content += [{"type": "tool_use", "id": c.id, "name": _AMP_TOOLS[c.kind], "input": c.args,
                             "complete": True} for c in step.calls]
                messages.append({"role": "assistant", "messageId": len(messages), "content": content,
                                 "state": {"type": "complete", "stopReason": "tool_use" if step.calls else "end_turn"},
                                 "usage": {"model": "claude-sonnet-4-5", "inputTokens": 900, "outputTokens": 120,
                                           "timestamp": _iso(exchange.at(offset))}})
                if step.calls:
                    messages.append({"role": "user", "messageId": len(messages), "content": [
                        {"type": "tool_result", "toolUseID": c.id,
                         "run": {"status": "error", "error": {"message": c.result}} if c.is_error else
                         {"status": "done", "result": {"output": c.result, "exitCode": 0}}} for c in step.calls],
                        "meta": {"sentAt": int(exchange.at(offset + 5) * 1000)}})
        document = {"v": len(messages), "id": f"T-{session.id}", "created": int(session.exchanges[0].started * 1000),
                    "title": session.exchanges[0].prompt[:40], "agentMode": "smart",
                    "env": {"initial": {"trees": [{"displayName": "app", "uri": f"file://{session.cwd}"}]}},
                    "messages": messages}
        (root / "threads").mkdir(parents=True, exist_ok=True)
        (root / "threads" / f"T-{session.id}.json").write_text(json.dumps(document, indent=2))
    return root


def write_codebuff(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/projects/<project>/chats/<chat id>/chat-messages.json``: the CLI's
    ChatMessage list, each answer's steps as text, reasoning and tool blocks."""
    tools = {"shell": "run_terminal_command", "read": "read_files", "edit": "str_replace", "write": "write_file",
             "search": "code_search"}
    for session in sessions:
        started = session.exchanges[0].started
        chat = _iso(started).replace(":", "-")
        messages = []
        for e, exchange in enumerate(session.exchanges):
            at = int(exchange.started * 1000)
            messages.append({"id": f"user-{at}", "variant": "user", "content": exchange.prompt, "timestamp": "9:00 AM"})
            blocks = []
            for _, step in _steps(exchange):
                if step.thinking:
                    blocks.append({"type": "text", "content": step.thinking, "textType": "reasoning"})
                blocks.append({"type": "text", "content": step.text})
                blocks += [{"type": "tool", "toolCallId": c.id, "toolName": tools[c.kind],
                            "input": {"paths": [c.args["path"]]} if c.kind == "read" else c.args,
                            "output": c.result} for c in step.calls]
            messages.append({"id": f"ai-{at + 1000}-{e:x}", "variant": "ai", "content": "", "blocks": blocks,
                             "timestamp": "9:00 AM", "isComplete": True})
        path = root / "projects" / Path(session.cwd).name / "chats" / chat / "chat-messages.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(messages, indent=2))
    return root


# ---- Markdown ----------------------------------------------------------------------------------

def write_aider(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/<project>/.aider.chat.history.md``: each launch a ``# aider chat started
    at`` header, ``####`` prompts and typed commands, replies with SEARCH/REPLACE edits,
    ``>`` notices (a command's output is not logged, only its line count)."""
    by_project: dict[str, list[str]] = {}
    for session in sessions:
        lines = [f"\n# aider chat started at {datetime.fromtimestamp(session.exchanges[0].started, timezone.utc):%Y-%m-%d %H:%M:%S}\n",
                 "> Aider v0.86.1  ", "> Main model: anthropic/claude-sonnet-4-5 with diff edit format  ",
                 "> Git repo: .git with 12 files  ", ""]
        for exchange in session.exchanges:
            lines += [f"#### {line}  " for line in exchange.prompt.split("\n")] + [""]
            for _, step in _steps(exchange):
                lines += [step.text, ""]
                for c in step.calls:
                    if c.kind in ("edit", "write"):
                        lines += [c.args["path"], "```python", "<<<<<<< SEARCH", c.args.get("old", ""), "=======",
                                  c.args.get("new", c.args.get("content", "")), ">>>>>>> REPLACE", "```", "",
                                  f"> Applied edit to {c.args['path']}  "]
                    elif c.kind == "read":
                        lines += [f"#### /add {c.args['path']}  ", f"> Added {c.args['path']} to the chat  ", ""]
                    else:  # Aider logs a command, not its output
                        lines += [f"#### !{c.args.get('command', 'rg ' + c.args.get('pattern', ''))}  ",
                                  "> Add 0.2k tokens of command output to the chat? (Y)es/(N)o [Yes]: y  ",
                                  f"> Added {c.result.count(chr(10)) + 1} lines of output to the chat.  ", ""]
            lines += ["> Tokens: 2.1k sent, 180 received. Cost: $0.0093 message, $0.0093 session.  ", ""]
        by_project.setdefault(session.cwd, []).append("\n".join(lines))
    for cwd, launches in by_project.items():
        path = root / Path(cwd).name / ".aider.chat.history.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(launches), encoding="utf-8")
    return root


# ---- claude, codex, pi: copies of the real transcripts ------------------------------------------

def _write_real(kind: str):
    def write(root: Path, target_bytes: int) -> Path:
        make_history(root, target_bytes, only=kind)
        return {"claude": root / ".claude" / "projects", "pi": root / ".pi" / "agent" / "sessions"}[kind]
    return write


SCRIPTED_WRITERS = {
    "codex": write_codex, "gemini": write_gemini, "qwen": write_qwen, "copilot": write_copilot, "cursor": write_cursor,
    "cursor-ide": write_cursor_ide, "kiro": write_kiro, "kiro-db": write_kiro_db, "cline": write_cline, "roo": write_roo,
    "amp": write_amp, "aider": write_aider, "goose": write_goose, "crush": write_crush, "opencode": write_opencode,
    "hermes": write_hermes, "parquet": write_parquet, "forge": write_forge, "openclaw": write_openclaw,
    "codebuff": write_codebuff, "grok": write_grok, **MORE_WRITERS, **CLI_WRITERS,
}
REAL_COPIES = ("claude", "pi")
FORMATS = (*REAL_COPIES, *SCRIPTED_WRITERS)


def agent_of_format(name: str) -> str:
    """The agent whose parser reads a format (``cursor-ide`` is Cursor's IDE store,
    ``kiro-db`` Kiro CLI 2.x's SQLite store)."""
    return name.split("-")[0]


def make_agent_history(name: str, root: Path, target_bytes: int, seed: int = 0) -> Path:
    """A history of about ``target_bytes`` in format ``name`` (one of FORMATS) under
    ``root``; returns the path to discover it from."""
    if name in REAL_COPIES:
        return _write_real(name)(root, target_bytes)
    rng = random.Random(f"{name}-{seed}")
    sessions, content = [], 0
    while content < target_bytes * 0.8:  # the formats add 20-60 % of structure around the content
        sessions.append(scripted_session(rng, len(sessions)))
        content += sessions[-1].size()
    return SCRIPTED_WRITERS[name](root, sessions)


def memory_of_chunks(work: Path, name: str, target: int, builder: list[str]) -> Path:
    """FUNES_HOME of a memory of at least ``target`` chunks of the synthetic history,
    built once by running ``builder`` (a script and its arguments) with HOME and
    FUNES_HOME pointing at it, then reused."""
    funes_home = work / f"{name}-{target // 1000}k"
    if (funes_home / "memory" / "chunks.lance").exists():
        return funes_home
    home = work / f"{name}-{target // 1000}k-home"
    if not home.exists():
        make_history_of_chunks(home, target)
    env = {**os.environ, "HOME": str(home), "FUNES_HOME": str(funes_home), "FUNES_NO_DAGSTER_RECORD": "1"}
    subprocess.run([sys.executable, *builder], env=env, check=True)
    return funes_home
