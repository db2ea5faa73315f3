"""Reading a Hub memory: `--memory org/repo` from a home that never indexed anything,
pinned to a commit, fetched once into the HF cache, then read with no request at all."""

import json
import os
import subprocess
import sys

import pytest

from hub_helpers import chunk, env_with, funes, index_into_local_memory, run_cli, write_claude_session, write_memory

pytestmark = pytest.mark.usefixtures("hub_env")

QUERIES = [
    "photo-realistic 3D digital twin of Earth",
    "download the Three.js library files",
    "which tests failed and why",
    "agent that can execute a happy-path scenario",
    "database migration",
]


@pytest.fixture
def repo_id(request):
    return "test-user/" + request.node.name.replace("[", "-").rstrip("]")


@pytest.fixture
def published(memory_home, repo_id):
    """The built memory pushed to `repo_id`; returns its chunk count."""
    from funes.hub.push import push

    return push(repo_id, assume_yes=True).pushed


@pytest.fixture
def fresh_home(tmp_path):
    """The environment of another machine: a FUNES_HOME that never indexed anything
    and an empty HF cache.  Its head stays pinned for a day, not the default minute,
    so that what a test expects to be read from the pin does not depend on how long
    this host takes between two commands; tests that want the head resolved again
    say FUNES_HUB_HEAD_TTL=0."""
    return env_with(FUNES_HOME=str(tmp_path / "fresh-host"), HF_HOME=str(tmp_path / "fresh-hf"),
                    HF_HUB_CACHE=str(tmp_path / "fresh-hf" / "hub"), FUNES_HUB_HEAD_TTL="86400")


def recall_batch(memory, env=None):
    queries = "\n".join(json.dumps({"qid": n, "query": q}) for n, q in enumerate(QUERIES))
    result = subprocess.run([sys.executable, "-m", "funes.cli", "recall", "--batch", "/dev/stdin", "--no-rerank",
                             "-k", "5", *(["--memory", memory] if memory else [])],
                            input=queries, capture_output=True, text=True, timeout=300, env=env or os.environ.copy())
    assert result.returncode == 0, result.stderr
    return {line["qid"]: line["hits"] for line in map(json.loads, result.stdout.splitlines())}


@pytest.mark.slow
def test_recall_from_a_fresh_home_returns_the_same_top_hits_as_local(published, repo_id, fresh_home, hub_server):
    local = recall_batch(None)
    remote = recall_batch(repo_id, fresh_home)
    for qid in local:
        assert [h["id"] for h in remote[qid]] == [h["id"] for h in local[qid]], QUERIES[qid]
        assert [h["scores"]["bm25"] for h in remote[qid]] == [h["scores"]["bm25"] for h in local[qid]]
        assert all(h["memory"] == repo_id for h in remote[qid])
    hit = local[0][0]
    result = funes("get", hit["session_id"], hit["turn_uuid"], "--memory", f"hf://datasets/{repo_id}",
                   "--format", "agent", env=fresh_home)
    assert result.returncode == 0, result.stderr
    assert hit["text"][:80] in result.stdout


@pytest.mark.slow
def test_a_warm_recall_makes_no_request_and_only_live_files_are_fetched(memory_home, repo_id, fresh_home,
                                                                          hub_server, tmp_path):
    from funes.hub.push import push

    push(repo_id, assume_yes=True)
    index_into_local_memory([write_claude_session(memory_home / "later.jsonl", "1a7e0000-0000-4000-8000-000000000001",
                                                  ["One more session, pushed later."])])
    second = push(repo_id)

    hub_server.reset_counts()
    cold = recall_batch(repo_id, fresh_home)
    assert hub_server.counts["GET info"] == 1, hub_server.requests
    snapshot = tmp_path / "fresh-hf" / "hub" / f"datasets--{repo_id.replace('/', '--')}" / "snapshots" / second.commit
    manifests = list((snapshot / "chunks.lance" / "_versions").iterdir())
    assert len(manifests) == 1  # the newest only: superseded versions are never fetched
    data_files = len(list((snapshot / "chunks.lance" / "data").iterdir()))
    # The manifest and the live data files, once each.
    assert hub_server.counts["GET resolve"] == hub_server.counts["HEAD resolve"] == 1 + data_files

    hub_server.reset_counts()
    assert recall_batch(repo_id, fresh_home) == cold
    assert hub_server.request_count == 0, hub_server.requests


def repo_requests(hub_server, repo_id):
    """The requests about `repo_id` (status also looks up the reranker's model)."""
    return [request for request in hub_server.requests if repo_id in request]


def status_chunks(memory, env):
    result = funes("status", "--memory", memory, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["chunks"]


@pytest.mark.slow
def test_the_next_command_sees_a_new_push(published, memory_home, repo_id, fresh_home, hub_server):
    origin = os.environ.copy()
    assert status_chunks(repo_id, fresh_home) == published
    index_into_local_memory([write_claude_session(memory_home / "new.jsonl", "2b7e0000-0000-4000-8000-000000000002",
                                                  ["A turn pushed after the reader pinned the head."])])
    assert funes("push", repo_id, env=origin).returncode == 0

    # The pushing host sees its own push at once: the push pinned the new head.
    assert status_chunks(repo_id, origin) == published + 1
    # Elsewhere the head stays pinned for FUNES_HUB_HEAD_TTL seconds (no request to the repo) ...
    hub_server.reset_counts()
    assert status_chunks(repo_id, fresh_home) == published
    assert repo_requests(hub_server, repo_id) == []
    # ... and the first command after it resolves the head again and fetches only what is new:
    # the head, then the new manifest and data file.
    hub_server.reset_counts()
    assert status_chunks(repo_id, {**fresh_home, "FUNES_HUB_HEAD_TTL": "0"}) == published + 1
    gets = [request.split("?")[0] for request in repo_requests(hub_server, repo_id) if request.startswith("GET")]
    assert [get.split("/")[-2] for get in gets] == ["revision", "_versions", "data"], gets


def test_offline_reads_the_last_commit_read(published, repo_id, hub_server, monkeypatch, capsys, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "reader"))
    assert run_cli("status", "--memory", repo_id) == 0
    monkeypatch.setenv("FUNES_HUB_HEAD_TTL", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    capsys.readouterr()
    hub_server.reset_counts()
    assert run_cli("status", "--memory", repo_id, "--json") == 0
    assert json.loads(capsys.readouterr().out)["chunks"] == published
    assert repo_requests(hub_server, repo_id) == []
    assert run_cli("status", "--memory", "test-user/never-read") == 6
    assert capsys.readouterr().err == ("funes: hf://datasets/test-user/never-read is not cached on this machine"
                                       " and HF_HUB_OFFLINE is set\n")


def test_an_unreachable_hub_falls_back_to_the_pinned_commit(published, repo_id, hub_server, monkeypatch, capsys,
                                                            tmp_path):
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "reader"))
    assert run_cli("status", "--memory", repo_id) == 0
    monkeypatch.setenv("FUNES_HUB_HEAD_TTL", "0")
    hub_server.fail_next("info", status=503)
    capsys.readouterr()
    assert run_cli("status", "--memory", repo_id, "--json") == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["chunks"] == published
    assert captured.err.startswith(f"funes: warning: cannot read {repo_id} on {hub_server.endpoint}: HTTP 503")
    assert f"reading hf://datasets/{repo_id} as of commit" in captured.err and captured.err.count("\n") == 1


def test_remote_errors_are_one_line(hub_server, repo_id, monkeypatch, capsys):
    from huggingface_hub import HfApi

    assert run_cli("status", "--memory", "test-user/no-such-memory") == 3
    assert capsys.readouterr().err == (f"funes: no dataset repo test-user/no-such-memory on {hub_server.endpoint}"
                                       " (or it is private: set HF_TOKEN to a token that can read it)\n")
    HfApi(endpoint=hub_server.endpoint, token=hub_server.token).create_repo(repo_id, repo_type="dataset")
    assert run_cli("recall", "anything", "--memory", repo_id) == 3
    assert capsys.readouterr().err == (f"funes: hf://datasets/{repo_id} holds no funes memory yet"
                                       " (chunks.lance is missing): push to it first\n")
    assert run_cli("recall", "anything", "--memory", "hf://models/test-user/x") == 2


def test_a_remote_embedded_with_another_model_is_refused_in_one_line(repo_id, capsys):
    from funes.embedding import IDENTITY
    from funes.hub.push import push

    other = {**IDENTITY.to_metadata(), "funes.embedding.model_id": "acme/other-embedder",
             "funes.embedding.revision": "0" * 64}
    write_memory([chunk("s-other", turn, f"turn {turn}") for turn in range(2)], identity=other)
    push(repo_id, assume_yes=True)
    assert run_cli("recall", "turn", "--memory", repo_id) == 4
    err = capsys.readouterr().err
    assert err.startswith(f"funes: {repo_id} was embedded with acme/other-embedder (revision 000000000000, dim 384)")
    assert err.endswith("it cannot be recalled here\n") and err.count("\n") == 1


def test_the_bm25_index_is_derived_once_per_commit(published, memory_home, repo_id, monkeypatch, tmp_path):
    from funes.hub.push import push
    from funes.hub.reader import hub_location
    from funes.memory import lexical

    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "reader"))
    first = hub_location(repo_id)
    manifest = first.lexical_dir / "manifest.json"
    assert manifest.is_file()
    built = []
    monkeypatch.setattr(lexical.Segment, "build", lambda *a, real=lexical.Segment.build: built.append(a) or real(*a))
    assert hub_location(repo_id) == first and not built  # warm: loaded, not tokenized again

    monkeypatch.setenv("FUNES_HOME", str(memory_home / ".funes"))
    index_into_local_memory([write_claude_session(memory_home / "more.jsonl", "3c7e0000-0000-4000-8000-000000000003",
                                                  ["Yet another turn."])])
    push(repo_id)
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "reader"))
    monkeypatch.setenv("FUNES_HUB_HEAD_TTL", "0")
    built.clear()
    second = hub_location(repo_id)
    assert second.sha != first.sha
    # Seeded with the previous commit's index: only the new chunk is tokenized.
    assert sum(len(args[1]) for args in built) == 1


def test_datasets_load_dataset_reads_a_published_memory(published, repo_id, tmp_path):
    script = (
        "import datasets, json, sys; "
        "ds = datasets.load_dataset(sys.argv[1], split='train'); "
        "print(json.dumps({'rows': ds.num_rows, 'columns': ds.column_names}))"
    )
    env = env_with(HF_DATASETS_CACHE=str(tmp_path / "datasets-cache"))
    result = subprocess.run([sys.executable, "-c", script, repo_id], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert loaded["rows"] == published
    assert {"id", "text", "session_id", "turn_uuid", "vector"} <= set(loaded["columns"])
