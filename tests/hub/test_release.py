"""`funes release`: a git tag of the project publishes the project memory up to the tagged
commit and tags the dataset repo, and `--memory org/repo@tag` reads exactly that release
from any machine."""

import json
import os
import subprocess

import pytest
from huggingface_hub import HfApi, hf_hub_download

from hub_helpers import chunk, run_cli, write_memory

pytestmark = pytest.mark.usefixtures("hub_env")

PROJECT = "acme/app"
V1_DATE, V2_DATE = "2026-05-10T12:00:00Z", "2026-05-20T12:00:00Z"


def session(session_id, day, turns=2, repo=PROJECT):
    return [chunk(session_id, turn, f"{session_id} decided thing {turn} for the cache key",
                  repo=repo, ts=f"2026-05-{day:02d}T09:00:{turn:02d}.000Z") for turn in range(turns)]


BEFORE_V1 = [*session("early-one", 1), *session("early-two", 3, turns=3)]
BETWEEN = session("middle", 15)
AFTER_V2 = session("late", 25)
OTHER = session("elsewhere", 2, repo="acme/other")


def git(checkout, *args, date=None):
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.test"}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "-C", str(checkout), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout of the project with v1.0.0 and v2.0.0 tagged, the current folder."""
    folder = tmp_path / "app"
    folder.mkdir()
    git(folder, "init", "--quiet", "--initial-branch=main")
    git(folder, "remote", "add", "origin", "https://github.com/acme/app.git")
    for number, (tag, date) in enumerate((("v1.0.0", V1_DATE), ("v2.0.0", V2_DATE))):
        (folder / "VERSION").write_text(tag)
        git(folder, "add", "VERSION")
        git(folder, "commit", "--quiet", "-m", f"release {number}", date=date)
        git(folder, "tag", tag)
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def repo_id(request):
    return "test-user/" + request.node.name


@pytest.fixture
def project_memory(isolated_env, repo_id, capsys):
    write_memory([*BEFORE_V1, *BETWEEN, *AFTER_V2, *OTHER])
    assert run_cli("curate", repo_id, PROJECT, "--include", "early-one", "--include", "early-two",
                   "--include", "middle", "--include", "late") == 0
    capsys.readouterr()


def release(repo_id, tag, *flags, capsys):
    capsys.readouterr()
    code = run_cli("release", repo_id, tag, "--json", *flags)
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out else None), captured.err


def read_sessions(spec, capsys):
    capsys.readouterr()
    code = run_cli("sessions", "--memory", spec, "--json")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return {item["session_id"] for item in json.loads(captured.out)}


def recall(spec, *flags, capsys):
    capsys.readouterr()
    code = run_cli("recall", "decided thing for the cache key", "--memory", spec, "--fusion", "lexical",
                   "--no-rerank", "-k", "20", "--json", *flags)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def fresh_machine(monkeypatch, tmp_path, name):
    """Another machine: a FUNES_HOME and an HF cache that never saw anything."""
    from huggingface_hub import constants

    monkeypatch.setenv("FUNES_HOME", str(tmp_path / name / "funes"))
    monkeypatch.setenv("FUNES_CACHE_DIR", str(tmp_path / name / "cache"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / name / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / name / "hf"))


def test_two_releases_each_recalled_exactly_from_an_empty_machine(project_memory, checkout, repo_id, hub_server,
                                                                   monkeypatch, tmp_path, capsys):
    code, first, err = release(repo_id, "v1.0.0", "--yes", capsys=capsys)
    assert code == 0, err
    assert first["since"] is None and first["pushed"] == 5 and first["sessions"] == 2 and first["private"]
    code, second, err = release(repo_id, "v2.0.0", capsys=capsys)
    assert code == 0, err
    assert second["since"] == "v1.0.0" and second["pushed"] == 2 and second["sessions"] == 1
    assert "released v2.0.0" in err

    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    tags = {t.name: t.target_commit for t in api.list_repo_refs(repo_id, repo_type="dataset").tags}
    assert tags == {"v1.0.0": first["commit"], "v2.0.0": second["commit"]}
    card = open(hf_hub_download(repo_id, "README.md", repo_type="dataset", endpoint=hub_server.endpoint)).read()
    assert "## Releases" in card and f"--memory {repo_id}@v1.0.0" in card and f"--memory {repo_id}@v2.0.0" in card

    fresh_machine(monkeypatch, tmp_path, "reader")
    assert read_sessions(f"{repo_id}@v1.0.0", capsys) == {"early-one", "early-two"}
    assert read_sessions(f"{repo_id}@v2.0.0", capsys) == {"early-one", "early-two", "middle"}
    # A release once resolved is pinned: warm reads ask the Hub nothing, whatever the head's TTL.
    monkeypatch.setenv("FUNES_HUB_HEAD_TTL", "0")
    hub_server.reset_counts()
    assert read_sessions(f"{repo_id}@v1.0.0", capsys) == {"early-one", "early-two"}
    assert read_sessions(f"{repo_id}@v2.0.0", capsys) == {"early-one", "early-two", "middle"}
    assert hub_server.request_count == 0, hub_server.requests

    # What changed between releases: only the sessions v2.0.0 added.
    hits = recall(f"{repo_id}@v2.0.0", "--since-release", "v1.0.0", capsys=capsys)
    assert hits and {hit["session_id"] for hit in hits} == {"middle"}
    assert {hit["session_id"] for hit in recall(f"{repo_id}@v2.0.0", capsys=capsys)} > {"middle"}
    assert recall(f"{repo_id}@v1.0.0", "--since-release", "v1.0.0", capsys=capsys) == []
    capsys.readouterr()
    assert run_cli("recall", "cache key", "--memory", f"{repo_id}@v2.0.0", "--since-release", "v0.1") == 2
    assert "not a release of" in capsys.readouterr().err

    capsys.readouterr()
    assert run_cli("status", "--memory", repo_id, "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert [(r["tag"], r["sessions"], r["chunks"], r["added"]) for r in status["releases"]] == [
        ("v1.0.0", 2, 5, 2), ("v2.0.0", 3, 7, 1)]


@pytest.mark.slow  # two releases published, then an MCP server over stdio: about a minute
def test_the_mcp_recall_tool_keeps_the_sessions_the_releases_after_a_tag_added(project_memory, checkout, repo_id,
                                                                                 hub_server, monkeypatch, capsys):
    """`since_release` of the MCP `recall` tool, driven by a real client over stdio, reads
    what `recall --since-release` reads; a bad tag or a memory not read from the Hub is
    a one-line tool error."""
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    for tag in ("v1.0.0", "v2.0.0"):
        code, _, err = release(repo_id, tag, "--yes", capsys=capsys)
        assert code == 0, err
    monkeypatch.setenv("FUNES_FUSION", "lexical")  # which sessions answer needs no model
    monkeypatch.setenv("FUNES_RERANKER", "none")
    server = StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=dict(os.environ))
    asked = {"query": "decided thing for the cache key", "k": 20, "memory": f"{repo_id}@v2.0.0"}

    async def calls():
        # capsys's stderr has no file descriptor for the server's to go to
        with open(os.devnull, "w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool("recall", {**asked, **extra})
                        for extra in ({"since_release": "v1.0.0"}, {}, {"since_release": "v0.1"},
                                      {"since_release": "v1.0.0", "memory": None})]

    def sessions(result):
        assert not result.is_error, result.content
        return {line.split("→ get ")[1].split()[0] for line in result.content[0].text.splitlines() if "→ get " in line}

    since_v1, whole, unknown_tag, local = anyio.run(calls)
    assert sessions(since_v1) == {"middle"}
    assert sessions(whole) > {"middle"}
    for error, reason in ((unknown_tag, "not a release of"), (local, "is not a Hub memory")):
        text = error.content[0].text
        assert error.is_error and reason in text and "\n" not in text, text


def test_bad_releases_are_refused_in_one_line_and_publish_nothing(project_memory, checkout, repo_id, hub_server,
                                                                   capsys, monkeypatch):
    code, _, err = release(repo_id, "v9.9.9", "--yes", capsys=capsys)
    assert code == 2 and err.strip().splitlines() == [f"funes: v9.9.9: no such tag in the git checkout at {checkout}"]
    assert release(repo_id, "v2.0.0", "--yes", capsys=capsys)[0] == 0
    head = HfApi(endpoint=hub_server.endpoint, token=hub_server.token).dataset_info(repo_id).sha

    code, _, err = release(repo_id, "v2.0.0", capsys=capsys)
    assert code == 2 and "v2.0.0 is already released" in err and "--force" in err and len(err.splitlines()) == 1
    # Releases publish in order: the table at v2.0.0 already holds everything before it.
    code, _, err = release(repo_id, "v1.0.0", capsys=capsys)
    assert code == 2 and "newer than v1.0.0" in err
    code, _, err = release(repo_id, "v2.0.0", "--project", "acme/other", capsys=capsys)
    assert code == 2 and "project memory of acme/app" in err
    # Run inside another repository's checkout, whose v2.0.0 is another project's release.
    other = checkout.parent / "other"
    other.mkdir()
    git(other, "init", "--quiet", "--initial-branch=main")
    git(other, "remote", "add", "origin", "git@github.com:acme/other.git")
    git(other, "commit", "--quiet", "--allow-empty", "-m", "other", date=V1_DATE)
    git(other, "tag", "v2.0.0")
    monkeypatch.chdir(other)
    code, _, err = release(repo_id, "v2.0.0", "--force", capsys=capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"funes: the git checkout at {other} is of acme/other, not acme/app:"
        " run funes release inside a checkout of acme/app"]
    monkeypatch.chdir(checkout)
    assert HfApi(endpoint=hub_server.endpoint, token=hub_server.token).dataset_info(repo_id).sha == head

    code, report, err = release(repo_id, "v2.0.0", "--force", capsys=capsys)
    assert code == 0 and report["retagged_from"] == head and "--force: v2.0.0 pointed at" in err
    capsys.readouterr()
    assert run_cli("status", "--memory", repo_id, "--json") == 0
    [again] = json.loads(capsys.readouterr().out)["releases"]
    assert (again["tag"], again["sessions"], again["added"]) == ("v2.0.0", 3, 3)

    capsys.readouterr()
    assert run_cli("sessions", "--memory", f"{repo_id}@v3.0.0") == 3
    assert capsys.readouterr().err.strip() == (f"funes: hf://datasets/{repo_id} has no release 'v3.0.0':"
                                               f" `funes status --memory {repo_id}` lists its releases")


def test_a_memory_without_the_project_refuses_to_release(isolated_env, checkout, repo_id, hub_server, capsys):
    write_memory(OTHER)
    code, _, err = release(repo_id, "v1.0.0", "--project", PROJECT, "--yes", capsys=capsys)
    assert code == 3 and err.strip() == f"funes: the memory at local holds no session of {PROJECT}"


def test_an_unreachable_hub_is_one_line(project_memory, checkout, repo_id, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    code, _, err = release(repo_id, "v1.0.0", "--project", PROJECT, "--yes", capsys=capsys)
    assert code == 6 and len(err.strip().splitlines()) == 1 and "cannot be reached" in err


def test_a_forget_after_a_release_reaches_the_head_and_names_the_tags_that_keep_it(project_memory, checkout, repo_id,
                                                                                   hub_server, capsys):
    assert release(repo_id, "v1.0.0", "--yes", capsys=capsys)[0] == 0
    assert release(repo_id, "v2.0.0", capsys=capsys)[0] == 0
    assert run_cli("curate", repo_id, PROJECT, "--exclude", "late") == 0  # after v2.0.0: the next release's
    assert run_cli("forget", "--session", "middle", "--yes") == 0
    capsys.readouterr()
    assert run_cli("push", repo_id, "--json") == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["retracted_sessions"] == 1 and report["releases_holding"] == ["v2.0.0"]
    assert "release tag(s) v2.0.0 still name commits holding the forgotten sessions" in captured.err
    assert read_sessions(repo_id, capsys) == {"early-one", "early-two"}
    # A release stays as published until its maintainer publishes it again.
    assert "middle" in read_sessions(f"{repo_id}@v2.0.0", capsys)
    code, report, err = release(repo_id, "v2.0.0", "--force", capsys=capsys)
    assert code == 0, err
    from funes.hub.reader import _tag_file
    from funes.hub.repo import parse_remote

    _tag_file(parse_remote(repo_id), "v2.0.0").unlink()  # this host resolves the moved tag again
    assert read_sessions(f"{repo_id}@v2.0.0", capsys) == {"early-one", "early-two"}


def test_a_head_pushed_past_the_tag_is_not_released(project_memory, checkout, repo_id, hub_server, capsys):
    assert run_cli("push", repo_id, "--yes") == 0  # ships "late", dated after v2.0.0
    head = HfApi(endpoint=hub_server.endpoint, token=hub_server.token).dataset_info(repo_id).sha
    code, _, err = release(repo_id, "v2.0.0", capsys=capsys)
    assert code == 2 and "already holds chunks dated after v2.0.0" in err and len(err.strip().splitlines()) == 1
    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    assert api.dataset_info(repo_id).sha == head and api.list_repo_refs(repo_id, repo_type="dataset").tags == []


def tag_ids(hub_server, repo_id, tag):
    """Chunk ids of the table at ``tag``, read from the test Hub's git objects."""
    import tempfile

    import lance

    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(["git", f"--git-dir={hub_server.git_dir(repo_id, 'dataset')}", "archive", tag],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        return set(lance.dataset(f"{folder}/chunks.lance").to_table(columns=["id"]).column("id").to_pylist())


def test_the_release_sensor_and_partitions_publish_what_the_cli_does(project_memory, checkout, repo_id, hub_server,
                                                                     monkeypatch, capsys):
    import dagster as dg

    from funes.assets.release import release_memory, release_partitions
    from funes.assets.resources import MemoryResource
    from funes.pipelines.releases import release_sensor

    by_hand = repo_id + "-cli"
    assert run_cli("curate", by_hand, PROJECT, "--include", "early-one", "--include", "early-two",
                   "--include", "middle") == 0
    assert release(by_hand, "v1.0.0", "--yes", capsys=capsys)[0] == 0
    assert release(by_hand, "v2.0.0", capsys=capsys)[0] == 0

    monkeypatch.setenv("FUNES_RELEASE_CHECKOUT", str(checkout))
    monkeypatch.setenv("FUNES_RELEASE_REMOTE", repo_id)
    git(checkout, "tag", "-d", "v2.0.0")
    instance = dg.DagsterInstance.ephemeral()
    first = release_sensor(dg.build_sensor_context(instance=instance))
    # Tags there before the sensor are adopted as partitions, for a backfill; none runs by itself.
    assert not first.run_requests and first.dynamic_partitions_requests[0].partition_keys == ["v1.0.0"]
    instance.add_dynamic_partitions(release_partitions.name, ["v1.0.0"])
    git(checkout, "tag", "v2.0.0", "HEAD")
    second = release_sensor(dg.build_sensor_context(instance=instance, cursor=first.cursor))
    assert [request.partition_key for request in second.run_requests] == ["v2.0.0"]
    instance.add_dynamic_partitions(release_partitions.name, ["v2.0.0"])

    for tag, yes in (("v1.0.0", True), ("v2.0.0", False)):
        result = dg.materialize([release_memory], instance=instance, partition_key=tag,
                                resources={"memory": MemoryResource()},
                                run_config={"ops": {"release_memory": {"config": {"assume_yes": yes}}}})
        [materialization] = result.asset_materializations_for_node("release_memory")
        metadata = {key: value.value for key, value in materialization.metadata.items()}
        assert metadata["tag"] == tag and metadata["commit"] and metadata["chunks"] > 0 and metadata["sessions"] > 0
        assert tag_ids(hub_server, repo_id, tag) == tag_ids(hub_server, by_hand, tag)


def test_datasets_load_dataset_loads_a_release(project_memory, checkout, repo_id, hub_server, tmp_path, capsys):
    import sys

    assert release(repo_id, "v1.0.0", "--yes", capsys=capsys)[0] == 0
    assert release(repo_id, "v2.0.0", capsys=capsys)[0] == 0
    # datasets' Lance builder reads main only: a release loads from its snapshot, fetched by tag.
    script = ("import datasets, json, sys; from huggingface_hub import snapshot_download; "
              "print(json.dumps([datasets.load_dataset(sys.argv[1], split='train').num_rows] + ["
              "datasets.load_dataset(snapshot_download(sys.argv[1], repo_type='dataset', revision=tag),"
              " split='train').num_rows for tag in ('v1.0.0', 'v2.0.0')]))")
    result = subprocess.run([sys.executable, "-c", script, repo_id], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache")})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == [7, 5, 7]


def test_a_release_whose_tag_failed_is_tagged_by_running_it_again(project_memory, checkout, repo_id, hub_server,
                                                                  capsys):
    hub_server.fail_next("tag-create", status=403)
    code, _, err = release(repo_id, "v1.0.0", "--yes", capsys=capsys)
    assert code == 6 and "published in commit" in err and "again to tag it" in err and len(err.strip().splitlines()) == 1
    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    assert api.list_repo_refs(repo_id, repo_type="dataset").tags == []
    code, report, err = release(repo_id, "v1.0.0", capsys=capsys)
    assert code == 0 and report["pushed"] == 0, err
    assert [t.name for t in api.list_repo_refs(repo_id, repo_type="dataset").tags] == ["v1.0.0"]
    capsys.readouterr()
    assert run_cli("status", "--memory", f"{repo_id}@v1.0.0", "--json") == 0
    [entry] = json.loads(capsys.readouterr().out)["releases"]
    assert (entry["tag"], entry["chunks"], entry["added"]) == ("v1.0.0", 5, 2)
