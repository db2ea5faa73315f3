"""The Dagster code location: real runs on ephemeral instances over the fixtures."""

import dataclasses
import json
import os
import warnings
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from funes.pipelines.definitions import defs
from memory_helpers import make_agent_home, same_vector

warnings.filterwarnings("ignore", category=dg.BetaWarning)

CHAIN_KEYS = [dg.AssetKey(name) for name in ("session_turns", "redacted_chunks", "chunk_embeddings",
                                            "memory_chunks")]


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def agent_home(isolated_env):
    return make_agent_home(isolated_env)


def _sensor_tick(instance, cursor=None):
    from funes.assets.resources import MemoryResource
    from funes.pipelines.automation import transcript_sensor

    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"memory": MemoryResource()})
    return transcript_sensor(context)


def _index_job():
    return defs.resolve_job_def("index_sessions")


def _row_count():
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    return Memory.open(local_memory()).scan(["id"]).num_rows


def _stored_session_ids():
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    return set(Memory.open(local_memory()).scan(["session_id"]).column("session_id").to_pylist())


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert {"session_turns", "redacted_chunks", "chunk_embeddings", "memory_chunks", "dense_backfill",
            "memory_maintenance"} <= keys
    assert defs.resolve_job_def("index_sessions").executor_def.name == "in_process"


def test_sensor_adds_partitions_and_requests_each_changed_session_once(agent_home, instance):
    result = _sensor_tick(instance)
    added = result.dynamic_partitions_requests[0].partition_keys
    assert any(key.startswith("claude_code--") for key in added)
    assert any(key.startswith("hermes--") for key in added)
    run_keys = [r.run_key for r in result.run_requests]
    assert len(run_keys) == len(set(run_keys)) and all(":" in key for key in run_keys)
    instance.add_dynamic_partitions("sessions", added)
    again = _sensor_tick(instance, result.cursor)
    assert again.run_requests == [] and again.dynamic_partitions_requests == []
    # A grown transcript is requested again, under a new run key.
    transcript = next((agent_home / ".claude" / "projects").rglob("claude_session.jsonl"))
    with transcript.open("a") as handle:
        handle.write(json.dumps({"type": "user", "uuid": "u-new", "sessionId": "claude_session",
                                 "timestamp": "2026-06-13T00:00:00Z",
                                 "message": {"role": "user", "content": "one more thing"}}) + "\n")
    grown = _sensor_tick(instance, again.cursor)
    assert [r.partition_key for r in grown.run_requests] == ["claude_code--claude_session"]
    assert grown.run_requests[0].run_key not in run_keys


def test_index_chain_materialises_partitions_into_the_memory(agent_home, instance):
    tick = _sensor_tick(instance)
    instance.add_dynamic_partitions("sessions", tick.dynamic_partitions_requests[0].partition_keys)
    keys = ["claude_code--claude_session", "codex--019ef2fb-6574-7f83-bd99-9118713271f2", "hermes--s_main"]
    for key in keys:
        result = _index_job().execute_in_process(instance=instance, partition_key=key)
        assert result.success
    assert _stored_session_ids() == {"claude_session", "019ef2fb-6574-7f83-bd99-9118713271f2", "s_main"}
    materialized = instance.get_materialized_partitions(dg.AssetKey("memory_chunks"))
    assert set(keys) <= materialized
    # Materialising an unchanged partition again parses and stores nothing.
    rows = _row_count()
    again = _index_job().execute_in_process(instance=instance, partition_key=keys[0])
    events = again.asset_materializations_for_node("memory_chunks")
    assert events[0].metadata["unchanged"].value is True and _row_count() == rows


@pytest.mark.slow
def test_a_backfill_of_many_sessions_runs_as_one_run(agent_home, instance):
    tick = _sensor_tick(instance)
    keys = tick.dynamic_partitions_requests[0].partition_keys
    instance.add_dynamic_partitions("sessions", keys)
    ordered = instance.get_dynamic_partitions("sessions")
    result = _index_job().execute_in_process(instance=instance, tags={
        "dagster/asset_partition_range_start": ordered[0],
        "dagster/asset_partition_range_end": ordered[-1]})
    assert result.success
    assert len(_stored_session_ids()) == len(keys)
    assert instance.get_materialized_partitions(dg.AssetKey("memory_chunks")) == set(ordered)
    # Each partition carries its own session's figures, not the run's totals.
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    table = Memory.open(local_memory()).scan(["harness", "session_id"])
    per_session = Counter(f"{h}--{s}" for h, s in zip(table.column("harness").to_pylist(),
                                                      table.column("session_id").to_pylist()))
    for event in result.asset_materializations_for_node("memory_chunks"):
        assert event.metadata["chunks_added"].value == per_session[event.partition], event.partition


def test_an_unredacted_secret_blocks_the_write(agent_home, instance, monkeypatch):
    from fake_secrets import generate_secrets

    import funes.indexing as indexing

    secret = next(s for s in generate_secrets(seed=3) if s.kind == "github_classic_pat")
    real_chunk_session = indexing.chunk_session

    def leaky(session, **kwargs):  # a redaction bug: one chunk keeps its secret
        chunks = list(real_chunk_session(session, **kwargs))
        chunks[0] = dataclasses.replace(chunks[0], text=f"token {secret.value}")
        return chunks

    monkeypatch.setattr(indexing, "chunk_session", leaky)
    _sensor_tick(instance)
    instance.add_dynamic_partitions("sessions", ["claude_code--claude_session"])
    result = _index_job().execute_in_process(instance=instance, partition_key="claude_code--claude_session",
                                             raise_on_error=False)
    assert not result.success
    checks = result.get_asset_check_evaluations()
    failed = [c for c in checks if c.check_name == "no_unredacted_secrets"]
    assert failed and not failed[0].passed
    assert secret.value not in repr(failed[0].metadata) and secret.value not in (failed[0].description or "")
    assert "memory_chunks" not in {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


# --------------------------------------------------------------------------- one path


def _rows(uri):
    from funes.memory.location import location_for
    from funes.memory.reader import Memory

    table = Memory.open(location_for(uri)).scan(["id", "text", "block_type", "vector"])
    return {row["id"]: row for row in table.to_pylist()}


def _chain_config(memory, *, include_thinking=True, roots=None):
    config = {"resources": {"memory": {"config": {"memory": memory}},
                            "chain_store": {"config": {"memory": memory}}},
              "ops": {"redacted_chunks": {"config": {"include_thinking": include_thinking}}}}
    if roots is not None:
        config["resources"]["traces"] = {"config": {"roots": roots}}
    return config


def _backfill(instance, keys, run_config):
    instance.add_dynamic_partitions("sessions", keys)
    ordered = [key for key in instance.get_dynamic_partitions("sessions") if key in set(keys)]
    return _index_job().execute_in_process(instance=instance, run_config=run_config, raise_on_error=False, tags={
        "dagster/asset_partition_range_start": ordered[0], "dagster/asset_partition_range_end": ordered[-1]})


@pytest.mark.slow
def test_the_chain_and_funes_index_store_identical_rows_without_thinking(agent_home, instance, tmp_path):
    """`funes index --no-thinking` and a Dagster backfill with include_thinking false
    run the same stage functions: same ids, texts and vectors."""
    from funes.cli.index_cmd import run_index
    from funes.discovery import discover
    from funes.memory.location import location_for

    from memory_helpers import LONG_SESSION

    # Sessions with thinking blocks (Claude, pi), the long one left out for time.
    units = [u for u in discover() if u.harness in ("claude_code", "pi") and LONG_SESSION not in u.key]
    cli_memory, chain_memory = str(tmp_path / "by-cli"), str(tmp_path / "by-chain")
    assert run_index(location_for(cli_memory), units, include_thinking=False)
    keys = sorted({unit.key for unit in units})
    assert _backfill(instance, keys, _chain_config(chain_memory, include_thinking=False)).success
    by_cli, by_chain = _rows(cli_memory), _rows(chain_memory)
    assert by_cli.keys() == by_chain.keys() and len(by_cli) > 20
    assert "thinking" not in {row["block_type"] for row in by_cli.values()}
    for chunk_id, row in by_cli.items():
        assert row["text"] == by_chain[chunk_id]["text"]
        # Same model, same inputs; batches differ (backlog vs per session), hence allclose.
        assert same_vector(row["vector"], by_chain[chunk_id]["vector"]), chunk_id
    # The chain's intermediate values are gone once stored (parsed turns are unredacted).
    assert not any((tmp_path / "by-chain" / "pipeline").rglob("*.pickle"))


def test_a_partition_found_nowhere_fails_the_run(agent_home, instance):
    result = _backfill(instance, ["claude_code--no-such-session"], _chain_config("local"))
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.step_failure_data.error.message
    assert "no transcript found for partition(s) claude_code--no-such-session" in message
    assert "roots" in message
    assert not instance.get_materialized_partitions(dg.AssetKey("memory_chunks"))


def test_a_partition_resolves_through_a_configured_trace_root(isolated_env, instance, tmp_path):
    """Another machine's transcripts, on shared storage: no agent home, no coverage entry."""
    from trace_helpers import REAL

    root = tmp_path / "shared" / "claude"
    root.mkdir(parents=True)
    (root / "claude_session.jsonl").write_bytes((REAL / "claude_session.jsonl").read_bytes())
    result = _backfill(instance, ["claude_code--claude_session"], _chain_config("local", roots=[str(root)]))
    assert result.success
    assert _stored_session_ids() == {"claude_session"}


def test_raw_traces_are_observed_at_their_signature(agent_home, instance):
    from funes.discovery import discover

    key = "claude_code--claude_session"
    instance.add_dynamic_partitions("sessions", [key])

    def observed_version():
        assert defs.resolve_job_def("observe_traces").execute_in_process(instance=instance).success
        record = instance.fetch_observations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("raw_traces"),
                                                                   asset_partitions=[key]), limit=1).records[0]
        return record.asset_observation.data_version

    signature = next(u.signature for u in discover() if u.key == key)
    assert observed_version() == signature
    transcript = next((agent_home / ".claude" / "projects").rglob("claude_session.jsonl"))
    with transcript.open("a") as handle:
        handle.write(json.dumps({"type": "user", "uuid": "u-grown", "sessionId": "claude_session",
                                 "timestamp": "2026-06-13T00:00:00Z",
                                 "message": {"role": "user", "content": "grown"}}) + "\n")
    assert observed_version() not in (None, signature)


# --------------------------------------------------------------------------- honest records


def test_cli_work_is_recorded_as_runless_events_with_each_sessions_report(agent_home, tmp_path, monkeypatch):
    """`funes index` records what it did on $DAGSTER_HOME: per session partition, the
    transcript observed at its signature and each stage with that session's figures;
    no run, and the writer lock is free when the command returns."""
    from funes.cli.index_cmd import run_index
    from funes.discovery import discover
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter

    dagster_home = tmp_path / "their-dagster"
    dagster_home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.delenv("FUNES_NO_DAGSTER_RECORD")
    from memory_helpers import LONG_SESSION

    units = [u for u in discover() if u.harness == "claude_code" and LONG_SESSION not in u.key]
    assert run_index(local_memory(), units)
    assert MemoryWriter.lock_free(local_memory())
    assert not (Path(os.environ["FUNES_HOME"]) / "dagster").exists()  # the user's DAGSTER_HOME, not ours

    instance = dg.DagsterInstance.from_config(str(dagster_home))
    assert instance.get_runs() == []
    table = Memory.open(local_memory()).scan(["session_id"])
    rows = Counter(f"claude_code--{s}" for s in table.column("session_id").to_pylist())
    assert set(instance.get_dynamic_partitions("sessions")) == set(rows)
    for key, count in rows.items():
        records = instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("memory_chunks"), asset_partitions=[key]), limit=5).records
        assert len(records) == 1 and records[0].run_id == ""
        metadata = records[0].asset_materialization.metadata
        assert metadata["chunks_added"].value == count and metadata["turns"].value > 0
        assert records[0].asset_materialization.tags["funes/origin"] == "cli"
        observation = instance.fetch_observations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("raw_traces"), asset_partitions=[key]), limit=1).records[0]
        assert observation.asset_observation.data_version == next(u.signature for u in units if u.key == key)
    embedded = instance.fetch_materializations(dg.AssetKey("dense_backfill"), limit=1).records[0]
    assert embedded.asset_materialization.metadata["embedded"].value == Memory.open(local_memory()).stats().embedded
    # Nothing changed: a second index records nothing more.
    assert run_index(local_memory(), units)
    assert len(instance.fetch_materializations(dg.AssetKey("memory_chunks"), limit=100).records) == len(rows)


# --------------------------------------------------------------------------- what runs on its own


@pytest.mark.slow
def test_the_hourly_sweep_adds_partitions_and_requests_changed_sessions(agent_home, instance):
    from funes.assets.resources import MemoryResource
    from funes.pipelines.automation import hourly_sweep

    context = dg.build_schedule_context(instance=instance, resources={"memory": MemoryResource()})
    requests = hourly_sweep(context)
    keys = set(instance.get_dynamic_partitions("sessions"))
    assert {r.partition_key for r in requests} == keys and "hermes--s_main" in keys
    for key in ["claude_code--claude_session"]:
        assert _index_job().execute_in_process(instance=instance, partition_key=key).success
    again = hourly_sweep(dg.build_schedule_context(instance=instance, resources={"memory": MemoryResource()}))
    assert {r.partition_key for r in again} == keys - {"claude_code--claude_session"}


@pytest.mark.slow
def test_dense_backfill_and_maintenance_run_and_a_model_mismatch_blocks_the_chain(agent_home, instance):
    from funes.cli.index_cmd import run_index
    from funes.discovery import discover
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    units = [u for u in discover() if u.key == "claude_code--claude_session"]
    assert run_index(local_memory(), units, budget_s=0)  # lexical only: everything pending
    pending = sum(Memory.open(local_memory()).stats().pending_by_tier.values())
    assert pending  # what the tier policy embeds
    backfill = dg.materialize([defs.get_assets_def("dense_backfill")], instance=instance,
                              resources={"memory": defs.resources["memory"], "embedder": defs.resources["embedder"]},
                              selection=["dense_backfill"])
    metadata = backfill.asset_materializations_for_node("dense_backfill")[0].metadata
    assert metadata["embedded"].value == pending and metadata["pending"].value == 0
    maintained = dg.materialize([defs.get_assets_def("memory_maintenance")], instance=instance,
                                resources={"memory": defs.resources["memory"]}, selection=["memory_maintenance"])
    assert maintained.success and maintained.asset_materializations_for_node("memory_maintenance")

    # A memory stamped with another model: the blocking check fails and nothing is stored.
    import lance

    lance.dataset(local_memory().table_uri).update_schema_metadata({"funes.embedding.model_id": "someone/else"})
    key = "codex--019ef2fb-6574-7f83-bd99-9118713271f2"
    result = _backfill(instance, [key], _chain_config("local"))
    assert not result.success
    check = next(c for c in result.get_asset_check_evaluations() if c.check_name == "embedding_model_pinned")
    assert not check.passed and "someone/else" in (check.description or "")
    assert _stored_session_ids() == {"claude_session"}
    assert key not in instance.get_materialized_partitions(dg.AssetKey("memory_chunks"))


@pytest.mark.slow
def test_the_chain_runs_under_the_multiprocess_executor(agent_home, tmp_path):
    """Each step in its own process, from the code location as deployed
    (`dagster job execute -m funes.pipelines.definitions`), values through the chain store."""
    import subprocess
    import sys

    from funes.discovery import discover

    from memory_helpers import LONG_SESSION

    keys = sorted(u.key for u in discover() if u.harness == "claude_code" and LONG_SESSION not in u.key)
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.add_dynamic_partitions("sessions", keys)
    ordered = keys
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "FUNES_EXECUTOR": "multiprocess"}
    tags = {"dagster/asset_partition_range_start": ordered[0], "dagster/asset_partition_range_end": ordered[-1]}
    done = subprocess.run([sys.executable, "-m", "dagster", "job", "execute", "-m", "funes.pipelines.definitions",
                           "-j", "index_sessions", "--tags", json.dumps(tags)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _stored_session_ids() == {key.split("--", 1)[1] for key in keys}
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        run = instance.get_runs()[0]
        assert run.status == dg.DagsterRunStatus.SUCCESS
        starts = [e for e in instance.all_logs(run.run_id) if e.dagster_event and e.dagster_event.event_type_value == "STEP_START"]
        pids = {e.step_key: e.dagster_event.pid for e in starts}
        assert {"session_turns", "redacted_chunks", "chunk_embeddings", "memory_chunks"} <= set(pids)
        assert len(set(pids.values())) == len(pids)  # one process per step
        assert instance.get_materialized_partitions(dg.AssetKey("memory_chunks")) == set(keys)


@pytest.mark.slow
def test_hub_publication_failures_name_its_config_not_cli_flags(memory_home, hub_env, instance, monkeypatch):
    """A first push without `assume_yes` fails the run in Dagster's terms; with it, the push lands."""
    from funes.assets.publication import hub_publication

    repo_id = "test-user/pipeline-first-push"
    resources = {"memory": defs.resources["memory"]}

    def publish(**config):
        return dg.materialize([hub_publication], instance=instance, resources=resources, raise_on_error=False,
                              run_config={"ops": {"hub_publication": {"config": config}}})

    monkeypatch.delenv("FUNES_HUB_REMOTE", raising=False)
    nowhere = publish()
    assert not nowhere.success
    refused = publish(remote=repo_id)
    assert not refused.success
    message = next(e for e in refused.all_events if e.event_type_value == "STEP_FAILURE").step_failure_data.error.message
    assert "`assume_yes: true` in hub_publication's config" in message and "--yes" not in message
    assert "PushRefused" not in message
    published = publish(remote=repo_id, assume_yes=True)
    assert published.success
    assert published.asset_materializations_for_node("hub_publication")[0].metadata["pushed"].value > 0
