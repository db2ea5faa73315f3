"""The index chain as deployed across machines, every service started here on loopback
(tests/helpers/distributed_services.py): a Postgres-backed Dagster instance, the dagster-celery
executor with a Redis broker and two worker processes, and an ``s3://`` memory on moto's
S3 server holding the chain store too.  Four backfills of six sessions each run at once;
the memory must equal what ``funes index`` builds from the same transcripts."""

import json
import os
import subprocess
import sys
import warnings

import dagster as dg
import pytest

from distributed_services import (BUCKET, MISSING, TOPICS, celery_workers, dagster_home, descendants, postgres_server,
                                  redis_server, s3_server, synthetic_sessions)
from memory_helpers import same_vector

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(bool(MISSING), reason=f"needs {MISSING} from the OS packages (.ci/run installs them)")]
warnings.filterwarnings("ignore", category=dg.BetaWarning)

SESSIONS, PER_RUN, WORKERS = 24, 6, 2
def _rows(uri):
    from funes.memory.location import location_for
    from funes.memory.reader import Memory

    table = Memory.open(location_for(uri)).scan(["id", "text", "session_id", "vector"])
    return {row["id"]: row for row in table.to_pylist()}


def _step_events(instance, run_id, kind):
    return [e for e in instance.all_logs(run_id) if e.dagster_event and e.dagster_event.event_type_value == kind]


def test_a_celery_backfill_on_postgres_and_s3_builds_the_memory_funes_index_builds(tmp_path, monkeypatch):
    from funes.cli.index_cmd import run_index
    from funes.discovery import discover
    from funes.memory.location import location_for

    root = tmp_path / "shared-traces"
    keys = synthetic_sessions(root, SESSIONS)
    memory = f"s3://{BUCKET}/team"
    with redis_server() as broker, postgres_server() as pg_url, s3_server() as aws:
        for name, value in aws.items():
            monkeypatch.setenv(name, value)
        home = dagster_home(tmp_path / "dagster")
        env = {**os.environ, **aws, "DAGSTER_HOME": str(home), "FUNES_DAGSTER_PG_URL": pg_url,
               "FUNES_EXECUTOR": "celery", "FUNES_CELERY_BROKER": broker, "FUNES_MEMORY": memory,
               "FUNES_TRACE_ROOTS": str(root)}
        monkeypatch.setenv("FUNES_DAGSTER_PG_URL", pg_url)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            instance.add_dynamic_partitions("sessions", keys)
        # Set before concurrent runs start: each would otherwise insert the pool's default
        # limit on first use, and the losers of that race fail (UniqueViolation).
        subprocess.run([sys.executable, "-m", "dagster", "instance", "concurrency", "set", "lance_writer", "1"],
                       env=env, check=True, capture_output=True)
        with celery_workers(WORKERS, env, home) as workers:
            ranges = [keys[start:start + PER_RUN] for start in range(0, SESSIONS, PER_RUN)]
            runs = [subprocess.Popen(
                [sys.executable, "-m", "dagster", "job", "execute", "-m", "funes.pipelines.definitions",
                 "-j", "index_sessions", "--tags", json.dumps({"dagster/asset_partition_range_start": part[0],
                                                              "dagster/asset_partition_range_end": part[-1]})],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for part in ranges]
            outputs = [run.communicate(timeout=900)[0] for run in runs]
            for run, output in zip(runs, outputs):
                assert run.returncode == 0, output[-4000:]
            worker_processes = {pid for worker in workers for pid in descendants(worker.pid)}

        with dg.DagsterInstance.from_config(str(home)) as instance:
            records = instance.get_runs()
            assert len(records) == len(ranges) and all(r.status == dg.DagsterRunStatus.SUCCESS for r in records)
            assert instance.get_materialized_partitions(dg.AssetKey("memory_chunks")) == set(keys)
            step_pids = {e.dagster_event.pid for r in records for e in _step_events(instance, r.run_id, "STEP_START")}
            # Every step ran on a worker, and both workers took steps.
            assert step_pids <= worker_processes and len(step_pids) >= WORKERS, (step_pids, worker_processes)
            assert not step_pids & {run.pid for run in runs}
            # One writer at a time: the lance_writer pool (one slot, claimed in Postgres)
            # lets one memory_chunks step write at once across the concurrent runs.
            windows = sorted(
                (next(e.timestamp for e in _step_events(instance, r.run_id, "STEP_START") if e.step_key == "memory_chunks"),
                 next(e.timestamp for e in _step_events(instance, r.run_id, "STEP_SUCCESS") if e.step_key == "memory_chunks"))
                for r in records)
            assert all(later[0] >= earlier[1] for earlier, later in zip(windows, windows[1:])), windows
            pool = instance.event_log_storage.get_concurrency_info("lance_writer")
            assert pool.slot_count == 1 and not pool.claimed_slots  # one slot, released by every run
            # Each partition carries its own session's figures, not its run's totals.
            record = instance.fetch_materializations(dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("memory_chunks"), asset_partitions=[keys[0]]), limit=1).records[0]
            assert record.asset_materialization.metadata["chunks_added"].value == len(TOPICS)

        by_chain = _rows(memory)
        # The chain's values went through s3:// and are gone once stored.
        import boto3

        s3 = boto3.client("s3", endpoint_url=aws["AWS_ENDPOINT_URL"], region_name="us-east-1")
        chain_objects = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="team/pipeline/").get("Contents", [])]
        assert chain_objects and not [key for key in chain_objects if key.endswith(".pickle")], chain_objects
        assert s3.list_objects_v2(Bucket=BUCKET, Prefix="team/chunks.lance/").get("KeyCount", 0) > 0

    by_cli_memory = str(tmp_path / "by-cli")
    assert run_index(location_for(by_cli_memory), discover(root))
    by_cli = _rows(by_cli_memory)
    assert by_cli.keys() == by_chain.keys() and len(by_cli) == SESSIONS * len(TOPICS)
    assert {row["session_id"] for row in by_chain.values()} == {key.split("--", 1)[1] for key in keys}
    for chunk_id, row in by_cli.items():
        assert row["text"] == by_chain[chunk_id]["text"]
        assert same_vector(row["vector"], by_chain[chunk_id]["vector"]), chunk_id
