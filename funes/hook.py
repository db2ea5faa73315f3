"""The command agents run after every turn: hand the turn to a worker, return at once.

    <python> -I -S <funes>/hook.py <agent> [--memory SPEC] [--publish MEMORY]

It reads the agent's JSON payload from stdin (all of it: an unread pipe can block
or kill the agent), keeps its short fields (which name the session) and the
variables that locate the agent's home, spools them under ``$FUNES_HOME/spool/``,
and exits 0.  If no worker holds the spool, the hook takes
its lock (``spool/.worker.lock``) and starts ``funes.cli.hook_worker`` detached (a
new session, stdio away from the agent's pipes) with the locked descriptor
inherited: the worker owns the spool from its first instruction, so the other
hooks of a burst see it held and start no second worker.  A worker looks at the
spool again after letting the lock go, so a turn spooled at any moment is handled.

It never prints on stdout (agents read hook decisions there), never exits
non-zero, and fails open: an error is logged to ``$FUNES_HOME/logs/hooks.log`` and
the agent carries on.  It costs the agent an interpreter start, so it is run as a
script with ``-I -S`` (no site-packages, no ``.pth`` files, no current directory on
the path: an agent's project cannot shadow a module it imports) and imports
nothing beyond ``_json``, ``fcntl`` and ``errno`` (built in) unless it starts the worker: not
``funes.config`` (which brings in pathlib), hence :func:`funes_home` below, and not
``json``, whose decoder imports ``re`` (and ``enum``, ``functools``, ``collections``):
that is 14 ms of every hook's ~40, so the payload is read and the request written
with ``json``'s own C scanner and encoder (:func:`_loads`, :func:`_dumps`).
``--memory`` names where to index (default: the local memory); ``--publish`` makes
the request a session-boundary publish to that memory.

Processes the worker starts carry ``FUNES_HOOK=1``; a hook fired inside one
returns at once, so nothing a hook starts can set off another hook.
"""

from __future__ import annotations

import errno
import _json
import fcntl
import os
import sys
import time

MARKER_ENV = "FUNES_HOOK"
LOCK_FD_ENV = "FUNES_WORKER_LOCK_FD"  # the spool lock the hook hands its worker
WORKER_MODULE = "funes.cli.hook_worker"
LOG_NAME = "hooks.log"
WORKER_LOCK = ".worker.lock"  # held by the one worker draining the spool
# What the worker needs from a payload to find the session: its short fields
# (strings, numbers, short lists of strings), since each agent names a session
# its own way (a transcript path, a session id and profile, a workspace list).
# Long and nested ones are dropped: some agents send the whole conversation.
FIELD_MAX_CHARS = 4096
LIST_MAX_ITEMS = 32
# Environment variables that locate an agent's home, as the agent ran the hook
# (an agent with profiles may point it at the profile that fired the hook); kept for the worker,
# which may serve hooks from several homes.
HOME_VARIABLE_SUFFIXES = ("_HOME", "_DIR")


def funes_home() -> str:
    """:func:`funes.config.funes_home` as a string, without importing pathlib
    (tests/cli/test_hooks.py checks that the two agree)."""
    return os.path.expanduser(os.environ.get("FUNES_HOME") or os.path.join("~", ".funes"))


def spool_dir() -> str:
    return os.path.join(funes_home(), "spool")


def logs_dir() -> str:
    return os.path.join(funes_home(), "logs")


class _Decoding:
    """What ``_json.make_scanner`` reads from its context: ``json.loads``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.replace("Infinity", "inf"))  # NaN, Infinity, -Infinity, as json reads them


_scan = _json.make_scanner(_Decoding())
_encode = _json.make_encoder(None, None, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True)
_WHITESPACE = " \t\n\r"


def _loads(payload: bytes) -> object:
    """``json.loads(payload)`` for a UTF-8 payload (ValueError when it is not one JSON value)."""
    text = payload.decode("utf-8-sig")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("no JSON value") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError("extra data after the JSON value")
    return value


def _dumps(request: dict) -> str:
    """``json.dumps(request)``: the same C encoder, with the same defaults."""
    return "".join(_encode(request, 0))


def _short(value: object) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, str):
        return len(value) <= FIELD_MAX_CHARS
    if isinstance(value, list):
        return len(value) <= LIST_MAX_ITEMS and all(isinstance(v, str) and len(v) <= FIELD_MAX_CHARS for v in value)
    return False


def _short_fields(fields: dict) -> dict:
    """The payload's short fields; those of an object one level down as
    ``<name>.<field>`` (some agents name the session only inside one)."""
    kept = {}
    for name, value in fields.items():
        if not isinstance(name, str):
            continue
        if _short(value):
            kept[name] = value
        elif isinstance(value, dict):
            kept.update({f"{name}.{inner}": item for inner, item in list(value.items())[:LIST_MAX_ITEMS]
                         if isinstance(inner, str) and _short(item)})
    return kept


def request_from(argv: list[str], payload: bytes) -> dict:
    agent, options = argv[0], dict(zip(argv[1::2], argv[2::2], strict=False))
    try:
        fields = _loads(payload) if payload.strip() else {}
    except (ValueError, RecursionError):
        fields = {}
    if not isinstance(fields, dict):
        fields = {}
    return {
        "agent": agent,
        "memory": options.get("--memory"),
        "publish": options.get("--publish"),
        "received": time.time(),
        "payload": _short_fields(fields),
        "env": {name: value for name, value in os.environ.items()
                if name.endswith(HOME_VARIABLE_SUFFIXES) and len(value) <= FIELD_MAX_CHARS},
    }


def spool(request: dict) -> None:
    folder = spool_dir()
    os.makedirs(folder, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}-{os.urandom(4).hex()}.json"
    temporary = os.path.join(folder, f".{name}.tmp")  # the worker reads *.json only: never a half-written file
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(_dumps(request))
    except BaseException:
        try:
            os.unlink(temporary)  # a full disk leaves no stray file behind
        except OSError:
            pass
        raise
    os.replace(temporary, os.path.join(folder, name))


def claim_spool(folder: str) -> int | None:
    """The spool lock, taken without waiting (a descriptor to hand a new worker),
    or None when a worker holds it: that worker takes the request just spooled."""
    descriptor = os.open(os.path.join(folder, WORKER_LOCK), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def start_worker(lock: int) -> None:
    import subprocess  # only the hook that starts a worker pays for the import

    logs = logs_dir()
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, LOG_NAME), "ab") as log:
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True, pass_fds=(lock,),
            start_new_session=True, cwd=funes_home(), env={**os.environ, MARKER_ENV: "1", LOCK_FD_ENV: str(lock)},
        )


# Why the disk refused the spool file, in the words the CLI uses (funes.errors.refused_write,
# which this script cannot import: it runs without site-packages).
_REFUSED = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
            errno.EFBIG: "a file grew past the size the system allows"}


def log_failure(argv: list[str], error: BaseException) -> None:
    """Log why the hook could not hand its turn on; when the log cannot be written
    either (a full disk), say it on stderr, the one place left."""
    refused = _REFUSED.get(getattr(error, "errno", None))
    if refused:
        what = (f"cannot spool the turn in {spool_dir()}: {refused}; free some space (everything indexed before"
                " this is kept)")
    elif isinstance(error, OSError) and error.strerror:  # a FUNES_HOME that is a file, a read-only folder
        what = f"cannot spool the turn in {spool_dir()}: {error.strerror}"
    else:
        what = repr(error)
    try:
        logs = logs_dir()
        os.makedirs(logs, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with open(os.path.join(logs, LOG_NAME), "a", encoding="utf-8") as log:
            log.write(f"{stamp} hook {' '.join(argv)} failed open: {what}\n")
    except Exception:  # noqa: BLE001 - the agent must go on whatever happens
        try:
            print(f"funes: {what}", file=sys.stderr)
        except Exception:  # noqa: BLE001, S110 - nowhere left to report
            pass


def main(argv: list[str]) -> int:
    try:
        payload = sys.stdin.buffer.read()
    except Exception:  # noqa: BLE001 - a closed or broken stdin is no payload
        payload = b""
    if os.environ.get(MARKER_ENV) or not argv:
        return 0
    try:
        spool(request_from(argv, payload))  # before looking for a worker: see claim_spool
        lock = claim_spool(spool_dir())
        if lock is not None:
            try:
                start_worker(lock)
            finally:
                os.close(lock)  # the worker's inherited copy keeps the lock held
    except Exception as error:  # noqa: BLE001 - fail open, whatever happens
        log_failure(argv, error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
