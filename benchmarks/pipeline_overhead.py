"""What a Dagster run adds per session partition, against `funes index` on the same
sessions, and how a Celery backfill scales from 1 to 2 workers.

    nice -n 10 python benchmarks/pipeline_overhead.py [--sessions 24] [--no-write]

Every measurement is a fresh memory (local folder) and a fresh process, as a user or a
deployment starts it: `funes index --yes <root>`; `dagster job execute -m
funes.pipelines.definitions -j index_sessions` over all the partitions (one run,
`BackfillPolicy.single_run`) with the in-process and the multiprocess executor on a
SQLite instance; and with the Celery executor on a Postgres instance with a Redis broker
(tests/helpers/distributed_services.py starts them), as four concurrent runs of a quarter of the
partitions each, so that two workers have steps to share.  Wall-clock seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from report import machine, write_section  # noqa: E402

RUNS = 4


def _execute(keys: list[str], env: dict[str, str]) -> subprocess.Popen:
    tags = {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    return subprocess.Popen([sys.executable, "-m", "dagster", "job", "execute", "-m", "funes.pipelines.definitions",
                             "-j", "index_sessions", "--tags", json.dumps(tags)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _timed_runs(parts: list[list[str]], env: dict[str, str]) -> float:
    started = time.perf_counter()
    runs = [_execute(part, env) for part in parts]
    for run in runs:
        output = run.communicate()[0]
        if run.returncode:
            raise SystemExit(output[-3000:])
    return time.perf_counter() - started


def _add_partitions(home: Path, keys: list[str]) -> None:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("sessions", keys)


def measure(sessions: int, work: Path) -> dict[str, float]:
    from distributed_services import (MISSING, celery_workers, dagster_home, postgres_server, redis_server,
                                      synthetic_sessions)

    root = work / "traces"
    keys = synthetic_sessions(root, sessions)
    base = {**os.environ, "HOME": str(work / "home"), "FUNES_NO_DAGSTER_RECORD": "1", "FUNES_TRACE_ROOTS": str(root)}
    (work / "home").mkdir(exist_ok=True)
    seconds: dict[str, float] = {}

    def fresh(name: str) -> dict[str, str]:
        return {**base, "FUNES_HOME": str(work / name / "funes"), "FUNES_MEMORY": str(work / name / "memory")}

    # Warm the shared caches (the ONNX export of the model, the compiled secret rules)
    # so that no row pays for them.
    warm = fresh("warm-up")
    synthetic_sessions(work / "warm-up-traces", 1)
    subprocess.run([sys.executable, "-m", "funes.cli", "index", "--yes", str(work / "warm-up-traces"), "--memory",
                    warm["FUNES_MEMORY"]], env=warm, check=True, capture_output=True)
    env = fresh("cli")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "funes.cli", "index", "--yes", str(root), "--memory", env["FUNES_MEMORY"]],
                   env=env, check=True, capture_output=True)
    seconds["funes index"] = time.perf_counter() - started

    for executor in ("in_process", "multiprocess"):
        env = {**fresh(executor), "FUNES_EXECUTOR": executor, "DAGSTER_HOME": str(work / executor / "dagster")}
        Path(env["DAGSTER_HOME"]).mkdir(parents=True)
        Path(env["DAGSTER_HOME"], "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        _add_partitions(Path(env["DAGSTER_HOME"]), keys)
        seconds[f"{executor}, 1 run"] = _timed_runs([keys], env)

    if MISSING:
        print(f"celery figures skipped: needs {MISSING}", file=sys.stderr)
        return seconds
    quarter = -(-sessions // RUNS)
    parts = [keys[start:start + quarter] for start in range(0, sessions, quarter)]
    with redis_server() as broker, postgres_server() as pg_url:
        for workers in (1, 2):
            name = f"celery-{workers}"
            home = dagster_home(work / name / "dagster")
            env = {**fresh(name), "FUNES_EXECUTOR": "celery", "FUNES_CELERY_BROKER": broker,
                   "DAGSTER_HOME": str(home), "FUNES_DAGSTER_PG_URL": pg_url}
            os.environ["FUNES_DAGSTER_PG_URL"] = pg_url
            _add_partitions(home, keys)
            subprocess.run([sys.executable, "-m", "dagster", "instance", "concurrency", "set", "lance_writer", "1"],
                           env=env, check=True, capture_output=True)  # before concurrent runs race to set it
            with celery_workers(workers, env, home):
                seconds[f"celery, {workers} worker{'s' if workers > 1 else ''}, {len(parts)} runs"] = _timed_runs(parts, env)
            subprocess.run([sys.executable, "-c", "import psycopg2,sys; c=psycopg2.connect(sys.argv[1]); "
                            "c.autocommit=True; c.cursor().execute('DROP SCHEMA public CASCADE; CREATE SCHEMA public')",
                            pg_url.replace("+psycopg2", "")], check=True)
    return seconds


def markdown(sessions: int, seconds: dict[str, float], load: tuple[float, float]) -> str:
    index = seconds["funes index"]
    rows = "\n".join(f"| {name} | {value:.1f} | {(value - index) / sessions * 1000:+.0f} |"
                     for name, value in seconds.items())
    return f"""`nice -n 10 python benchmarks/pipeline_overhead.py --sessions {sessions}`: {sessions} synthetic Claude Code
sessions (6 turns each, one chunk per turn), a fresh local memory each time, wall-clock seconds from the
process start (Python, Dagster and funes imports, model load included; the model export and\nsecret rules cached beforehand). The Celery rows run the
deployment of docs/architecture.md (Postgres instance, Redis broker, `--concurrency=1` workers on
this machine) as {RUNS} concurrent runs of a quarter of the partitions each.

| path | seconds | added per session partition vs `funes index` (ms) |
|---|---:|---:|
{rows}

Machine: {machine()}. Load average (1 min) {load[0]:.1f} at the start, {load[1]:.1f} at the end, other
work running beside it on the 2 cores.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="funes-pipeline-bench-"))
    try:
        seconds = measure(args.sessions, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    body = markdown(args.sessions, seconds, (load_at_start, os.getloadavg()[0]))
    print(body)
    if not args.no_write:
        write_section("Pipeline overhead per session partition", body)


if __name__ == "__main__":
    main()
