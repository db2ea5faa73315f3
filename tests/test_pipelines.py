"""The Dagster code location: real runs on ephemeral instances over the fixtures."""

import dataclasses
import json
import warnings

import dagster as dg
import pytest

from funes.pipelines.definitions import defs
from memory_helpers import make_agent_home

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
    from funes.pipelines.automation import transcript_sensor
    from funes.pipelines.resources import MemoryResource

    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"memory": MemoryResource()})
    return transcript_sensor(context)


def _index_job():
    return defs.resolve_job_def("index_sessions")


def _stored_session_ids():
    from funes.memory.location import local_memory
    from funes.memory.store import Memory

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
    # Materialising an unchanged partition again stores nothing new.
    again = _index_job().execute_in_process(instance=instance, partition_key=keys[0])
    events = again.asset_materializations_for_node("memory_chunks")
    assert events[0].metadata["chunks_added"].value == 0


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


def test_an_unredacted_secret_blocks_the_write(agent_home, instance, monkeypatch):
    from fake_secrets import generate_secrets

    import funes.assets.ingest as ingest

    secret = next(s for s in generate_secrets(seed=3) if s.kind == "github_classic_pat")
    real_chunk_session = ingest.chunk_session

    def leaky(session, **kwargs):  # a redaction bug: one chunk keeps its secret
        chunks = list(real_chunk_session(session, **kwargs))
        chunks[0] = dataclasses.replace(chunks[0], text=f"token {secret.value}")
        return chunks

    monkeypatch.setattr(ingest, "chunk_session", leaky)
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


def test_recording_a_cli_run_shows_it_in_the_instance(memory_home, tmp_path, monkeypatch):
    from funes.memory.location import local_memory
    from funes.pipelines import recording

    monkeypatch.setenv("FUNES_HOME", str(memory_home / ".funes"))
    keys = ["claude_code--claude_session", "hermes--s_main"]
    assert recording.record(local_memory().uri, keys, origin="cli")
    from funes.pipelines.instance import funes_instance

    instance = funes_instance()
    runs = instance.get_runs()
    assert runs and runs[0].tags[recording.ORIGIN_TAG] == "cli"
    assert set(keys) <= instance.get_materialized_partitions(dg.AssetKey("memory_chunks"))
    # Recording found the sessions up to date: nothing was parsed again.
    events = instance.fetch_materializations(dg.AssetKey("session_turns"), limit=5).records
    assert events[0].asset_materialization.metadata["sessions_parsed"].value == 0


def test_spooled_recordings_are_drained_by_one_recorder(memory_home, monkeypatch):
    from funes.memory.location import local_memory
    from funes.pipelines import recording

    monkeypatch.setenv("FUNES_HOME", str(memory_home / ".funes"))
    monkeypatch.delenv("FUNES_NO_DAGSTER_RECORD")
    monkeypatch.setattr(recording.subprocess, "Popen", lambda *a, **k: None)  # drained below, in-process
    for key in ("claude_code--claude_session", "hermes--s_main", "hermes--s_sub"):
        recording.record_in_background(local_memory(), [key], origin="hook")
    assert len(list(recording._spool().glob("*.json"))) == 3
    assert recording.drain()
    assert list(recording._spool().glob("*.json")) == []
    from funes.pipelines.instance import funes_instance

    runs = funes_instance().get_runs()
    assert len(runs) == 1 and runs[0].tags[recording.ORIGIN_TAG] == "hook"
