"""Scrubbing that reaches published copies: a secret no rule knew when it was pushed,
`funes scrub` once a rule finds it, then the push that replaces it on the loopback Hub,
read back from every byte of the repo and by readers with a warm or an empty cache."""

import json
import os
import re
import select
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from fake_secrets import generate_secrets
from hub_helpers import (
    FUNES,
    assert_no_secret_in,
    bm25_vocabulary,
    commits,
    env_with,
    everything_published,
    funes,
    head_text,
    index_into_local_memory,
    local_ids,
    remote_ids,
    remote_status,
    secret_forms,
    secret_transcript,
    unredacted_indexing,
    unscanned_egress,
)

pytestmark = pytest.mark.usefixtures("hub_env")

SECRETS = generate_secrets(seed=29)
QUESTION = "what does the output say, here it is"


@pytest.fixture
def repo_id(request):
    return "test-user/" + request.node.name


@pytest.fixture
def leaked(isolated_env, repo_id, tmp_path):
    """A memory whose secrets reached the Hub: indexed and pushed by a funes whose rules
    knew none of them."""
    from funes.hub.push import push

    with unredacted_indexing(), unscanned_egress():
        index_into_local_memory([secret_transcript(tmp_path / "t" / "secrets.jsonl", SECRETS, clean_turns=3)])
        push(repo_id, assume_yes=True)
    return isolated_env / ".funes"


def secrets_in(text: str) -> list[str]:
    return [s.kind for s in SECRETS for value in s.values if any(form in text for form in secret_forms(value))]


def reader_env(home: Path) -> dict[str, str]:
    """Another machine: its own FUNES_HOME and HF cache; the head re-resolved every time."""
    return env_with(HOME=str(home), FUNES_HOME=str(home / ".funes"), HF_HOME=str(home / "hf"),
                    HF_HUB_CACHE=str(home / "hf" / "hub"), FUNES_HUB_HEAD_TTL="0")


def recalled_text(repo_id: str, home: Path) -> str:
    result = funes("recall", QUESTION, "--memory", repo_id, "--json", "-k", "50", "--no-rerank", env=reader_env(home))
    assert result.returncode == 0, result.stderr
    return "\n".join(hit["text"] for hit in json.loads(result.stdout))


def reader_vocabulary(hub_server, repo_id: str, sha: str) -> set[str]:
    """Every word of the BM25 index readers derived for commit ``sha`` (in the shared cache)."""
    host = re.sub(r"[^A-Za-z0-9.-]", "_", hub_server.endpoint.split("://", 1)[-1])
    folder = Path(os.environ["FUNES_CACHE_DIR"]) / "hub" / host / repo_id / sha / "bm25"
    assert folder.is_dir()
    return bm25_vocabulary(folder)


@pytest.mark.slow
def test_scrub_then_push_replaces_a_pushed_secret_on_the_remote_and_for_its_readers(leaked, hub_server, repo_id,
                                                                                    tmp_path):
    from funes.memory.tokens import tokenize

    assert secrets_in(head_text(hub_server, repo_id))  # the secrets did reach the Hub
    warm = tmp_path / "warm-reader"
    assert secrets_in(recalled_text(repo_id, warm))
    assert not remote_status()["holds_removed"]
    before = commits(hub_server, repo_id)

    scrubbed = funes("scrub")
    assert scrubbed.returncode == 0, scrubbed.stderr
    replaced, written = map(int, re.search(r"; (\d+) chunks replaced by (\d+);", scrubbed.stderr).groups())
    assert replaced >= len(SECRETS)
    assert (f"warning: hf://datasets/{repo_id} received {replaced} of the scrubbed chunks" in scrubbed.stderr
            and f"`funes push hf://datasets/{repo_id}` replaces them there (with --purge-history, in its history"
                " too); revoke those secrets, since copies already downloaded cannot be recalled" in scrubbed.stderr)
    assert commits(hub_server, repo_id) == before  # piped, nobody was asked: nothing pushed
    hub_server.reset_counts()
    status = remote_status()
    assert hub_server.request_count == 0  # the receipt answers
    assert (status["scrubbed_chunks"], status["forgotten_sessions"], status["history_purged"],
            status["holds_removed"], status["checked"]) == (replaced, 0, True, True, "receipts")
    asked = remote_status("--check-remotes")
    assert hub_server.request_count > 0
    assert (asked["scrubbed_chunks"], asked["holds_removed"], asked["checked"]) == (replaced, True, "hub")
    text = funes("status").stdout
    assert f"  removed   its head still holds {replaced} scrubbed chunk(s): `funes push hf://datasets/{repo_id}`" in text

    pushed = funes("push", repo_id, "--json")
    assert pushed.returncode == 0, pushed.stderr
    report = json.loads(pushed.stdout)
    assert (report["scrub_retracted"], report["pushed"], report["held_back"]) == (replaced, written, 0)
    assert f"retracted {replaced} scrubbed chunk(s)" in pushed.stderr
    assert "still hold the scrubbed secrets: push again with --purge-history" in pushed.stderr
    assert "revoke the scrubbed secrets" in pushed.stderr
    after = commits(hub_server, repo_id)
    assert after[1:] == before  # one guarded commit on top
    head = head_text(hub_server, repo_id)
    assert_no_secret_in(head, SECRETS)
    assert "[REDACTED:" in head
    assert remote_ids(hub_server, repo_id) == local_ids(leaked)
    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    card = open(api.hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=after[0])).read()
    assert f"| chunks | {len(local_ids(leaked))} |" in card
    status = remote_status()
    assert (status["scrubbed_chunks"], status["history_purged"], status["holds_removed"]) == (0, False, True)
    asked = remote_status("--check-remotes")
    assert (asked["scrubbed_chunks"], asked["history_purged"], asked["checked"]) == (0, False, "hub")
    assert "its history holds removed text: `funes push" in funes("status").stdout

    # An empty cache, then the reader that had cached the old commit: neither returns a
    # secret, and the BM25 index derived for the new commit holds none of their words.
    fresh = recalled_text(repo_id, tmp_path / "fresh-reader")
    assert secrets_in(fresh) == [] and "[REDACTED:" in fresh
    assert secrets_in(recalled_text(repo_id, warm)) == []
    vocabulary = reader_vocabulary(hub_server, repo_id, after[0])
    assert set(tokenize(["a clean note about the build pipeline"])[0]) <= vocabulary
    for secret in SECRETS:
        words = {word for value in secret.values for word in tokenize([value])[0] if len(word) >= 10}
        assert not words & vocabulary, secret.kind
    again = funes("push", repo_id)
    assert again.returncode == 0 and "up to date" in again.stderr and commits(hub_server, repo_id) == after

    # History: the secrets are in an earlier commit until it is squashed.
    assert secrets_in(everything_published(hub_server, repo_id))
    purged = funes("push", repo_id, "--purge-history")
    assert purged.returncode == 0, purged.stderr
    assert "history squashed" in purged.stderr and "cannot be recalled" in purged.stderr
    assert len(commits(hub_server, repo_id)) == 1
    assert_no_secret_in(everything_published(hub_server, repo_id), SECRETS)
    assert not remote_status()["holds_removed"]
    assert "  removed" not in funes("status").stdout


def on_a_terminal(args: list[str], answers: dict[str, str], timeout: float = 300) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin, stdout and stderr (a person at it),
    typing ``answers[prompt]`` when ``prompt`` shows; the exit code and everything shown."""
    import pty
    import subprocess

    terminal, child_end = pty.openpty()
    process = subprocess.Popen([*FUNES, *args], stdin=child_end, stdout=child_end, stderr=child_end,
                               start_new_session=True)
    os.close(child_end)
    shown, pending = "", dict(answers)
    try:
        while True:
            ready, _, _ = select.select([terminal], [], [], timeout)
            assert ready, f"no output for {timeout} s; shown so far:\n{shown}"
            try:
                data = os.read(terminal, 4096)
            except OSError:  # the CLI exited and closed the terminal
                break
            if not data:
                break
            shown += data.decode("utf-8", "replace")
            for prompt in [p for p in pending if p in shown]:
                os.write(terminal, (pending.pop(prompt) + "\n").encode())
    finally:
        code = process.wait(timeout=timeout)
        os.close(terminal)
    return code, shown


@pytest.mark.slow
def test_scrub_on_a_terminal_offers_to_push_and_to_squash_the_history(leaked, hub_server, repo_id):
    assert secrets_in(everything_published(hub_server, repo_id))
    code, shown = on_a_terminal(["scrub"], {"replacing them there? [y/N]": "y",
                                            "so no earlier commit holds them? (copies already downloaded cannot be"
                                            " recalled) [y/N]": "y"})
    assert code == 0, shown
    assert f"hf://datasets/{repo_id} received" in shown and "history squashed" in shown
    assert len(commits(hub_server, repo_id)) == 1
    assert_no_secret_in(everything_published(hub_server, repo_id), SECRETS)
    assert not remote_status()["holds_removed"]


@pytest.mark.slow
def test_answering_no_leaves_the_remote_alone_and_scrub_push_retracts_unattended(leaked, hub_server, repo_id):
    before = commits(hub_server, repo_id)
    code, shown = on_a_terminal(["scrub"], {"replacing them there? [y/N]": "n"})
    assert code == 0, shown
    assert commits(hub_server, repo_id) == before and remote_status()["scrubbed_chunks"] > 0
    # Nothing left to scrub locally; --push still retracts what the remote holds.
    pushed = funes("scrub", "--push")
    assert pushed.returncode == 0, pushed.stderr
    assert "0 chunks replaced by 0" in pushed.stderr and "retracted" in pushed.stderr
    assert len(commits(hub_server, repo_id)) == len(before) + 1
    assert_no_secret_in(head_text(hub_server, repo_id), SECRETS)
    assert remote_status()["scrubbed_chunks"] == 0
