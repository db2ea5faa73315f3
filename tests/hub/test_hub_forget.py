"""Forgetting that reaches published copies: `funes forget`, then `funes push`, against
the loopback Hub, read back by another home's recall and from the repo's git objects."""

import json
import tempfile

import pytest
from huggingface_hub import HfApi

from hub_helpers import (
    changed_files,
    commits,
    env_with,
    everything_published,
    funes,
    head_text,
    index_into_local_memory,
    remote_ids,
    write_claude_session,
)

pytestmark = pytest.mark.usefixtures("hub_env")

KEPT = "5e55f0aa-0000-4000-8000-000000000001"
FORGOTTEN = "5e55f0bb-0000-4000-8000-000000000002"
FORGOTTEN_TEXT = "The staging bucket is called marmalade-osprey-4471 and is rotated on Fridays."


@pytest.fixture
def repo_id(request):
    return "test-user/" + request.node.name


def recall_from_elsewhere(hub_server, repo_id: str, home) -> list[dict]:
    """`funes recall --memory <repo>` from another machine's home (its own cache)."""
    env = env_with(HOME=str(home), FUNES_HOME=str(home / ".funes"), FUNES_HUB_HEAD_TTL="0")
    result = funes("recall", "what is the staging bucket called", "--memory", repo_id, "--json", "-k", "20",
                   "--no-rerank", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def left_on_remote() -> tuple[int, int, bool, bool]:
    """`funes status --json` of the one remote: forgotten sessions and scrubbed chunks its
    head holds, whether its history was purged, and whether it holds anything removed."""
    result = funes("status", "--json")
    assert result.returncode == 0, result.stderr
    [remote] = json.loads(result.stdout)["remotes"]
    return remote["forgotten_sessions"], remote["scrubbed_chunks"], remote["history_purged"], remote["holds_removed"]


@pytest.mark.slow
def test_forget_then_push_removes_the_session_from_the_remote_head_and_readers(isolated_env, hub_server, repo_id):
    kept = write_claude_session(isolated_env / "t" / f"{KEPT}.jsonl", KEPT,
                                ["How do we deploy?", "With the release script, after the tests pass."])
    gone = write_claude_session(isolated_env / "t" / f"{FORGOTTEN}.jsonl", FORGOTTEN,
                                ["What is the staging bucket called?", FORGOTTEN_TEXT])
    index_into_local_memory([kept, gone])
    assert funes("push", repo_id, "--yes").returncode == 0
    elsewhere = isolated_env.parent / "elsewhere"
    assert any(FORGOTTEN_TEXT in hit["text"] for hit in recall_from_elsewhere(hub_server, repo_id, elsewhere))
    before = commits(hub_server, repo_id)
    held = remote_ids(hub_server, repo_id)

    forgot = funes("forget", "--session", FORGOTTEN, "--yes")
    assert forgot.returncode == 0, forgot.stderr
    assert left_on_remote() == (1, 0, True, True)  # from the receipt: its head still holds the session
    pushed = funes("push", repo_id, "--json")
    assert pushed.returncode == 0, pushed.stderr
    report = json.loads(pushed.stdout)
    assert (report["retracted"], report["retracted_sessions"], report["pushed"]) == (2, 1, 0)
    assert "removed 2 chunks of 1 forgotten session(s)" in pushed.stderr
    assert "--purge-history" in pushed.stderr  # the warning: earlier commits still hold it

    after = commits(hub_server, repo_id)
    assert after[1:] == before  # one guarded commit on top
    assert left_on_remote() == (0, 0, False, True)  # its history still does
    assert len(remote_ids(hub_server, repo_id)) == len(held) - 2
    changes = changed_files(hub_server, repo_id, after[0])
    assert "D" in changes.values(), "the data file that held the session leaves the head"
    assert FORGOTTEN_TEXT not in head_text(hub_server, repo_id)
    assert "With the release script" in head_text(hub_server, repo_id)
    card = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    readme_path = card.hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=after[0])
    assert "| chunks | 2 |" in open(readme_path).read()
    # A reader that cached the old head and a fresh home both stop returning it.
    assert not any(FORGOTTEN_TEXT in hit["text"] for hit in recall_from_elsewhere(hub_server, repo_id, elsewhere))
    with tempfile.TemporaryDirectory() as fresh:
        from pathlib import Path

        assert not any(FORGOTTEN_TEXT in hit["text"]
                       for hit in recall_from_elsewhere(hub_server, repo_id, Path(fresh)))
    # Nothing left to remove: the next push changes nothing.
    again = funes("push", repo_id)
    assert again.returncode == 0 and "up to date" in again.stderr and commits(hub_server, repo_id) == after

    # History: the text is still in an earlier commit until the history is squashed.
    assert FORGOTTEN_TEXT in everything_published(hub_server, repo_id)
    purged = funes("push", repo_id, "--purge-history")
    assert purged.returncode == 0, purged.stderr
    assert "history squashed" in purged.stderr and "cannot be recalled" in purged.stderr
    assert len(commits(hub_server, repo_id)) == 1
    assert FORGOTTEN_TEXT not in everything_published(hub_server, repo_id)
    assert "With the release script" in everything_published(hub_server, repo_id)
    assert left_on_remote() == (0, 0, True, False)
    assert not any(FORGOTTEN_TEXT in hit["text"] for hit in recall_from_elsewhere(hub_server, repo_id, elsewhere))
