"""The services of a distributed deployment, started on loopback from the OS packages:
Redis (Celery broker and results), Postgres (the Dagster instance), an S3-compatible
server (moto) and Celery workers running Dagster steps.  Used by
tests/hub/test_distributed.py and benchmarks/pipeline_overhead.py; each helper is a
context manager that stops what it started."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server")
_PG_BINS = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
PG_BIN = _PG_BINS[-1].parent if _PG_BINS else None
MISSING = ", ".join(name for name, found in (("redis-server", REDIS_SERVER), ("postgresql (initdb, pg_ctl)", PG_BIN))
                    if not found)
# Postgres refuses to run as root; CI runs as root, so it runs as this user then.
PG_USER = "nobody"
BUCKET = "funes-distributed"
TOPICS = ["lance compaction", "bm25 segments", "celery broker", "postgres instance", "s3 commit", "redis queue"]

# The instance of the deployment (docs/architecture.md shows the same file).
DAGSTER_YAML = """\
telemetry:
  enabled: false
storage:
  postgres:
    postgres_url:
      env: FUNES_DAGSTER_PG_URL
concurrency:
  pools:
    default_limit: 1
"""
# What every worker is started with (`dagster-celery worker start -y celery.yaml`).
CELERY_YAML = """\
execution:
  config:
    broker:
      env: FUNES_CELERY_BROKER
    backend:
      env: FUNES_CELERY_BROKER
"""


def synthetic_sessions(root: Path, count: int) -> list[str]:
    """``count`` Claude Code transcripts with distinct texts, one turn per topic, under
    ``root``; returns their partition keys, sorted."""
    from hub_helpers import write_claude_session

    for number in range(count):
        session_id = f"{number:08x}-d157-4000-8000-000000000000"
        texts = [f"Session {number}: how do we fix the {topic} step on worker {number % 3}? "
                 f"The log says retry {number * 7 + turn} failed." if turn % 2 == 0 else
                 f"In session {number} the {topic} fix was to pin the writer and rerun backfill {turn}."
                 for turn, topic in enumerate(TOPICS)]
        write_claude_session(root / f"{session_id}.jsonl", session_id, texts, cwd=f"/work/app{number % 4}")
    return sorted(f"claude_code--{number:08x}-d157-4000-8000-000000000000" for number in range(count))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(ready, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{what} did not come up within {timeout:.0f} s")


@contextmanager
def redis_server() -> Iterator[str]:
    """A Redis on 127.0.0.1 that keeps nothing on disk; yields its URL."""
    import redis

    port = free_port()
    process = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"

    def pong() -> bool:
        try:
            return redis.Redis.from_url(url, socket_timeout=1).ping()
        except redis.ConnectionError:
            return False

    try:
        _wait(pong, "redis-server")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _as_pg_user() -> dict:
    return {"user": PG_USER, "group": "nogroup" if _group_exists("nogroup") else None} if os.geteuid() == 0 else {}


def _group_exists(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throw-away Postgres cluster on 127.0.0.1 (trust auth, fsync off); yields
    the URL of its ``postgres`` database."""
    folder = Path(tempfile.mkdtemp(prefix="funes-pg-"))  # not under pytest's root-only tmp
    data, sockets = folder / "data", folder / "sockets"
    sockets.mkdir()
    user = _as_pg_user()
    if user:
        import pwd

        uid = pwd.getpwnam(PG_USER).pw_uid
        for path in (folder, sockets):
            os.chown(path, uid, -1)
    port = free_port()
    ctl = [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "log")]
    try:
        subprocess.run([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, cwd=folder, **user)
        subprocess.run([*ctl, "-w", "-o", f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c fsync=off",
                        "start"], check=True, capture_output=True, cwd=folder, **user)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*ctl, "-m", "fast", "-w", "stop"], capture_output=True, cwd=folder, **user)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def s3_server() -> Iterator[dict[str, str]]:
    """moto's S3 on 127.0.0.1 with one bucket; yields the AWS_* variables to reach it."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    variables = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "test-key-id",
                 "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_REGION": "us-east-1"}
    boto3.client("s3", endpoint_url=variables["AWS_ENDPOINT_URL"], region_name="us-east-1",
                 aws_access_key_id="test-key-id", aws_secret_access_key="test-secret").create_bucket(Bucket=BUCKET)
    try:
        yield variables
    finally:
        server.stop()


def dagster_home(folder: Path) -> Path:
    """A DAGSTER_HOME whose instance is the Postgres at ``$FUNES_DAGSTER_PG_URL``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
    (folder / "celery.yaml").write_text(CELERY_YAML, encoding="utf-8")
    return folder


@contextmanager
def celery_workers(count: int, env: Mapping[str, str], home: Path) -> Iterator[list[subprocess.Popen]]:
    """``count`` workers, one task at a time each, as deployed:
    ``dagster-celery worker start -A dagster_celery.app -y celery.yaml -n <name> -- --concurrency=1``;
    returns once all of them answer a ping."""
    from celery import Celery

    bin_folder = Path(sys.executable).parent  # dagster-celery starts `celery` from PATH
    env = {**env, "PATH": f"{bin_folder}{os.pathsep}{env.get('PATH', '')}"}
    command = str(bin_folder / "dagster-celery")
    workers = [subprocess.Popen([command, "worker", "start", "-A", "dagster_celery.app", "-y", str(home / "celery.yaml"),
                                 "-n", f"funes-{number}", "--loglevel", "WARNING", "--", "--concurrency=1"],
                                env=dict(env), start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=open(home / f"worker-{number}.log", "wb"))  # noqa: SIM115 - closed with the process
               for number in range(1, count + 1)]
    app = Celery(broker=env["FUNES_CELERY_BROKER"], backend=env["FUNES_CELERY_BROKER"])
    try:
        def ready() -> bool:
            exited = [worker.args for worker in workers if worker.poll() is not None]
            if exited:
                raise RuntimeError(f"a celery worker exited (log beside {home / 'celery.yaml'}): {exited[0]}")
            return len(app.control.ping(timeout=1.0) or []) >= count

        _wait(ready, f"{count} celery workers", timeout=60)
        yield workers
    finally:
        for worker in workers:  # the CLI, the celery main process and its pool child share a group
            try:
                os.killpg(worker.pid, 15)
            except ProcessLookupError:
                pass
        for worker in workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, 9)
                worker.wait()
        app.close()


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, set[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), set()).add(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.add(child)
            todo.append(child)
    return found
