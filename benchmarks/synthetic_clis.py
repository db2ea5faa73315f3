"""Synthetic histories in the on-disk shapes of Kimi CLI, Mistral Vibe and Auggie (kept
apart from synthetic.py, which holds the other formats and the scripted sessions these
writers render).  Each writer takes a folder and the scripted sessions and returns the
path to discover from; the shapes follow each agent's FORMAT.md and test fixtures."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from synthetic import ScriptedSession, _jsonl, _steps

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


WRITERS = {"kimi": write_kimi}
