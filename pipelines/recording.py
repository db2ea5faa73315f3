"""Recording CLI and hook work as Dagster runs, off the interactive path.

``funes index`` and the hook worker call the domain functions directly (a run on
the persistent instance costs ~2 s, and ~12 ms per partition and asset).  Then a
detached process runs the ``index_sessions`` job over the sessions they touched:
each session is found up to date (nothing is parsed or written again, and the
writer lock is not taken), so the run only records the materialisations, but
anything that changed in between is indexed by the run itself.  The result is
that ``dagster dev`` shows every run, including those started by the CLI.

    python -m funes.pipelines.recording <request.json>
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence

from funes.config import logs_dir, state_dir
from funes.memory.location import MemoryLocation

ORIGIN_TAG = "funes/origin"


def record_in_background(location: MemoryLocation, keys: Sequence[str], *, origin: str) -> None:
    """Start the recorder for ``keys`` and return at once; never fails the caller
    (set FUNES_NO_DAGSTER_RECORD=1 to switch it off)."""
    if not keys or os.environ.get("FUNES_NO_DAGSTER_RECORD"):
        return
    try:
        spool = state_dir() / "record"
        spool.mkdir(parents=True, exist_ok=True)
        request = spool / f"{uuid.uuid4().hex}.json"
        request.write_text(json.dumps({"memory": location.uri, "keys": list(keys), "origin": origin}))
        logs = logs_dir()
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "dagster-record.log", "ab") as log:
            subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "funes.pipelines.recording", str(request)],
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
    import dagster as dg

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
    job = defs.resolve_job_def("index_sessions")
    result = job.execute_in_process(
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


def main(argv: list[str]) -> int:
    request_path = argv[0]
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    try:
        os.nice(10)  # recording is bookkeeping: never compete with the user's work
    except OSError:
        pass
    ok = record(request["memory"], request["keys"], request["origin"])
    os.unlink(request_path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
