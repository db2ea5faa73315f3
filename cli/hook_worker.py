"""The hook worker: index the sessions that spooled hook requests name, then publish.

    python -m funes.cli.hook_worker        (started detached by funes.hook)

One worker at a time drains ``$FUNES_HOME/spool``: it holds ``spool/.worker.lock``
(the hook starts no worker while it is held) and takes it before importing
anything heavy, so a surplus worker a race starts exits at once; the one draining
looks at the spool again after letting the lock go, so a turn spooled at any
moment is handled by someone.  Requests are grouped by
memory and session: a burst indexes each session once, its new chunks embedded in
the same write.  Only the sessions the requests name are indexed, never a sweep.

The memory's writer lock is tried without waiting; when another writer holds it
(`funes index`, say) the requests stay spooled for the next turn's worker.  With
time left, vectors still missing from earlier text-first indexing are filled in
(stopping as soon as a new turn is spooled).  Publish requests run after the
indexing, one push per memory.  Then the worker waits a few minutes for the next
turn, still holding the lock, so a session's later turns find it warm.  The worker never starts an agent, and everything
it starts inherits ``FUNES_HOOK=1`` from the hook.
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

from funes.hook import LOG_NAME, WORKER_LOCK, spool_dir

log = logging.getLogger("funes.hook")

# Filling in missing vectors after a turn stops after this long (or at the next turn).
BACKLOG_BUDGET_S = 10.0
# A worker stays this long after its last turn ($FUNES_HOOK_IDLE_S), lancedb and the
# embedder loaded, so the next turns of a session skip the ~2 s of cold start.
IDLE_EXIT_S = 300.0
POLL_S = 0.1
LOG_MAX_BYTES = 5_000_000
HARNESS_OF_AGENT = {"claude": "claude_code", "codex": "codex", "pi": "pi", "hermes": "hermes"}


@dataclass(frozen=True)
class Request:
    path: Path  # the spool file
    agent: str
    memory: str | None  # where to index (None: the local memory)
    publish: str | None  # a memory to publish to, for session-boundary requests
    transcript_path: str | None
    session_id: str | None
    hermes_home: str | None
    profile: str | None
    received: float

    @property
    def session(self) -> tuple:
        """What one indexing covers: requests with the same value coalesce."""
        return (self.agent, self.memory, self.publish, self.transcript_path or self.session_id,
                self.hermes_home, self.profile)


def read_requests(folder: Path) -> list[Request]:
    """The spooled requests, oldest first, one per session: older duplicates are
    deleted (a burst of turns of one session is one indexing)."""
    requests: dict[tuple, Request] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            request = Request(path, str(raw["agent"]), raw.get("memory"), raw.get("publish"),
                              raw.get("transcript_path"), raw.get("session_id"), raw.get("hermes_home"),
                              raw.get("profile"), float(raw.get("received") or 0))
        except FileNotFoundError:  # another worker took it
            continue
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("dropping unreadable request %s: %s", path.name, exc)
            path.unlink(missing_ok=True)
            continue
        previous = requests.pop(request.session, None)
        if previous is not None:
            previous.path.unlink(missing_ok=True)
        requests[request.session] = request
    return sorted(requests.values(), key=lambda r: r.received)


def has_requests(folder: Path) -> bool:
    return any(folder.glob("*.json"))


@contextmanager
def worker_lock(folder: Path) -> Iterator[bool]:
    """Whether this process is the one worker draining ``folder`` (released on exit)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / WORKER_LOCK, "a") as handle:
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
    """The transcript units of the one session a request names."""
    from funes.config import hermes_home
    from funes.traces import discover

    harness = HARNESS_OF_AGENT.get(request.agent)
    if harness is None:
        raise ValueError(f"unknown agent {request.agent!r}")
    if harness == "hermes":
        home = Path(request.hermes_home) if request.hermes_home else hermes_home()
        if not request.hermes_home and request.profile not in (None, "", "default"):
            home = home / "profiles" / request.profile
        database = home / "state.db"
        if not request.session_id or not database.is_file():
            raise ValueError(f"no Hermes session {request.session_id!r} in {database}")
        return [unit for unit in discover(database, harness) if unit.session_id == request.session_id]
    if not request.transcript_path:
        raise ValueError(f"the {request.agent} payload names no transcript_path")
    transcript = Path(request.transcript_path)
    if not transcript.is_file():
        raise ValueError(f"no transcript at {transcript}")
    units = discover(transcript, harness)
    subagents = transcript.with_suffix("") / "subagents"  # Claude keeps a session's subagents beside it
    if harness == "claude_code" and subagents.is_dir():
        units += discover(subagents, harness)
    return units


class Worker:
    def __init__(self, folder: Path):
        self.folder = folder
        self._embedder: Any = None
        self._loading = threading.Lock()

    def embedder(self) -> Any:
        with self._loading:
            if self._embedder is None:
                from funes.embedding import load_embedder

                self._embedder = load_embedder()
            return self._embedder

    def warm_up(self) -> None:
        """Load the embedder and the secret scanner in a thread while the main one
        imports lancedb: both are mostly native code, so the cold start overlaps."""
        def load() -> None:
            from funes.redaction import get_scanner

            self.embedder()
            get_scanner()

        if self._embedder is None:
            threading.Thread(target=load, name="funes-warm-up", daemon=True).start()

    def drain(self) -> bool:
        """Handle every spooled request; False when the memory was busy and some
        were left for the next worker."""
        while requests := read_requests(self.folder):
            if any(request.publish is None for request in requests):
                self.warm_up()
            by_memory: dict[str | None, list[Request]] = {}
            for request in requests:
                if request.publish is None:
                    by_memory.setdefault(request.memory, []).append(request)
            for memory, batch in by_memory.items():
                if not self.index(memory, batch):
                    return False
            for remote in dict.fromkeys(r.publish for r in requests if r.publish is not None):
                publish(remote)
                for request in requests:
                    if request.publish == remote:
                        request.path.unlink(missing_ok=True)
        return True

    def index(self, memory: str | None, batch: list[Request]) -> bool:
        from funes.embedding import IDENTITY
        from funes.errors import FunesError, WriterBusyError
        from funes.indexing import embed_backlog, index_units
        from funes.memory.location import location_for
        from funes.memory.store import MemoryWriter
        from funes.pipelines.recording import record_in_background
        from funes.traces import order_units

        started = time.monotonic()
        units = []
        for request in batch:
            try:
                units.extend(units_for(request))
            except (ValueError, FunesError, OSError) as exc:
                log.warning("%s: %s", request.agent, exc)
        units = order_units(units)
        location = location_for(memory)
        try:
            with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim, wait_s=0) as writer:
                report = index_units(writer, units, embedder=self.embedder() if units else None)
                for request in batch:
                    request.path.unlink(missing_ok=True)
                log.info("indexed %d of %d session(s) into %s: %d chunks added, %d embedded, %d error(s) in %.2fs",
                         report.changed, report.units, location.label, report.chunks_added, report.embedded,
                         len(report.errors), time.monotonic() - started)
                for error in report.errors:
                    log.warning("will retry: %s", error)
                if writer.pending_count():
                    filled = embed_backlog(writer, self.embedder(), budget_s=BACKLOG_BUDGET_S,
                                           should_stop=lambda: has_requests(self.folder))
                    log.info("embedded %d earlier chunk(s) still lacking vectors", filled)
        except WriterBusyError:
            log.info("%s is being written by another process: %d request(s) left for the next turn",
                     location.label, len(batch))
            return False
        except FunesError as exc:  # a memory this funes cannot write: retrying every turn would not help
            log.error("cannot index into %s: %s", location.label, exc)
            for request in batch:
                request.path.unlink(missing_ok=True)
            return True
        record_in_background(location, [unit.key for unit in units], origin="hook")
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
    folder = spool_dir()
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
