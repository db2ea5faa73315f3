"""The hook worker: index the sessions that spooled hook requests name, then publish.

    python -m funes.cli.hook_worker        (started detached by funes.hook)

One worker at a time drains ``$FUNES_HOME/spool``: it holds ``spool/.worker.lock``,
handed over already locked by the hook that started it (``FUNES_WORKER_LOCK_FD``),
so the other hooks of a burst start no worker; one started any other way takes the
lock before importing anything heavy and exits at once if it is held.  The one
draining looks at the spool again after letting the lock go, so a turn spooled at
any moment is handled by someone.  Requests are grouped by memory and session: a
burst indexes each session once, its new chunks embedded in the same write.  Only
the sessions the requests name are indexed, never a sweep.

A memory another process is writing (`funes index`, maintenance, a Dagster run)
is waited for, not given up on: the worker polls its writer lock every
``WRITER_POLL_S`` without taking it and without loading any model (it stays a
small process however long the other writer runs), other memories go ahead
meanwhile, and once the lock is free it loads the models and indexes, so the turn
is recallable seconds after the writer finishes with no further hook.  While it
waits it holds the spool, so the turns spooled meanwhile are taken in the same
pass.  Only a writer holding the lock for ``WRITER_WAIT_S`` (a stuck process, not
a long index) makes it leave the requests spooled for the next hook's worker.

With time left, vectors still missing from earlier text-first indexing are filled
in (stopping as soon as a new turn is spooled).  Publish requests run after the
indexing, one push per memory.  Then the worker waits a few minutes for the next
turn, still holding the lock, so a session's later turns find it warm.  It exits
only once the thread loading the models has finished (native code torn down
mid-load aborts the process).  The worker never starts an agent, and everything it
starts inherits ``FUNES_HOOK=1`` from the hook.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funes.hook import LOCK_FD_ENV, LOG_NAME, WORKER_LOCK, spool_dir

log = logging.getLogger("funes.hook")

# Filling in missing vectors after a turn stops after this long (or at the next turn).
BACKLOG_BUDGET_S = 10.0
# A worker stays this long after its last turn ($FUNES_HOOK_IDLE_S), lancedb and the
# embedder loaded, so the next turns of a session skip the ~2 s of cold start.
IDLE_EXIT_S = 300.0
POLL_S = 0.1
# A memory another process writes is polled this often, for at most this long.
WRITER_POLL_S = 0.2
WRITER_WAIT_S = 12 * 3600.0
LOG_MAX_BYTES = 5_000_000


@dataclass(frozen=True)
class Request:
    path: Path  # the spool file
    agent: str
    memory: str | None  # where to index (None: the local memory)
    publish: str | None  # a memory to publish to, for session-boundary requests
    payload: dict[str, Any]  # the short fields of the agent's hook payload
    env: dict[str, str]  # the hook's home variables
    received: float

    @property
    def session(self) -> tuple:
        """What one indexing covers: requests with the same value coalesce."""
        from funes.agents import find_agent

        agent = find_agent(self.agent)
        named = agent.hook_session(self.payload, self.env) if agent is not None else \
            json.dumps(self.payload, sort_keys=True)
        return (self.agent, self.memory, self.publish, named)


def read_requests(folder: Path) -> list[Request]:
    """The spooled requests, oldest first, one per session: older duplicates are
    deleted (a burst of turns of one session is one indexing)."""
    requests: dict[tuple, Request] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            payload, env = raw.get("payload") or {}, raw.get("env") or {}
            if not isinstance(payload, dict) or not isinstance(env, dict):
                raise ValueError("payload and env must be objects")
            request = Request(path, str(raw["agent"]), raw.get("memory"), raw.get("publish"), payload, env,
                              float(raw.get("received") or 0))
            session = request.session
        except FileNotFoundError:  # another worker took it
            continue
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.error("dropping unreadable request %s: %s", path.name, exc)
            path.unlink(missing_ok=True)
            continue
        previous = requests.pop(session, None)
        if previous is not None:
            previous.path.unlink(missing_ok=True)
        requests[session] = request
    return sorted(requests.values(), key=lambda r: r.received)


def has_requests(folder: Path) -> bool:
    return any(folder.glob("*.json"))


def handed_lock() -> int | None:
    """The spool lock the hook that started this worker took for it, if any (once:
    a later pass takes the lock itself).  Not inherited by what the worker starts."""
    value = os.environ.pop(LOCK_FD_ENV, "")
    if not value.isdigit():
        return None
    descriptor = int(value)
    try:
        os.set_inheritable(descriptor, False)
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # already ours: returns at once
    except OSError:  # not a descriptor we were handed after all
        return None
    return descriptor


@contextmanager
def worker_lock(folder: Path) -> Iterator[bool]:
    """Whether this process is the one worker draining ``folder`` (released on exit)."""
    folder.mkdir(parents=True, exist_ok=True)
    handed = handed_lock()
    handle = open(handed, "a") if handed is not None else open(folder / WORKER_LOCK, "a")  # noqa: SIM115
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def units_for(request: Request) -> list[Any]:
    """The transcript units of the one session a request names, as its agent reads
    the payload (a plugin's unexpected failure is a ValueError, logged)."""
    from funes.agents import find_agent
    from funes.agents.registry import is_builtin

    agent = find_agent(request.agent)
    if agent is None:
        raise ValueError(f"unknown agent {request.agent!r}")
    if is_builtin(agent):
        return agent.hook_units(request.payload, request.env)
    try:
        return agent.hook_units(request.payload, request.env)
    except (ValueError, OSError):
        raise
    except Exception as exc:  # noqa: BLE001 - someone else's code
        raise ValueError(f"agent plugin {agent.name!r} failed on its hook payload: {type(exc).__name__}: {exc}") \
            from exc


class Worker:
    def __init__(self, folder: Path):
        self.folder = folder
        self._embedder: Any = None
        self._loading = threading.Lock()
        self._warming: threading.Thread | None = None
        self._waiting: dict[str, float] = {}  # memories being waited for (label → since when)

    def embedder(self) -> Any:
        with self._loading:
            if self._embedder is None:
                from funes.embedding import load_embedder

                self._embedder = load_embedder()
            return self._embedder

    def warm_up(self) -> None:
        """Load the embedder and the secret scanner in a thread while the main one
        imports lancedb: both are mostly native code, so the cold start overlaps.
        Not a daemon: the interpreter waits for it at exit, since onnxruntime torn
        down mid-load aborts the process (`terminate called without an active
        exception`)."""
        def load() -> None:
            from funes.redaction import get_scanner

            self.embedder()
            get_scanner()

        if self._embedder is None and self._warming is None:
            self._warming = threading.Thread(target=load, name="funes-warm-up")
            self._warming.start()

    def drain(self) -> bool:
        """Handle every spooled request.  A memory another process is writing is
        waited for (module docstring), re-reading the spool every ``WRITER_POLL_S``
        so the turns spooled meanwhile join; False when one stayed busy for
        ``WRITER_WAIT_S``: its requests stay spooled for the next worker."""
        waiting = self._waiting
        while requests := read_requests(self.folder):
            by_memory: dict[str | None, list[Request]] = {}
            for request in requests:
                if request.publish is None:
                    by_memory.setdefault(request.memory, []).append(request)
            busy = [label for memory, batch in by_memory.items() if (label := self.index_if_free(memory, batch))]
            for label in [label for label in waiting if label not in busy]:
                del waiting[label]  # its requests went another way (a newer duplicate, say)
            if busy:
                for label in busy:
                    if label not in waiting:
                        waiting[label] = time.monotonic()
                        log.info("%s is being written by another process: waiting for it to finish", label)
                if time.monotonic() - min(waiting.values()) >= WRITER_WAIT_S:
                    log.warning("gave up after %.0fs waiting for %s: its requests are left for the next turn",
                                WRITER_WAIT_S, ", ".join(busy))
                    return False
                time.sleep(WRITER_POLL_S)
                continue
            for remote in dict.fromkeys(r.publish for r in requests if r.publish is not None):
                publish(remote)
                for request in requests:
                    if request.publish == remote:
                        request.path.unlink(missing_ok=True)
        return True

    def index_if_free(self, memory: str | None, batch: list[Request]) -> str | None:
        """Index ``batch`` unless another process is writing ``memory``: then its
        label, with no model loaded for it."""
        from funes.memory.location import location_for
        from funes.memory.writer import MemoryWriter

        location = location_for(memory)
        if MemoryWriter.lock_free(location):
            if location.label in self._waiting:
                log.info("%s is free after %.1fs of waiting", location.label,
                         time.monotonic() - self._waiting.pop(location.label))
            self.warm_up()
            if self.index(memory, batch):
                return None
        return location.label  # busy, or taken by another writer between the look and the open

    def index(self, memory: str | None, batch: list[Request]) -> bool:
        """Index ``batch`` into ``memory``; False (nothing done) when another
        process holds its writer lock."""
        from funes.discovery import order_units
        from funes.errors import FunesError, WriterBusyError
        from funes.indexing import IndexReport, index_memory
        from funes.memory.location import location_for
        from funes.pipelines.records import recorder

        started = time.monotonic()
        units = []
        for request in batch:
            try:
                units.extend(units_for(request))
            except (ValueError, FunesError, OSError) as exc:
                log.warning("%s: %s", request.agent, exc)
        units = order_units(units)
        location = location_for(memory)

        def indexed(report: IndexReport) -> None:
            for request in batch:
                request.path.unlink(missing_ok=True)
            log.info("indexed %d of %d session(s) into %s: %d chunks added, %d embedded, %d error(s) in %.2fs",
                     report.changed, report.units, location.label, report.chunks_added, report.embedded,
                     len(report.errors), time.monotonic() - started)
            for error in report.errors:
                log.warning("will retry: %s", error)

        try:
            report = index_memory(location, units, embedder=self.embedder, embed_new=True, wait_s=0,
                                  backlog_budget_s=BACKLOG_BUDGET_S, should_stop=lambda: has_requests(self.folder),
                                  on_indexed=indexed, record=recorder("hook"))
        except WriterBusyError:
            return False
        except FunesError as exc:  # a memory this funes cannot write: retrying every turn would not help
            log.error("cannot index into %s: %s", location.label, exc)
            for request in batch:
                request.path.unlink(missing_ok=True)
            return True
        if report.backlog_by_tier:
            log.info("embedded %d earlier chunk(s) still lacking vectors", sum(report.backlog_by_tier.values()))
        return True


def publish(remote: str) -> None:
    try:
        from funes.hub.push import push
    except ImportError:
        log.warning("push not available: this funes has no funes.hub.push yet; %s was not published", remote)
        return
    try:
        push(remote, assume_yes=True)
        log.info("published to %s", remote)
    except Exception:  # noqa: BLE001 - logged in full; the next session boundary tries again
        log.exception("publishing to %s failed (the next session boundary tries again)", remote)


def configure_logging() -> None:
    from logging.handlers import RotatingFileHandler

    from funes.config import logs_dir

    folder = logs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    handler = RotatingFileHandler(folder / LOG_NAME, maxBytes=LOG_MAX_BYTES, backupCount=1, encoding="utf-8")
    handler.setFormatter(logging.Formatter(f"%(asctime)s worker[{os.getpid()}] %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def idle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("FUNES_HOOK_IDLE_S", IDLE_EXIT_S)))
    except ValueError:
        return IDLE_EXIT_S


def next_request(folder: Path, idle_s: float) -> bool:
    """Wait (holding the worker lock, models loaded) for the next spooled turn;
    False after ``idle_s`` without one."""
    deadline = time.monotonic() + idle_s
    while not has_requests(folder):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def main() -> int:
    folder = Path(spool_dir())
    worker = Worker(folder)
    idle_s = idle_seconds()
    while True:
        with worker_lock(folder) as mine:
            if not mine:
                return 0  # the worker holding it will see our request
            if not log.handlers:
                configure_logging()
            try:
                finished = worker.drain()
                while finished and next_request(folder, idle_s):
                    finished = worker.drain()
            except Exception:  # a bug: keep the traceback in the log, leave the requests
                log.exception("hook worker failed")
                return 1
        if not finished or not has_requests(folder):
            return 0


if __name__ == "__main__":
    sys.exit(main())
