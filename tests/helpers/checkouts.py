"""Real git checkouts in a temporary folder, with commits dated where a test needs
them, and Claude Code sessions that ran in them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

# Git with no user or system configuration, an identity, and fixed dates when given.
_GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull, "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(folder: Path, *args: str, date: str | None = None) -> str:
    dated = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {}
    done = subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True,
                          env={**os.environ, **_GIT_ENV, **dated})
    return done.stdout


def commit_files(folder: Path, files: dict[str, str | None], message: str, date: str) -> None:
    """Write (or, for None, delete) ``files`` in the checkout and commit them at ``date``."""
    for name, text in files.items():
        path = folder / name
        if text is None:
            git(folder, "rm", "-q", name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            git(folder, "add", name)
    git(folder, "commit", "-q", "-m", message, date=date)


def new_checkout(folder: Path, files: dict[str, str], date: str = "2026-04-01T09:00:00Z") -> Path:
    """A repository at ``folder`` on ``main`` whose first commit holds ``files``."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    commit_files(folder, files, "first", date)
    return folder


def claude_session(home: Path, session_id: str, cwd: Path | str, said: str, edits: list[str], *,
                   branch: str = "main", minute: int = 0) -> Path:
    """A Claude Code session in ``cwd`` on ``branch`` (2026-05-01T10:MM): the user asks,
    the assistant says ``said`` and edits each path of ``edits`` (absolute, as Claude
    records them)."""
    def record(kind: str, uuid: str, parent: str | None, second: int, content) -> dict:
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": session_id, "cwd": str(cwd),
                "gitBranch": branch, "timestamp": f"2026-05-01T10:{minute:02d}:{second:02d}.000Z",
                "message": {"role": kind, "content": content}}

    calls = [{"type": "tool_use", "id": f"t{n}", "name": "Edit",
              "input": {"file_path": path, "old_string": "a", "new_string": "b"}} for n, path in enumerate(edits)]
    short = session_id[:8]
    records = [record("user", f"{short}-u1", None, 0, said.split(":")[0]),
               record("assistant", f"{short}-a1", f"{short}-u1", 1, [{"type": "text", "text": said}, *calls]),
               record("user", f"{short}-r1", f"{short}-a1", 2,
                      [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "The file has been updated."}
                       for n in range(len(edits))])]
    path = home / ".claude" / "projects" / str(cwd).replace("/", "-") / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
