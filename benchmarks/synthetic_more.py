"""Synthetic histories in the on-disk shapes of Continue, Kilo Code, Zed's agent panel,
Factory Droid and OpenHands (kept apart from synthetic.py, which holds the other
formats; scripted.py makes the sessions these writers render).  Each writer takes a
folder and the scripted sessions and returns the path to discover from; the
shapes follow each agent's FORMAT.md and test fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from scripted import Call, ScriptedSession, _fixture_module, _iso, _jsonl, _steps
from synthetic_stores import write_opencode


def write_kilo(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/kilo.db``: the Kilo CLI's store, OpenCode's tables under Kilo's name."""
    db = write_opencode(root, sessions)
    return db.rename(db.with_name("kilo.db"))


_CONTINUE_TOOLS = {"shell": "Bash", "read": "Read", "edit": "Edit", "write": "Write", "search": "Search"}


def _continue_args(call: Call) -> dict:
    args = dict(call.args)
    if "path" in args and call.kind != "search":
        args["file_path" if call.kind == "edit" else "filepath"] = args.pop("path")
    return args


def write_continue(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions/<id>.json``: the CLI's shape (results in each call's state,
    reasoning on the assistant item), pretty-printed as Continue writes it, and the
    ``sessions.json`` list."""
    folder = root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    listing = []
    for session in sessions:
        history = []
        for exchange in session.exchanges:
            history.append({"message": {"role": "user", "content": exchange.prompt}, "contextItems": []})
            for offset, step in _steps(exchange):
                calls = [{"id": c.id, "type": "function", "function": {
                    "name": _CONTINUE_TOOLS[c.kind], "arguments": json.dumps(_continue_args(c))}} for c in step.calls]
                item = {"message": {"role": "assistant", "content": step.text, **({"toolCalls": calls} if calls else {})},
                        "contextItems": []}
                if step.thinking:
                    start = int(exchange.at(offset) * 1000)
                    item["reasoning"] = {"active": False, "text": step.thinking, "startAt": start, "endAt": start + 900}
                if calls:
                    item["toolCallStates"] = [{
                        "toolCallId": c.id, "toolCall": call, "status": "errored" if c.is_error else "done",
                        "parsedArgs": _continue_args(c),
                        "output": [{"content": c.result, "name": "Tool Result", "description": "Tool execution result"}],
                    } for c, call in zip(step.calls, calls)]
                history.append(item)
        document = {"sessionId": session.id, "title": session.exchanges[0].prompt[:40],
                    "workspaceDirectory": session.cwd, "history": history}
        (folder / f"{session.id}.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
        listing.append({"sessionId": session.id, "title": document["title"],
                        "dateCreated": str(int(session.exchanges[0].started * 1000)),
                        "workspaceDirectory": session.cwd, "messageCount": len(history)})
    (folder / "sessions.json").write_text(json.dumps(listing, indent=2), encoding="utf-8")
    return folder


_DROID_TOOLS = {"shell": "Execute", "read": "Read", "edit": "Edit", "write": "Create", "search": "Grep"}


def _droid_args(call: Call) -> dict:
    args = dict(call.args)
    if "path" in args and call.kind != "search":
        args["file_path"] = args.pop("path")
    if call.kind == "edit":
        args["old_str"], args["new_str"] = args.pop("old"), args.pop("new")
    return args


def write_droid(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions/<encoded cwd>/<id>.jsonl``: a ``session_start`` record, then
    one ``message`` record per prompt, reply step and batch of tool results
    (Anthropic content parts), the prompt behind a system reminder as Droid sends it."""
    folder = root / "sessions"
    for session in sessions:
        records: list[dict] = [{"type": "session_start", "id": session.id, "title": session.exchanges[0].prompt[:40],
                                "sessionTitle": "New Session", "owner": "dev", "version": 2, "cwd": session.cwd}]
        for exchange in session.exchanges:
            reminder = f"<system-reminder>\nThe working directory is {session.cwd}.\n</system-reminder>\n"
            records.append({"type": "message", "id": f"{session.id}-{len(records)}", "timestamp": _iso(
                exchange.started), "message": {"role": "user", "content": [
                    {"type": "text", "text": reminder + exchange.prompt}]}})
            for offset, step in _steps(exchange):
                parts = [{"type": "thinking", "thinking": step.thinking, "signature": "sig"}] if step.thinking else []
                parts.append({"type": "text", "text": step.text})
                parts += [{"type": "tool_use", "id": c.id, "name": _DROID_TOOLS[c.kind], "input": _droid_args(c)}
                          for c in step.calls]
                records.append({"type": "message", "id": f"{session.id}-{len(records)}", "parentId":
                                records[-1]["id"], "timestamp": _iso(exchange.at(offset)),
                                "message": {"role": "assistant", "content": parts}})
                if step.calls:
                    records.append({"type": "message", "id": f"{session.id}-{len(records)}", "parentId":
                                    records[-1]["id"], "timestamp": _iso(exchange.at(offset + 5)),
                                    "message": {"role": "user", "content": [
                                        {"type": "tool_result", "tool_use_id": c.id, "content": c.result,
                                         **({"is_error": True} if c.is_error else {})} for c in step.calls]}})
        _jsonl(folder / session.cwd.replace("/", "-") / f"{session.id}.jsonl", records)
    return folder


_ZED_TOOLS = {"shell": "terminal", "read": "read_file", "edit": "edit_file", "write": "write_file", "search": "grep"}


def write_zed(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/threads/threads.db``: one row per thread, the thread JSON
    zstd-compressed as Zed saves it (User and Agent messages, results by call id)."""
    import sqlite3

    import zstandard

    zed = _fixture_module("agents/zed/make_zed_db.py")
    db = root / "threads" / "threads.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(zed.SCHEMA)
    compressor = zstandard.ZstdCompressor(level=3)

    def compress(data: bytes) -> bytes:
        # zstd::encode_all streams: its frames carry no content size, which decides how a reader can decompress
        stream = compressor.compressobj()
        return stream.compress(data) + stream.flush()

    with conn:
        for session in sessions:
            messages: list = []
            for exchange in session.exchanges:
                messages.append(zed.user(exchange.prompt))
                for _, step in _steps(exchange):
                    content = [{"Thinking": {"text": step.thinking, "signature": None}}] if step.thinking else []
                    content.append({"Text": step.text})
                    content += [zed.tool_use(c.id, _ZED_TOOLS[c.kind], c.args) for c in step.calls]
                    messages.append(zed.agent(content, {c.id: zed.result(c.id, _ZED_TOOLS[c.kind], c.result,
                                                                          c.is_error) for c in step.calls}))
            started = _iso(session.exchanges[0].started)
            thread = {"title": session.exchanges[0].prompt[:40], "messages": messages, "updated_at": started,
                      "version": "0.3.0"}
            conn.execute("INSERT INTO threads VALUES (?, ?, ?, 'zstd', ?, NULL, ?, '0', ?)",
                         (session.id, thread["title"], started, compress(json.dumps(thread).encode()),
                          session.cwd, started))
    conn.close()
    return db


WRITERS = {"kilo": write_kilo, "continuedev": write_continue, "droid": write_droid, "zed": write_zed}
