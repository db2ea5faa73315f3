"""Synthetic histories in the shapes of the agents that keep their sessions in a
database: SQLite stores (Goose, Crush, Forge, OpenClaw, Grok, OpenCode, Hermes,
Cursor's IDE, Kiro CLI 2.x) and Parquet (Hugging Face agent-traces).  Each writer
takes a folder and the scripted sessions (scripted.py) and returns the path to
discover from."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scripted import ScriptedSession, _fixture_module, _iso, _steps


def _store(db: Path, fixture: str) -> tuple[Any, sqlite3.Connection]:
    """The fixture builder ``fixture`` (under tests/fixtures, whose schema the agent's
    parser is tested with) and a connection to a new database at ``db`` made with its
    ``SCHEMA``."""
    builder = _fixture_module(fixture)
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.executescript(builder.SCHEMA)
    return builder, conn


# ---- SQLite stores -----------------------------------------------------------------------------

def write_goose(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/sessions.db``: Goose's sessions and messages tables (content_json per message)."""
    db = root / "sessions.db"
    goose, conn = _store(db, "agents/goose/make_goose_db.py")
    tools = {"shell": "developer__shell", "read": "developer__text_editor", "edit": "developer__text_editor",
             "write": "developer__text_editor", "search": "developer__shell"}
    with conn:
        for session in sessions:
            conn.execute("INSERT INTO sessions (id, name, session_type, working_dir) VALUES (?, ?, 'user', ?)",
                         (session.id, session.exchanges[0].prompt[:40], session.cwd))
            rows = []
            for exchange in session.exchanges:
                rows.append(("user", [goose.text(exchange.prompt)], exchange.started))
                for offset, step in _steps(exchange):
                    content = ([{"type": "thinking", "thinking": step.thinking, "signature": "sig"}]
                               if step.thinking else []) + [goose.text(step.text)]
                    content += [goose.request(c.id, tools[c.kind], c.args) for c in step.calls]
                    rows.append(("assistant", content, exchange.at(offset)))
                    if step.calls:
                        rows.append(("user", [goose.response(c.id, {"content": [goose.text(c.result)],
                                                                    "isError": c.is_error}) for c in step.calls],
                                     exchange.at(offset + 5)))
            conn.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) "
                             "VALUES (?, ?, ?, ?, ?)",
                             [(session.id, role, json.dumps(content), int(at), json.dumps(goose.VISIBLE))
                              for role, content, at in rows])
    conn.close()
    return db


def write_crush(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/crush.db``: Crush's sessions and messages tables (a JSON parts list per message)."""
    db = root / "crush.db"
    crush, conn = _store(db, "agents/crush/make_crush_db.py")
    tools = {"shell": "bash", "read": "view", "edit": "edit", "write": "write", "search": "grep"}
    with conn:
        for session in sessions:
            conn.execute("INSERT INTO sessions (id, title, updated_at, created_at) VALUES (?, ?, ?, ?)",
                         (session.id, session.exchanges[0].prompt[:40], int(session.exchanges[-1].started),
                          int(session.exchanges[0].started)))
            rows = []
            for e, exchange in enumerate(session.exchanges):
                rows.append((f"{session.id}-u{e}", "user", [crush.part("text", text=exchange.prompt)],
                             exchange.started, None))
                for s, (offset, step) in enumerate(_steps(exchange)):
                    parts = ([crush.part("reasoning", thinking=step.thinking, signature="",
                                         started_at=int(exchange.at(offset)))] if step.thinking else [])
                    parts += [crush.part("text", text=step.text)]
                    parts += [crush.call(c.id, tools[c.kind], c.args) for c in step.calls]
                    parts.append(crush.part("finish", reason="tool_use" if step.calls else "end_turn",
                                            time=int(exchange.at(offset + 1))))
                    rows.append((f"{session.id}-a{e}-{s}", "assistant", parts, exchange.at(offset),
                                 int(exchange.at(offset + 1))))
                    if step.calls:
                        rows.append((f"{session.id}-t{e}-{s}", "tool",
                                     [crush.result(c.id, tools[c.kind], c.result, c.is_error) for c in step.calls],
                                     exchange.at(offset + 5), None))
            conn.executemany("INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at, "
                             "finished_at, provider, is_summary_message) VALUES (?, ?, ?, ?, 'm1', ?, ?, ?, 'fake', 0)",
                             [(ident, session.id, role, json.dumps(parts), int(at), int(at), finished)
                              for ident, role, parts, at, finished in rows])
    conn.close()
    return db



def write_forge(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/.forge.db``: Forge's conversations table, one JSON context (the whole
    message list, rewritten on every turn) per conversation."""
    db = root / ".forge.db"
    forge, conn = _store(db, "agents/forge/make_forge_db.py")
    tools = {"shell": "shell", "read": "read", "edit": "patch", "write": "write", "search": "fs_search"}
    with conn:
        for session in sessions:
            messages = [forge.system_prompt(session.cwd)]
            for exchange in session.exchanges:
                messages.append(forge.text("User", f"<task>{exchange.prompt}</task>",
                                           raw_content={"Text": exchange.prompt}))
                for _, step in _steps(exchange):
                    reasoning = [{"text": step.thinking}] if step.thinking else None
                    messages.append(forge.text("Assistant", step.text, reasoning_details=reasoning, tool_calls=[
                        forge.call(tools[c.kind], c.id, c.args) for c in step.calls] or None))
                    messages += [forge.tool(tools[c.kind], c.id, {"text": c.result}, is_error=c.is_error)
                                 for c in step.calls]
            started = datetime.fromtimestamp(session.exchanges[0].started, timezone.utc)
            conn.execute("INSERT INTO conversations (conversation_id, title, workspace_id, context, created_at, "
                         "updated_at) VALUES (?, ?, 1, ?, ?, ?)",
                         (session.id, session.exchanges[0].prompt[:40], json.dumps({"messages": messages}),
                          started.strftime("%Y-%m-%d %H:%M:%S.%f"), started.strftime("%Y-%m-%d %H:%M:%S.%f")))
    conn.close()
    return db


def write_openclaw(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/agents/main/agent/openclaw-agent.sqlite``: OpenClaw's session windows and
    transcript events (pi-format entries), events of 1 KiB and more as zstd frames."""
    import zstandard

    db = root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    openclaw, conn = _store(db, "agents/openclaw/make_openclaw_state.py")
    compress = zstandard.ZstdCompressor(level=1, write_checksum=True)
    tools = {"shell": "exec", "read": "read", "edit": "edit", "write": "write", "search": "grep"}
    with conn:
        for session in sessions:
            events, parent = [openclaw.header(session.id, session.cwd)], None
            for exchange in session.exchanges:
                entries = [openclaw.user(exchange.prompt)]
                for _, step in _steps(exchange):
                    parts = [{"type": "thinking", "thinking": step.thinking}] if step.thinking else []
                    parts += [{"type": "text", "text": step.text}]
                    entries.append(openclaw.assistant(*parts, *(openclaw.call(c.id, tools[c.kind], c.args)
                                                                for c in step.calls)))
                    entries += [openclaw.result(c.id, tools[c.kind], c.result, is_error=c.is_error)
                                for c in step.calls]
                for entry in entries:
                    entry_id = f"{len(events):08x}"
                    events.append({"type": "message", "id": entry_id, "parentId": parent,
                                   "timestamp": _iso(exchange.started), "message": entry})
                    parent = entry_id
            key = f"agent:main:{session.id}"
            conn.execute("INSERT INTO session_nodes (session_key, current_session_id, entry_json, updated_at) "
                         "VALUES (?, ?, '{}', 0)", (key, session.id))
            conn.execute("INSERT INTO session_windows (session_id, session_key, created_at, updated_at) "
                         "VALUES (?, ?, 0, 0)", (session.id, key))
            rows = []
            for seq, event in enumerate(events, 1):
                text = json.dumps(event)
                big = len(text) >= 1024
                rows.append((session.id, seq, None if big else text, compress.compress(text.encode()) if big else None))
            conn.executemany("INSERT INTO transcript_events (session_id, seq, event_json, event_zstd, created_at) "
                             "VALUES (?, ?, ?, ?, 0)", rows)
    conn.close()
    return root


def write_grok(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/grok.db``: Grok CLI's sessions and messages (one AI SDK ModelMessage per row)."""
    db = root / "grok.db"
    grok, conn = _store(db, "agents/grok/make_grok_db.py")
    tools = {"shell": "bash", "read": "read_file", "edit": "edit_file", "write": "write_file", "search": "grep"}
    with conn:
        conn.execute("INSERT INTO workspaces VALUES ('w', 'w', '/', NULL, 'w', '')")
        for session in sessions:
            conn.execute("INSERT INTO sessions (id, workspace_id, model, mode, cwd_at_start, cwd_last, status, "
                         "created_at, updated_at) VALUES (?, 'w', 'grok-4', 'agent', ?, ?, 'active', '', '')",
                         (session.id, session.cwd, session.cwd))
            messages = []
            for exchange in session.exchanges:
                messages.append(({"role": "user", "content": [{"type": "text", "text": exchange.prompt}]},
                                 exchange.started))
                for offset, step in _steps(exchange):
                    parts = [{"type": "reasoning", "text": step.thinking}] if step.thinking else []
                    parts += [{"type": "text", "text": step.text}]
                    parts += [grok.call(c.id, tools[c.kind], c.args) for c in step.calls]
                    messages.append(({"role": "assistant", "content": parts}, exchange.at(offset)))
                    messages += [(grok.result(c.id, tools[c.kind], {"type": "error-text" if c.is_error else "text",
                                                                    "value": c.result}), exchange.at(offset + 5))
                                 for c in step.calls]
            conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?)",
                             [(session.id, seq, message["role"], json.dumps(message), _iso(at))
                              for seq, (message, at) in enumerate(messages, 1)])
    conn.close()
    return db

def write_opencode(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/opencode.db``: OpenCode's session, message and part tables (one JSON
    document per message and per part, times in ms)."""
    db = root / "opencode.db"
    opencode, conn = _store(db, "agents/opencode/make_opencode_db.py")
    tools = {"shell": "bash", "read": "read", "edit": "edit", "write": "write", "search": "grep"}
    with conn:
        conn.execute("INSERT INTO project VALUES ('p1', '/home/dev', 'git', NULL, NULL, NULL, NULL, 0, 0, NULL, '[]', NULL)")
        for session in sessions:
            sid = f"ses_{session.id.replace('-', '')}"
            conn.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, "
                         "time_updated) VALUES (?, 'p1', 'slug', ?, ?, '1.18.33', ?, ?)",
                         (sid, session.cwd, session.exchanges[0].prompt[:40], int(session.exchanges[0].started * 1000),
                          int(session.exchanges[-1].started * 1000)))
            messages, parts = [], []
            for e, exchange in enumerate(session.exchanges):
                user_id = f"msg_{sid[4:16]}{e:04d}u"
                created = int(exchange.started * 1000)
                messages.append((user_id, sid, created, created, json.dumps(
                    {"role": "user", "time": {"created": created}, "agent": "build",
                     "model": {"providerID": "fake", "modelID": "m1"}})))
                parts.append((f"prt_{user_id[4:]}_00", user_id, sid, created, created,
                              json.dumps(opencode._text(exchange.prompt))))
                for s, (offset, step) in enumerate(_steps(exchange)):
                    ident = f"msg_{sid[4:16]}{e:04d}a{s:02d}"
                    start = int(exchange.at(offset) * 1000)
                    data = opencode._assistant(user_id, start, start + 4000,
                                               finish="tool-calls" if step.calls else "stop")
                    data["path"] = {"cwd": session.cwd, "root": session.cwd}
                    messages.append((ident, sid, start, start, json.dumps(data)))
                    body = [{"type": "step-start"}]
                    if step.thinking:
                        body.append({"type": "reasoning", "text": step.thinking,
                                     "time": {"start": start, "end": start + 100}})
                    body.append(opencode._text(step.text, start + 100, start + 200))
                    for c in step.calls:
                        state = {"error": c.result} if c.is_error else {"output": c.result, "title": c.kind,
                                                                         "metadata": {"truncated": False}}
                        body.append(opencode._tool(tools[c.kind], c.id, "error" if c.is_error else "completed",
                                                   c.args, start + 300, **state))
                    body.append({"type": "step-finish", "reason": "tool-calls" if step.calls else "stop", "cost": 0})
                    parts += [(f"prt_{ident[4:]}_{i:02d}", ident, sid, start + i, start + i + 1, json.dumps(p))
                              for i, p in enumerate(body)]
            conn.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?)", messages)
            conn.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", parts)
    conn.close()
    return db


def write_hermes(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/state.db``: Hermes's sessions and messages tables (OpenAI-style rows:
    content, reasoning_content, tool_calls JSON, tool rows with tool_call_id)."""
    hermes = _fixture_module("make_hermes_db.py")
    db = root / "state.db"
    root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    hermes._create(conn, legacy=False)
    tools = {"shell": "terminal", "read": "read_file", "edit": "patch", "write": "write_file", "search": "search_files"}
    with conn:
        for session in sessions:
            hermes._insert(conn, "sessions", {"id": session.id, "source": "cli", "model": "hermes-4-405b",
                                              "started_at": session.exchanges[0].started, "cwd": session.cwd,
                                              "git_branch": "main", "title": session.exchanges[0].prompt[:40]})
            for exchange in session.exchanges:
                hermes._insert(conn, "messages", {"session_id": session.id, "role": "user", "content": exchange.prompt,
                                                  "timestamp": exchange.started, "active": 1})
                for offset, step in _steps(exchange):
                    row = {"session_id": session.id, "role": "assistant", "content": step.text,
                           "timestamp": exchange.at(offset), "active": 1,
                           "finish_reason": "tool_calls" if step.calls else "stop"}
                    if step.thinking:
                        row["reasoning_content"] = step.thinking
                    if step.calls:
                        row["tool_calls"] = json.dumps([{"id": c.id, "type": "function", "function": {
                            "name": tools[c.kind], "arguments": json.dumps(c.args)}} for c in step.calls])
                    hermes._insert(conn, "messages", row)
                    for c in step.calls:
                        hermes._insert(conn, "messages", {"session_id": session.id, "role": "tool", "content": c.result,
                                                          "tool_call_id": c.id, "tool_name": tools[c.kind],
                                                          "timestamp": exchange.at(offset + 5), "active": 1})
    conn.close()
    return db


def write_cursor_ide(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/globalStorage/state.vscdb``: Cursor's cursorDiskKV rows, one
    ``composerData:<id>`` header per conversation and one ``bubbleId:<id>:<bubble>``
    JSON per message (tool calls in ``toolFormerData``)."""
    db = root / "globalStorage" / "state.vscdb"
    cursor, conn = _store(db, "agents/cursor/make_cursor_vscdb.py")
    tools = {"shell": "run_terminal_cmd", "read": "read_file", "edit": "edit_file", "write": "edit_file",
             "search": "grep_search"}
    with conn:
        for session in sessions:
            bubbles = []
            for e, exchange in enumerate(session.exchanges):
                bubbles.append((f"u{e}", {"_v": 3, "type": 1, "bubbleId": f"u{e}", "text": exchange.prompt,
                                          "createdAt": _iso(exchange.started)}))
                for s, (offset, step) in enumerate(_steps(exchange)):
                    bubble = {"_v": 3, "type": 2, "bubbleId": f"a{e}-{s}", "text": step.text,
                              "createdAt": _iso(exchange.at(offset))}
                    if step.thinking:
                        bubble["thinking"] = {"text": step.thinking}
                    bubbles.append((bubble["bubbleId"], bubble))
                    for c in step.calls:  # one tool call per bubble, as Cursor stores them
                        ident = f"t{e}-{s}-{c.id}"
                        bubbles.append((ident, {"_v": 3, "type": 2, "bubbleId": ident, "text": "",
                                                "createdAt": _iso(exchange.at(offset + 5)),
                                                "toolFormerData": cursor.tool(tools[c.kind], c.args,
                                                                              {"output": c.result}, c.id)}))
            conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{session.id}", json.dumps({
                "_v": 10, "composerId": session.id, "name": session.exchanges[0].prompt[:40],
                "createdAt": int(session.exchanges[0].started * 1000),
                "lastUpdatedAt": int(session.exchanges[-1].started * 1000), "status": "completed",
                "fullConversationHeadersOnly": [{"bubbleId": b, "type": d["type"]} for b, d in bubbles],
                "conversationMap": {}})))
            conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)",
                             [(f"bubbleId:{session.id}:{b}", json.dumps(d)) for b, d in bubbles])
    conn.close()
    return db


def write_kiro_db(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/data.sqlite3``: Kiro CLI 2.x's ``conversations_v2`` rows, one JSON
    conversation state per session (history of user prompt / tool results and
    assistant ToolUse / Response entries), rewritten whole after each turn."""
    kiro = _fixture_module("make_kiro_db.py")
    tools = {"shell": "execute_bash", "read": "fs_read", "edit": "fs_write", "write": "fs_write", "search": "fs_read"}
    db = root / "data.sqlite3"
    root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("CREATE TABLE conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL, "
                     "value TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, "
                     "PRIMARY KEY (key, conversation_id))")
        for session in sessions:
            history, user = [], None
            for e, exchange in enumerate(session.exchanges):
                user = kiro.prompt(session.cwd, exchange.prompt, _iso(exchange.started))
                for s, (offset, step) in enumerate(_steps(exchange)):
                    message_id = f"m-{e}-{s}"
                    assistant = (kiro.tool_use(message_id, step.text, *[(c.id, tools[c.kind], c.args) for c in step.calls])
                                 if step.calls else kiro.response(message_id, step.text))
                    history.append({"user": user, "assistant": assistant,
                                    "request_metadata": kiro.meta(int(exchange.at(offset) * 1000))})
                    if step.calls:
                        user = kiro.results(session.cwd, _iso(exchange.at(offset + 5)), *[
                            (c.id, [{"Text": c.result}], "Error" if c.is_error else "Success") for c in step.calls])
            conn.execute("INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
                         (session.cwd, session.id, json.dumps(kiro.state(session.id, history)),
                          int(session.exchanges[0].started * 1000), int(session.exchanges[-1].started * 1000)))
    conn.close()
    return db


# ---- Parquet -----------------------------------------------------------------------------------

def write_parquet(root: Path, sessions: list[ScriptedSession]) -> Path:
    """``<root>/traces.parquet``: Hugging Face agent-traces rows, ``messages`` a list of
    JSON-encoded OpenAI-style chat messages per session."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tools = {"shell": "bash", "read": "read", "edit": "edit", "write": "write", "search": "grep"}
    ids, rows, sent = [], [], []
    for session in sessions:
        messages = []
        for exchange in session.exchanges:
            messages.append({"role": "user", "content": exchange.prompt})
            for _, step in _steps(exchange):
                message = {"role": "assistant", "content": step.text}
                if step.thinking:
                    message["reasoning_content"] = step.thinking
                if step.calls:
                    message["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                        "name": tools[c.kind], "arguments": json.dumps(c.args)}} for c in step.calls]
                messages.append(message)
                messages += [{"role": "tool", "tool_call_id": c.id, "content": c.result} for c in step.calls]
        ids.append(session.id)
        rows.append([json.dumps(m) for m in messages])
        sent.append(_iso(session.exchanges[0].started))
    root.mkdir(parents=True, exist_ok=True)
    path = root / "traces.parquet"
    pq.write_table(pa.table({"session_id": ids, "messages": rows, "sent_at": sent}), path, row_group_size=4)
    return path


