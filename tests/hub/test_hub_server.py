"""Contract tests: the real huggingface_hub client (and datasets, lance) against tests/helpers/hub_server.py
over real HTTP, one route or behaviour per test, so a client upgrade that needs a route or field
this server lacks fails here first."""

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    HfFileSystem,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import (
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

pytestmark = pytest.mark.usefixtures("hub_env")


def assert_all_routed(hub_server):
    """Clients tolerate a 404 on some probes; a route this server lacks must still fail a test."""
    assert not [key for key in hub_server.counts if key.endswith(" unrouted")], hub_server.requests


@pytest.fixture
def api(hub_server):
    return HfApi(endpoint=hub_server.endpoint, token=hub_server.token)


@pytest.fixture
def repo_id(api, request):
    """A fresh private dataset repo named after the test (the server is shared by the session)."""
    repo_id = f"{api.whoami()['name']}/{request.node.name.replace('[', '-').rstrip(']')}"
    api.create_repo(repo_id, repo_type="dataset", private=True)
    return repo_id


def add_files(api, repo_id, files: dict[str, bytes], message="add files", **kwargs):
    operations = [CommitOperationAdd(path, content) for path, content in files.items()]
    return api.create_commit(repo_id, repo_type="dataset", operations=operations, commit_message=message, **kwargs)


def test_whoami(api, hub_server):
    assert api.whoami()["name"] == hub_server.user


def test_create_repo_private_exist_ok_settings_and_delete(api, hub_server):
    repo_id = "test-user/created"
    url = api.create_repo(repo_id, repo_type="dataset", private=True)
    assert url.repo_id == repo_id and url.repo_type == "dataset"
    assert hub_server.is_private(repo_id, "dataset")
    with pytest.raises(HfHubHTTPError) as error:
        api.create_repo(repo_id, repo_type="dataset")
    assert error.value.response.status_code == 409
    # An existing repo keeps its visibility whatever exist_ok asks for.
    api.create_repo(repo_id, repo_type="dataset", private=False, exist_ok=True)
    assert api.dataset_info(repo_id).private is True

    api.update_repo_settings(repo_id, repo_type="dataset", private=False)
    assert api.dataset_info(repo_id).private is False
    # Same name, other type: another repo, public by default as on the Hub.
    api.create_repo(repo_id)
    assert hub_server.is_private(repo_id) is False

    api.delete_repo(repo_id, repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(repo_id)
    api.delete_repo(repo_id, repo_type="dataset", missing_ok=True)
    assert api.model_info(repo_id).id == repo_id


def test_repo_info_sha_private_and_revisions(api, hub_server, repo_id):
    initial = api.dataset_info(repo_id)
    assert initial.private is True
    assert [s.rfilename for s in initial.siblings] == [".gitattributes"]
    assert initial.last_modified is not None and initial.created_at is not None

    commit = add_files(api, repo_id, {"data.txt": b"one"})
    assert api.dataset_info(repo_id).sha == commit.oid
    assert api.dataset_info(repo_id, revision=initial.sha).sha == initial.sha
    assert api.repo_info(repo_id, repo_type="dataset", revision="main").sha == commit.oid
    with_blobs = api.dataset_info(repo_id, files_metadata=True)
    assert {s.rfilename: s.size for s in with_blobs.siblings}["data.txt"] == 3

    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(repo_id, revision="no-such-branch")
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("test-user/no-such-repo")
    # The Hub hides private repos from anonymous callers.
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=hub_server.endpoint).dataset_info(repo_id, token=False)


def test_list_repo_refs_head_is_commit_oid(api, repo_id):
    commit = add_files(api, repo_id, {"a.txt": b"a"})
    refs = api.list_repo_refs(repo_id, repo_type="dataset", include_pull_requests=True)
    assert [(b.name, b.ref, b.target_commit) for b in refs.branches] == [("main", "refs/heads/main", commit.oid)]
    assert refs.tags == [] and refs.converts == [] and refs.pull_requests == []


def test_list_repo_files_and_tree(api, repo_id):
    add_files(api, repo_id, {"t.lance/_versions/1.manifest": b"m", "t.lance/data/x.lance": b"xx", "README.md": b"r"})
    assert api.list_repo_files(repo_id, repo_type="dataset") == [
        ".gitattributes",
        "README.md",
        "t.lance/_versions/1.manifest",
        "t.lance/data/x.lance",
    ]
    top = {e.path: type(e).__name__ for e in api.list_repo_tree(repo_id, repo_type="dataset")}
    assert top == {".gitattributes": "RepoFile", "README.md": "RepoFile", "t.lance": "RepoFolder"}
    versions = list(api.list_repo_tree(repo_id, "t.lance/_versions", repo_type="dataset"))
    assert [(e.path, e.size) for e in versions] == [("t.lance/_versions/1.manifest", 1)]
    recursive = {e.path for e in api.list_repo_tree(repo_id, "t.lance", recursive=True, repo_type="dataset")}
    assert recursive == {"t.lance/_versions", "t.lance/_versions/1.manifest", "t.lance/data", "t.lance/data/x.lance"}
    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree(repo_id, "missing", repo_type="dataset"))


def test_get_paths_info(api, repo_id):
    add_files(api, repo_id, {"dir/file.bin": b"12345"})
    infos = api.get_paths_info(repo_id, ["dir", "dir/file.bin", "missing"], repo_type="dataset")
    assert [(type(i).__name__, i.path) for i in infos] == [("RepoFolder", "dir"), ("RepoFile", "dir/file.bin")]
    assert infos[1].size == 5 and len(infos[1].blob_id) == 40


def test_list_repo_commits(api, repo_id):
    first = add_files(api, repo_id, {"a": b"1"}, message="first", commit_description="why it matters")
    second = add_files(api, repo_id, {"a": b"2"}, message="second")
    commits = api.list_repo_commits(repo_id, repo_type="dataset")
    assert [c.commit_id for c in commits[:2]] == [second.oid, first.oid]
    assert [c.title for c in commits] == ["second", "first", "initial commit"]
    assert commits[1].message == "why it matters"
    assert commits[0].authors == ["test-user"]
    assert api.list_repo_commits(repo_id, repo_type="dataset", revision=first.oid)[0].commit_id == first.oid


def test_upload_folder_of_a_lancedb_table(api, hub_server, repo_id, tmp_path):
    import lancedb

    db = lancedb.connect(tmp_path / "db")
    db.create_table("chunks", [{"id": i, "text": f"chunk {i}", "vector": [float(i), 1.0]} for i in range(8)])
    local_files = sorted(str(p.relative_to(tmp_path / "db")) for p in (tmp_path / "db").rglob("*") if p.is_file())

    commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=tmp_path / "db")
    assert api.list_repo_refs(repo_id, repo_type="dataset").branches[0].target_commit == commit.oid
    remote_files = api.list_repo_files(repo_id, repo_type="dataset")
    assert sorted(set(remote_files) - {".gitattributes"}) == local_files

    # Unchanged files are skipped thanks to the oids preupload returns: no new commit.
    hub_server.reset_counts()
    again = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=tmp_path / "db")
    assert again.oid == commit.oid
    assert hub_server.counts["POST commit"] == 0


def test_create_commit_with_parent_commit_and_stale_parent(api, repo_id):
    head = api.dataset_info(repo_id).sha
    ok = add_files(api, repo_id, {"README.md": b"v1"}, parent_commit=head)
    with pytest.raises(HfHubHTTPError) as error:
        add_files(api, repo_id, {"README.md": b"v2"}, parent_commit=head)
    assert error.value.response.status_code == 412
    assert api.dataset_info(repo_id).sha == ok.oid


def test_commit_refuses_a_path_that_is_both_file_and_folder(api, repo_id):
    add_files(api, repo_id, {"a": b"file"})
    with pytest.raises(HfHubHTTPError) as error:
        add_files(api, repo_id, {"a/b": b"under a file"})
    assert error.value.response.status_code == 400
    assert api.list_repo_files(repo_id, repo_type="dataset") == [".gitattributes", "a"]


def test_concurrent_commits_serialise(api, repo_id):
    def race(names, parent):
        barrier = threading.Barrier(len(names))
        results = {}

        def commit(name):
            barrier.wait()
            try:
                results[name] = add_files(api, repo_id, {f"{name}.txt": name.encode()}, parent_commit=parent).oid
            except HfHubHTTPError as error:
                results[name] = error.response.status_code

        threads = [threading.Thread(target=commit, args=(name,)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    head = api.dataset_info(repo_id).sha
    outcomes = list(race(["cas0", "cas1"], head).values())
    assert sorted(outcomes, key=lambda outcome: outcome == 412) == [  # exactly one compare-and-swap winner
        api.dataset_info(repo_id).sha,
        412,
    ], outcomes

    # Without parent_commit, both apply on whatever the head is by then.
    assert all(len(oid) == 40 for oid in race(["free0", "free1"], None).values())
    assert {"free0.txt", "free1.txt"} <= set(api.list_repo_files(repo_id, repo_type="dataset"))
    assert len(api.list_repo_commits(repo_id, repo_type="dataset")) == 4  # initial + 3 in one linear history


def test_injected_commit_failures(api, hub_server, repo_id):
    hub_server.fail_next("commit", status=412, times=2)
    for _ in range(2):
        with pytest.raises(HfHubHTTPError) as error:
            add_files(api, repo_id, {"x": b"x"})
        assert error.value.response.status_code == 412
    hub_server.fail_next("commit", status=500)
    with pytest.raises(HfHubHTTPError) as error:
        add_files(api, repo_id, {"x": b"x"})
    assert error.value.response.status_code == 500
    add_files(api, repo_id, {"x": b"x"})
    assert "x" in api.list_repo_files(repo_id, repo_type="dataset")


def test_delete_file_and_folder(api, repo_id):
    add_files(api, repo_id, {"keep.txt": b"k", "gone.txt": b"g", "old/a": b"a", "old/b/c": b"c"})
    api.delete_file("gone.txt", repo_id, repo_type="dataset")
    api.delete_folder("old", repo_id, repo_type="dataset")
    assert api.list_repo_files(repo_id, repo_type="dataset") == [".gitattributes", "keep.txt"]
    with pytest.raises(RemoteEntryNotFoundError):
        api.delete_file("gone.txt", repo_id, repo_type="dataset")
    api.create_commit(
        repo_id,
        repo_type="dataset",
        operations=[CommitOperationDelete("keep.txt"), CommitOperationAdd("new.txt", b"n")],
        commit_message="swap",
    )
    assert api.list_repo_files(repo_id, repo_type="dataset") == [".gitattributes", "new.txt"]


def test_hf_hub_download_by_branch_and_by_sha(api, hub_server, hub_env, repo_id):
    first = add_files(api, repo_id, {"memory/blob.bin": b"version one"})
    add_files(api, repo_id, {"memory/blob.bin": b"version two"})
    common = dict(repo_id=repo_id, repo_type="dataset", endpoint=hub_server.endpoint, token=hub_server.token)

    with open(hf_hub_download(filename="memory/blob.bin", **common), "rb") as file:
        assert file.read() == b"version two"
    pinned = hf_hub_download(filename="memory/blob.bin", revision=first.oid, **common)
    assert pinned.startswith(str(hub_env)) and f"snapshots/{first.oid}/memory/blob.bin" in pinned
    with open(pinned, "rb") as file:
        assert file.read() == b"version one"

    hub_server.reset_counts()
    assert hf_hub_download(filename="memory/blob.bin", revision=first.oid, **common) == pinned
    assert hub_server.request_count == 0, hub_server.requests

    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(filename="memory/missing.bin", **common)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(filename="memory/blob.bin", revision="no-such-branch", **common)


def test_snapshot_download_cold_then_warm_makes_no_request(api, hub_server, repo_id):
    commit = add_files(api, repo_id, {"t.lance/a": b"a", "t.lance/sub/b": b"bb", "other/c": b"c"})
    download = dict(
        repo_id=repo_id,
        repo_type="dataset",
        revision=commit.oid,
        allow_patterns=["t.lance/**"],
        endpoint=hub_server.endpoint,
        token=hub_server.token,
    )
    hub_server.reset_counts()
    folder = snapshot_download(**download)
    assert hub_server.counts["GET tree"] == 1 and hub_server.counts["GET resolve"] == 2, hub_server.counts
    assert sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file()) == [
        "t.lance/a",
        "t.lance/sub/b",
    ]

    hub_server.reset_counts()
    assert snapshot_download(**download) == folder
    assert hub_server.request_count == 0, hub_server.requests


def test_hf_file_system_ls_info_and_ranged_read(api, hub_server, repo_id):
    commit = add_files(api, repo_id, {"dir/data.bin": bytes(range(256)) * 4})
    fs = HfFileSystem(endpoint=hub_server.endpoint, token=hub_server.token, skip_instance_cache=True)
    root = f"datasets/{repo_id}"

    assert sorted(fs.ls(root, detail=False)) == [f"{root}/.gitattributes", f"{root}/dir"]
    info = fs.info(f"{root}/dir/data.bin")
    assert info["type"] == "file" and info["size"] == 1024
    hub_server.reset_counts()
    with fs.open(f"{root}@{commit.oid}/dir/data.bin", "rb", block_size=16) as file:
        file.seek(300)
        assert file.read(4) == bytes([44, 45, 46, 47])
    assert hub_server.counts["GET resolve"] >= 1
    assert_all_routed(hub_server)


def test_resolve_headers_and_ranges(api, hub_server, repo_id):
    commit = add_files(api, repo_id, {"f.txt": b"0123456789"})
    url = f"{hub_server.endpoint}/datasets/{repo_id}/resolve/main/f.txt"

    def fetch(method="GET", **headers):
        headers = {"Authorization": f"Bearer {hub_server.token}", **headers}
        request = urllib.request.Request(url, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    status, headers, body = fetch("HEAD")
    assert status == 200 and body == b""
    assert headers["X-Repo-Commit"] == commit.oid
    assert headers["Content-Length"] == "10" and headers["Accept-Ranges"] == "bytes"
    assert headers["ETag"] == f'"{api.get_paths_info(repo_id, "f.txt", repo_type="dataset")[0].blob_id}"'
    assert fetch(Range="bytes=2-4")[::2] == (206, b"234")
    assert fetch(Range="bytes=2-4")[1]["Content-Range"] == "bytes 2-4/10"
    assert fetch(Range="bytes=-3")[::2] == (206, b"789")
    assert fetch(Range="bytes=20-")[0] == 416
    status, headers, _ = fetch(Authorization="")
    assert status == 401 and headers["X-Error-Code"] == "RepoNotFound"


def test_commit_refuses_lfs_files_and_pull_requests(hub_server, repo_id):
    def post_commit(lines, query=""):
        url = f"{hub_server.endpoint}/api/datasets/{repo_id}/commit/main{query}"
        body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        headers = {"Authorization": f"Bearer {hub_server.token}", "Content-Type": "application/x-ndjson"}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers, method="POST")) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    header = {"key": "header", "value": {"summary": "s"}}
    lfs = {"key": "lfsFile", "value": {"path": "big.bin", "algo": "sha256", "oid": "0" * 64, "size": 1}}
    assert post_commit([header, lfs]) == 400
    assert post_commit([header], "?create_pr=1") == 400
    assert post_commit([header]) == 200


def test_unknown_routes_are_counted_and_answer_404(api, hub_server):
    hub_server.reset_counts()
    with pytest.raises(HfHubHTTPError):
        list(api.list_repo_likers("test-user/anything"))
    assert hub_server.counts == {"GET unrouted": 1}


def test_datasets_load_dataset_of_a_parquet_file(api, hub_server, repo_id, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1, 2, 3], "text": ["a", "b", "c"]}), tmp_path / "train.parquet")
    api.upload_file(
        path_or_fileobj=tmp_path / "train.parquet",
        path_in_repo="data/train.parquet",
        repo_id=repo_id,
        repo_type="dataset",
    )
    # datasets reads HF_ENDPOINT at import: run it in a process that starts with hub_env's variables.
    script = (
        "import datasets, json, sys; "
        "ds = datasets.load_dataset(sys.argv[1], split='train'); "
        "print(json.dumps(ds.to_dict()))"
    )
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache")}
    hub_server.reset_counts()
    result = subprocess.run(
        [sys.executable, "-c", script, repo_id], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == {"id": [1, 2, 3], "text": ["a", "b", "c"]}
    assert_all_routed(hub_server)


def test_lance_reads_over_hf_urls(api, hub_server, repo_id, tmp_path):
    import lance
    import lancedb

    lancedb.connect(tmp_path / "db").create_table("chunks", [{"id": i, "vector": [float(i), 0.0]} for i in range(5)])
    commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=tmp_path / "db")
    # hub_env's HF_ENDPOINT is read by Lance when the dataset is opened.
    hub_server.reset_counts()
    dataset = lance.dataset(
        f"hf://datasets/{repo_id}/chunks.lance",
        storage_options={"hf_revision": commit.oid, "hf_token": hub_server.token},
    )
    assert dataset.count_rows() == 5
    assert hub_server.requests and all(commit.oid in r for r in hub_server.requests), hub_server.requests


def test_tags_create_list_resolve_and_delete(api, hub_server, hub_env, repo_id):
    first = add_files(api, repo_id, {"t.lance/a": b"one"})
    api.create_tag(repo_id, tag="v1.0.0", repo_type="dataset", tag_message="release v1.0.0")
    add_files(api, repo_id, {"t.lance/a": b"two"})
    refs = api.list_repo_refs(repo_id, repo_type="dataset")
    assert [(t.name, t.ref, t.target_commit) for t in refs.tags] == [("v1.0.0", "refs/tags/v1.0.0", first.oid)]
    assert api.dataset_info(repo_id, revision="v1.0.0").sha == first.oid
    assert api.list_repo_files(repo_id, repo_type="dataset", revision="v1.0.0") == [".gitattributes", "t.lance/a"]

    common = dict(repo_id=repo_id, repo_type="dataset", endpoint=hub_server.endpoint, token=hub_server.token)
    with open(hf_hub_download(filename="t.lance/a", revision="v1.0.0", **common), "rb") as file:
        assert file.read() == b"one"
    folder = snapshot_download(revision="v1.0.0", **common)
    assert folder.endswith(first.oid) and (Path(folder) / "t.lance/a").read_bytes() == b"one"

    # A tag exists once: the Hub answers 409, which exist_ok swallows.
    with pytest.raises(HfHubHTTPError) as conflict:
        api.create_tag(repo_id, tag="v1.0.0", repo_type="dataset")
    assert conflict.value.response.status_code == 409
    api.create_tag(repo_id, tag="v1.0.0", repo_type="dataset", exist_ok=True)
    # Tagging another revision than main: a SHA.
    api.create_tag(repo_id, tag="first", revision=first.oid, repo_type="dataset")

    api.delete_tag(repo_id, tag="v1.0.0", repo_type="dataset")
    assert [t.name for t in api.list_repo_refs(repo_id, repo_type="dataset").tags] == ["first"]
    with pytest.raises(RevisionNotFoundError):
        api.delete_tag(repo_id, tag="v1.0.0", repo_type="dataset")
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info(repo_id, revision="v1.0.0")
    with pytest.raises(HfHubHTTPError):
        HfApi(endpoint=hub_server.endpoint).create_tag(repo_id, tag="anon", repo_type="dataset", token=False)
    assert_all_routed(hub_server)
