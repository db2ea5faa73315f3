"""The command agents run after every turn: hand the turn to a worker, return at once.

    <python> -m funes.hook <agent> [--memory SPEC] [--publish MEMORY]

It reads the agent's JSON payload from stdin (all of it: an unread pipe can block
or kill the agent), keeps the few fields that name the session, spools them under
``$FUNES_HOME/spool/``, starts ``funes.cli.hook_worker`` detached (a new session,
no inherited descriptors, stdio away from the agent's pipes) unless one is already
at work or waiting for the next turn, and exits 0.

It never prints on stdout (Claude and Codex read decisions there), never exits
non-zero, and fails open: an error is logged to ``$FUNES_HOME/logs/hooks.log`` and
the agent carries on.  Standard library only, so it returns in tens of
milliseconds.  ``--memory`` names where to index (default: the local memory);
``--publish`` makes the request a session-boundary publish to that memory.

Processes the worker starts carry ``FUNES_HOOK=1``; a hook fired inside one
returns at once, so nothing a hook starts can set off another hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

from funes.config import funes_home, logs_dir

MARKER_ENV = "FUNES_HOOK"
WORKER_MODULE = "funes.cli.hook_worker"
LOG_NAME = "hooks.log"
WORKER_LOCK = ".worker.lock"  # held by the one worker draining the spool
# What the worker needs from a payload to find the session (Hermes: session_id and
# profile; the others: transcript_path).  The rest (Hermes sends the whole
# conversation) is dropped.
KEPT_FIELDS = ("transcript_path", "session_id", "cwd", "hook_event_name", "profile")


def spool_dir():
    return funes_home() / "spool"


def request_from(argv: list[str], payload: bytes) -> dict:
    agent, options = argv[0], dict(zip(argv[1::2], argv[2::2], strict=False))
    try:
        fields = json.loads(payload) if payload.strip() else {}
    except ValueError:
        fields = {}
    if not isinstance(fields, dict):
        fields = {}
    request = {name: fields[name] for name in KEPT_FIELDS if isinstance(fields.get(name), str)}
    request.update(agent=agent, memory=options.get("--memory"), publish=options.get("--publish"),
                   received=time.time())
    if os.environ.get("HERMES_HOME"):  # Hermes runs hooks with the firing profile's home
        request["hermes_home"] = os.environ["HERMES_HOME"]
    return request


def spool(request: dict) -> None:
    folder = spool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    temporary = folder / f".{name}.tmp"  # the worker reads *.json only: never a half-written file
    temporary.write_text(json.dumps(request))
    os.replace(temporary, folder / name)


def worker_waiting(folder) -> bool:
    """Whether a worker holds the spool (indexing, or waiting for the next turn with
    its models loaded): it takes this request, so no other is started.  The worker
    looks at the spool again after letting the lock go, so none is missed."""
    try:
        import fcntl
    except ImportError:  # no flock here: always start one; a surplus worker exits at once
        return False
    with open(folder / WORKER_LOCK, "a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


def start_worker() -> None:
    logs = logs_dir()
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / LOG_NAME, "ab") as log:
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True, start_new_session=True,
            cwd=funes_home(), env={**os.environ, MARKER_ENV: "1"},
        )


def log_failure(argv: list[str], error: BaseException) -> None:
    try:
        logs = logs_dir()
        logs.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with open(logs / LOG_NAME, "a", encoding="utf-8") as log:
            log.write(f"{stamp} hook {' '.join(argv)} failed open: {error!r}\n")
    except Exception:  # noqa: BLE001, S110 - nowhere left to report; the agent must go on
        pass


def main(argv: list[str]) -> int:
    try:
        payload = sys.stdin.buffer.read()
    except Exception:  # noqa: BLE001 - a closed or broken stdin is no payload
        payload = b""
    if os.environ.get(MARKER_ENV) or not argv:
        return 0
    try:
        spool(request_from(argv, payload))  # before looking for a worker: see worker_waiting
        if not worker_waiting(spool_dir()):
            start_worker()
    except Exception as error:  # noqa: BLE001 - fail open, whatever happens
        log_failure(argv, error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
