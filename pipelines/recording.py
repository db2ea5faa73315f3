"""Recording CLI and hook work as Dagster runs, off the interactive path.

``funes index`` and the hook worker call the domain functions directly (a run on
the persistent instance costs ~2 s, and ~12 ms per partition and asset).  Then a
detached recorder runs the ``index_sessions`` job over the sessions they touched:
each session is found up to date (nothing is parsed or written again, and the
writer lock is not taken), so the run only records the materialisations, but
anything that changed in between is indexed by the run itself.  So ``funes ui``
shows every run, including those the CLI started.

Requests are spooled; one recorder at a time drains the spool, so a burst of hook
turns becomes one recording run per memory, not one process per turn.

    python -m funes.pipelines.recording
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from funes.config import logs_dir, state_dir
from funes.memory.location import MemoryLocation

ORIGIN_TAG = "funes/origin"


def _spool() -> Path:
    return state_dir() / "record"


def record_in_background(location: MemoryLocation, keys: Sequence[str], *, origin: str) -> None:
    """Spool a request for ``keys`` and make sure a recorder will take it; returns
    at once and never fails the caller (FUNES_NO_DAGSTER_RECORD=1 switches it off)."""
    if not keys or os.environ.get("FUNES_NO_DAGSTER_RECORD"):
        return
    try:
        spool = _spool()
        spool.mkdir(parents=True, exist_ok=True)
        request = {"memory": location.uri, "keys": list(keys), "origin": origin}
        tmp = spool / f".{uuid.uuid4().hex}.tmp"
        tmp.write_text(json.dumps(request))
        os.replace(tmp, spool / f"{uuid.uuid4().hex}.json")
        logs = logs_dir()
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "dagster-record.log", "ab") as log:
            subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "funes.pipelines.recording"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True, start_new_session=True,
            )
    except OSError:
        return


def partition_range(ordered: Sequence[str], keys: Sequence[str]) -> tuple[str, str]:
    """The smallest contiguous range of ``ordered`` partition keys covering ``keys``."""
    index = {key: position for position, key in enumerate(ordered)}
    positions = [index[k] for k in keys]
    return ordered[min(positions)], ordered[max(positions)]


def record(memory_uri: str, keys: Sequence[str], origin: str) -> bool:
    """One in-process run of ``index_sessions`` over ``keys`` on the persistent instance."""
    import dagster as dg  # noqa: F401 - imported here: the spooling side must stay light

    from funes.pipelines.definitions import defs
    from funes.pipelines.instance import funes_instance
    from funes.pipelines.partitions import session_partitions

    instance = funes_instance()
    known = set(instance.get_dynamic_partitions(session_partitions.name))
    missing = [k for k in dict.fromkeys(keys) if k not in known]
    if missing:
        instance.add_dynamic_partitions(session_partitions.name, missing)
    ordered = instance.get_dynamic_partitions(session_partitions.name)
    start, end = partition_range(ordered, keys)
    result = defs.resolve_job_def("index_sessions").execute_in_process(
        instance=instance,
        run_config={"resources": {"memory": {"config": {"memory": memory_uri}}}},
        tags={
            "dagster/asset_partition_range_start": start,
            "dagster/asset_partition_range_end": end,
            ORIGIN_TAG: origin,
        },
        raise_on_error=False,
    )
    return result.success


def drain() -> bool:
    """Record every spooled request, merged per (memory, origin), until the spool is
    empty; a second recorder finding the lock held leaves the work to this one."""
    from filelock import FileLock, Timeout

    spool = _spool()
    try:
        lock = FileLock(str(spool / "recorder.lock"))
        lock.acquire(timeout=0)
    except (Timeout, OSError):
        return True
    ok = True
    try:
        try:
            os.nice(10)  # recording is bookkeeping: never compete with the user's work
        except OSError:
            pass
        while True:
            requests = sorted(spool.glob("*.json"))
            if not requests:
                return ok
            merged: dict[tuple[str, str], list[str]] = {}
            for path in requests:
                try:
                    request = json.loads(path.read_text())
                    merged.setdefault((request["memory"], request["origin"]), []).extend(request["keys"])
                except (OSError, ValueError, KeyError):
                    pass  # a damaged request is dropped: recording is best effort
            for (memory_uri, origin), keys in merged.items():
                ok = record(memory_uri, list(dict.fromkeys(keys)), origin) and ok
            for path in requests:
                path.unlink(missing_ok=True)
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(0 if drain() else 1)
