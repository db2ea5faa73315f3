"""A memory on S3 (`--memory s3://…`), through Lance's own object store, against moto's
S3-compatible server on loopback: index into it, recall, get and status from it, and
publish it to the Hub."""

import json
import logging

import pytest

from hub_helpers import env_with, funes, local_ids, remote_ids, write_claude_session

BUCKET = "team-memory"


@pytest.fixture(scope="module")
def s3_endpoint():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch):
    import boto3

    variables = {"AWS_ENDPOINT_URL": s3_endpoint, "AWS_ACCESS_KEY_ID": "test-key-id",
                 "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_REGION": "us-east-1"}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1",
                          aws_access_key_id="test-key-id", aws_secret_access_key="test-secret")
    if BUCKET not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=BUCKET)
    return client


def copy_to_s3(funes_home, uri):
    """The built memory's table, written to `uri` by Lance (schema metadata included)."""
    import lance

    from funes.memory.location import location_for

    table = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table()
    lance.write_dataset(table, location_for(uri).table_uri, storage_options=location_for(uri).storage_options)


def recall_ids(query, memory=None):
    args = ["recall", query, "--no-rerank", "--json", "-k", "5", *(["--memory", memory] if memory else [])]
    result = funes(*args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_recall_get_and_status_over_s3_match_the_local_memory(memory_home, s3_env):
    uri = f"s3://{BUCKET}/shared"
    copy_to_s3(memory_home / ".funes", uri)
    for query in ("photo-realistic 3D digital twin of Earth", "which tests failed and why"):
        local, shared = recall_ids(query), recall_ids(query, uri)
        assert [h["id"] for h in shared] == [h["id"] for h in local]
        assert all(h["memory"] == uri for h in shared)
    status = funes("status", "--memory", uri, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["chunks"] == json.loads(funes("status", "--json").stdout)["chunks"]
    hit = local[0]
    window = funes("get", hit["session_id"], hit["turn_uuid"], "--memory", uri, "--format", "agent")
    assert window.returncode == 0 and hit["text"][:60] in window.stdout


@pytest.mark.slow
def test_index_into_s3_then_recall_from_another_home(s3_env, tmp_path):
    uri = f"s3://{BUCKET}/indexed"
    transcript = write_claude_session(tmp_path / "t" / "team.jsonl", "5e550000-0000-4000-8000-000000000005",
                                      ["How do we rotate the staging database credentials?",
                                       "Run the rotate-db workflow, then restart the api pods."])
    result = funes("index", str(transcript), "--memory", uri, "--yes")
    assert result.returncode == 0, result.stderr
    keys = [o["Key"] for o in s3_env.list_objects_v2(Bucket=BUCKET, Prefix="indexed/")["Contents"]]
    # Only the table is shared; the lock and BM25 segments stay on the machine that wrote them.
    assert all(key.startswith("indexed/chunks.lance/") for key in keys)
    assert any(key.startswith("indexed/chunks.lance/data/") for key in keys)

    elsewhere = env_with(FUNES_HOME=str(tmp_path / "teammate"))
    result = funes("recall", "rotate staging database credentials", "--memory", uri, "--no-rerank", "--json",
                   env=elsewhere)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["text"] == "How do we rotate the staging database credentials?"


@pytest.mark.slow
def test_a_memory_on_s3_publishes_to_the_hub(memory_home, s3_env, hub_env, hub_server):
    from funes.hub.push import push
    from funes.memory.location import location_for

    uri = f"s3://{BUCKET}/published"
    copy_to_s3(memory_home / ".funes", uri)
    report = push("test-user/from-s3", location=location_for(uri), assume_yes=True)
    assert report.pushed == len(local_ids(memory_home / ".funes"))
    assert remote_ids(hub_server, "test-user/from-s3") == local_ids(memory_home / ".funes")
