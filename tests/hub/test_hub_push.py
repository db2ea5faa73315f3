"""`funes push` against the loopback Hub: one guarded commit per push, private new repos,
the dataset card, receipts, the wrong-memory guard, concurrent pushes and the egress gate."""

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from huggingface_hub import CommitOperationAdd, HfApi

from fake_secrets import generate_secrets
from hub_helpers import (
    assert_no_secret_in,
    assert_no_secret_published,
    bm25_vocabulary,
    changed_files,
    chunk,
    commits,
    env_with,
    everything_published,
    everything_stored,
    funes,
    index_into_local_memory,
    local_ids,
    remote_ids,
    run_cli,
    secret_transcript,
    unredacted_indexing,
    write_claude_session,
    write_memory,
)

pytestmark = pytest.mark.usefixtures("hub_env")


@pytest.fixture
def repo_id(request):
    return "test-user/" + request.node.name.replace("[", "-").rstrip("]")


@pytest.fixture
def api(hub_server):
    return HfApi(endpoint=hub_server.endpoint, token=hub_server.token)


def readme(api, repo_id, revision="main"):
    from huggingface_hub import hf_hub_download

    return open(hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=revision,
                                endpoint=api.endpoint, token=api.token)).read()


def grow_a_session(memory_home, text):
    """Append a user turn to a Claude transcript and index it (vectors included)."""
    transcript = next((memory_home / ".claude" / "projects").rglob("claude_session.jsonl"))
    lines = transcript.read_text().splitlines()
    template = json.loads(lines[1])
    template.update(uuid="11111111-2222-4333-8444-555555555555", parentUuid=template.get("uuid"),
                    timestamp="2026-06-12T22:00:00.000Z", type="user", message={"role": "user", "content": text})
    with transcript.open("a") as handle:
        handle.write(json.dumps(template) + "\n")
    index_into_local_memory([transcript])


def test_first_push_is_one_commit_to_a_new_private_repo_with_the_card(memory_home, hub_server, api, repo_id, capsys):
    assert run_cli("push", repo_id, "--yes", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["created"] and report["private"] and report["card"] == "written"
    assert hub_server.is_private(repo_id, "dataset")
    assert len(commits(hub_server, repo_id)) == 2  # the repo's initial commit, then the push
    pushed = remote_ids(hub_server, repo_id)
    assert pushed == local_ids(memory_home / ".funes") and report["pushed"] == len(pushed)

    card = readme(api, repo_id)
    assert card.startswith("---\ntags:\n- funes\n")
    assert f"funes recall \"how did we fix the flaky upload test\" --memory {repo_id}" in card
    assert f'load_dataset("{repo_id}", split="train")' in card
    assert f"| chunks | {len(pushed)} |" in card
    assert "sentence-transformers/all-MiniLM-L6-v2" in card and "claude_code (" in card


def test_a_second_push_adds_only_new_files_in_one_commit_and_refreshes_the_card(memory_home, hub_server, api,
                                                                                repo_id, capsys):
    assert run_cli("push", repo_id, "--yes") == 0
    before_ids = remote_ids(hub_server, repo_id)
    before_commits = commits(hub_server, repo_id)
    grow_a_session(memory_home, "Now make the oceans reflect the sun correctly.")

    assert run_cli("push", repo_id) == 0  # no --yes: this memory pushed there before
    assert "pushed 1 chunks from 1 session(s)" in capsys.readouterr().err
    after_commits = commits(hub_server, repo_id)
    assert after_commits[1:] == before_commits  # exactly one new commit, on top
    changes = changed_files(hub_server, repo_id, after_commits[0])
    assert changes.pop("README.md") == "M"
    assert set(changes.values()) == {"A"}  # nothing Lance wrote before is rewritten or removed
    assert any(path.startswith("chunks.lance/data/") for path in changes)
    assert any(path.startswith("chunks.lance/_versions/") for path in changes)
    assert remote_ids(hub_server, repo_id) - before_ids == local_ids(memory_home / ".funes") - before_ids
    assert f"| chunks | {len(before_ids) + 1} |" in readme(api, repo_id)

    # Nothing new: no commit at all.
    assert run_cli("push", repo_id) == 0
    assert commits(hub_server, repo_id) == after_commits
    assert "up to date" in capsys.readouterr().err


def test_an_existing_repo_keeps_its_visibility_and_a_hand_written_card(memory_home, hub_server, api, repo_id):
    api.create_repo(repo_id, repo_type="dataset", private=False)
    api.create_commit(repo_id, [CommitOperationAdd("README.md", b"# Our team memory\n\nHands off.\n")],
                      repo_type="dataset", commit_message="card")
    from funes.hub.push import push

    report = push(repo_id, assume_yes=True)
    assert report.card == "kept" and not report.created and report.private is False
    assert not hub_server.is_private(repo_id, "dataset")
    assert readme(api, repo_id) == "# Our team memory\n\nHands off.\n"
    assert "README.md" not in changed_files(hub_server, repo_id, report.commit)


def test_the_first_push_to_a_memory_sharing_nothing_asks_and_off_a_terminal_refuses(memory_home, hub_server, api,
                                                                                   repo_id):
    result = funes("push", repo_id)
    assert result.returncode == 2
    assert result.stderr.startswith("funes: hf://datasets/" + repo_id) and "pass --yes" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not api.repo_exists(repo_id, repo_type="dataset")  # nothing created

    from funes.hub.push import PushRefused, push

    questions = []
    with pytest.raises(PushRefused):
        push(repo_id, confirm=lambda question: questions.append(question) or False)
    assert questions == [f"hf://datasets/{repo_id} is empty or does not exist yet;"
                         f" publish {len(local_ids(memory_home / '.funes'))} chunks of this memory there?"]
    report = push(repo_id, confirm=lambda question: True)
    assert report.commit is not None
    # Once this memory pushed there, nobody is asked again.
    grow_a_session(memory_home, "Add a moon.")
    assert push(repo_id, confirm=lambda question: pytest.fail("asked again")).pushed == 1


def test_a_remote_holding_other_chunks_is_the_wrong_memory_until_confirmed(memory_home, hub_server, repo_id,
                                                                          monkeypatch, tmp_path):
    from funes.hub.push import PushRefused, push

    push(repo_id, assume_yes=True)
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "other-host"))
    write_memory([chunk("other-session", turn, f"unrelated turn {turn}") for turn in range(3)])
    with pytest.raises(PushRefused, match="holds none of this memory's chunks"):
        push(repo_id)
    assert push(repo_id, assume_yes=True).pushed == 3


def test_a_tool_call_the_tier_policy_leaves_to_bm25_is_pushed_without_a_vector(hub_server, repo_id):
    from funes.embedding import DENSE_TIERS, IDENTITY
    from funes.hub.push import push
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    said = chunk("s-tiers", 0, "run the migration tests")
    call = chunk("s-tiers", 1, '{"command":"pytest tests/migrations"}', block_type="tool_use", tool_name="Bash",
                 tier=2)
    assert call.tier not in DENSE_TIERS
    write_memory([said])
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        writer.add_chunks([call])  # never owed a vector under the default policy
        assert writer.pending_count() == 0
    report = push(repo_id, assume_yes=True)
    assert report.pushed == 2 and report.gate.awaiting_vectors == 0
    assert remote_ids(hub_server, repo_id) == {said.id, call.id}


def test_blocks_awaiting_vectors_stay_local_until_embedded(hub_server, repo_id):
    from funes.embedding import IDENTITY
    from funes.hub.push import push
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    embedded = [chunk("s-vectors", turn, f"embedded turn {turn}") for turn in range(2)]
    long_block = [chunk("s-vectors", 2, "first half", split_idx=0), chunk("s-vectors", 2, "second half", split_idx=1,
                                                                        char_start=10)]
    write_memory([*embedded, long_block[0]])
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        writer.add_chunks([long_block[1]])  # no vector yet: its whole block waits
    report = push(repo_id, assume_yes=True)
    assert report.pushed == 2 and report.gate.awaiting_vectors == 2
    assert "2 chunk(s) wait for their vectors" in report.summary()
    assert remote_ids(hub_server, repo_id) == {c.id for c in embedded}

    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        writer.set_vectors([long_block[1].id], np.ones((1, IDENTITY.dim), dtype=np.float32) / IDENTITY.dim ** 0.5)
    assert push(repo_id).pushed == 2
    assert remote_ids(hub_server, repo_id) == {c.id for c in [*embedded, *long_block]}


def test_a_moved_head_is_read_again_and_retried(memory_home, hub_server, repo_id):
    from funes.hub.push import push

    hub_server.fail_next("commit", status=412)
    first = push(repo_id, assume_yes=True)
    assert first.attempts == 2
    grow_a_session(memory_home, "Tilt the axis by 23.4 degrees.")
    hub_server.fail_next("commit", status=409)
    assert push(repo_id).attempts == 2
    assert remote_ids(hub_server, repo_id) == local_ids(memory_home / ".funes")
    assert len(commits(hub_server, repo_id)) == 3


def split_between_two_homes(memory_home, tmp_path):
    """Two FUNES_HOMEs holding disjoint halves of the built memory, by session."""
    import shutil

    import lance

    source = memory_home / ".funes"
    sessions = sorted(set(lance.dataset(str(source / "memory" / "chunks.lance")).to_table(columns=["session_id"])
                          .column("session_id").to_pylist()))
    homes = []
    for name, keep in (("a", sessions[::2]), ("b", sessions[1::2])):
        home = tmp_path / name
        shutil.copytree(source, home)
        dataset = lance.dataset(str(home / "memory" / "chunks.lance"))
        dataset.delete("session_id NOT IN (" + ", ".join(f"'{s}'" for s in keep) + ")")
        shutil.rmtree(home / "memory" / "bm25")  # derived; rebuilt from the rows by readers
        homes.append(home)
    return homes


def test_two_homes_pushing_at_once_both_land(memory_home, hub_server, repo_id, tmp_path):
    homes = split_between_two_homes(memory_home, tmp_path)
    barrier = threading.Barrier(len(homes))
    results = {}

    def push_from(home):
        barrier.wait()
        results[home.name] = funes("push", repo_id, "--yes", env=env_with(FUNES_HOME=str(home)))

    threads = [threading.Thread(target=push_from, args=(home,)) for home in homes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result.returncode == 0 for result in results.values()), {k: r.stderr for k, r in results.items()}
    assert remote_ids(hub_server, repo_id) == local_ids(homes[0]) | local_ids(homes[1])
    assert len(commits(hub_server, repo_id)) == 3  # initial + one per home


def test_a_push_that_loses_the_race_starts_again_from_the_winner(memory_home, hub_server, repo_id, tmp_path,
                                                                 monkeypatch):
    """Home B commits while home A is between reading the head and committing: A's
    guarded commit is refused (412), and A redoes its push on top of B's."""
    from funes.hub import repo as hub_repo
    from funes.hub.push import push

    home_a, home_b = split_between_two_homes(memory_home, tmp_path)
    real_commit = hub_repo.HubRepo.commit
    interleaved = []

    def commit_after_b(self, *args, **kwargs):
        if not interleaved:
            interleaved.append(funes("push", repo_id, "--yes", env=env_with(FUNES_HOME=str(home_b))))
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(hub_repo.HubRepo, "commit", commit_after_b)
    monkeypatch.setenv("FUNES_HOME", str(home_a))
    report = push(repo_id, assume_yes=True)
    assert interleaved[0].returncode == 0, interleaved[0].stderr
    assert report.attempts == 2
    assert remote_ids(hub_server, repo_id) == local_ids(home_a) | local_ids(home_b)
    history = commits(hub_server, repo_id)
    assert len(history) == 3 and report.commit == history[0]


def test_status_says_what_this_host_has_not_pushed(memory_home, hub_server, repo_id, capsys):
    from funes.hub.push import push

    push(repo_id, assume_yes=True)
    assert run_cli("status", "--json") == 0
    [remote] = json.loads(capsys.readouterr().out)["remotes"]
    assert remote["remote"] == f"hf://datasets/{repo_id}" and remote["unpushed_chunks"] == 0
    grow_a_session(memory_home, "Add city lights on the night side.")
    assert run_cli("status") == 0
    assert f"push        hf://datasets/{repo_id}: 1 chunks in 1 session(s) not pushed" in capsys.readouterr().out


# --------------------------------------------------------------------------- secrets


SECRETS = generate_secrets(seed=11)


def test_secrets_in_a_transcript_are_in_no_byte_of_the_memory_or_the_hub(hub_server, repo_id, tmp_path):
    from funes.memory.tokens import tokenize

    index_into_local_memory([secret_transcript(tmp_path / "t" / "secrets.jsonl", SECRETS, clean_turns=2)])
    result = funes("push", repo_id, "--yes")
    assert result.returncode == 0, result.stderr
    # Every file of the memory (table versions and data files, BM25 segments, coverage)
    # and every blob the Hub repo ever received, raw and with Lance columns decoded.
    memory = Path(os.environ["FUNES_HOME"]) / "memory"
    stored = everything_stored(memory)
    assert_no_secret_in(stored, SECRETS)
    assert_no_secret_published(hub_server, repo_id, SECRETS)
    assert "[REDACTED:" in stored and "[REDACTED:" in everything_published(hub_server, repo_id)
    # BM25 stores words, lower-cased and stemmed: no long word of a secret is in any vocabulary.
    vocabulary = bm25_vocabulary(memory / "bm25")
    assert set(tokenize(["a clean note about the build pipeline"])[0]) <= vocabulary
    for secret in SECRETS:
        words = {word for value in secret.values for word in tokenize([value])[0] if len(word) >= 10}
        assert not words & vocabulary, secret.kind


@pytest.mark.slow
def test_the_gate_holds_back_every_block_with_a_secret_and_publishes_the_rest(hub_server, repo_id, tmp_path, capsys):
    with unredacted_indexing():
        index_into_local_memory([secret_transcript(tmp_path / "t" / "secrets.jsonl", SECRETS, clean_turns=3)])
    assert run_cli("push", repo_id, "--yes", "--json") == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["held_back"] >= len(SECRETS) and report["pushed"] == len(SECRETS) + 3  # the questions and the clean notes
    warning = captured.err.splitlines()[0]
    assert warning.startswith(f"warning: held back {report['held_back']} chunk(s) in {len(SECRETS)} block(s)"
                              " with secrets (")
    assert "aws-access-token×" in warning and "private-key×" in warning and warning.endswith("push again")
    assert_no_secret_published(hub_server, repo_id, SECRETS)


def test_a_secret_in_a_turns_stored_command_holds_its_blocks_back(hub_server, repo_id, capsys):
    """Every chunk of a turn carries the turn's commands, so a secret index-time redaction
    missed there would ship with text that is clean: the gate scans them with the block."""
    secret = next(s for s in SECRETS if s.kind == "github_classic_pat")
    write_memory([chunk("c0ffee00-0000-4000-8000-000000000001", 1, "I will deploy with the token now",
                        commands=f"deploy --token {secret.value}"),
                  chunk("c0ffee00-0000-4000-8000-000000000001", 2, "a clean note about the build pipeline",
                        files="\nsrc/build.py\tedit\n")])
    assert run_cli("push", repo_id, "--yes", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["held_back"], report["pushed"]) == (1, 1)
    assert_no_secret_published(hub_server, repo_id, [secret])


def test_nothing_publishable_exits_2_without_a_commit(hub_server, repo_id, tmp_path, api):
    with unredacted_indexing():
        index_into_local_memory([write_claude_session(tmp_path / "t" / "only-secrets.jsonl",
                                                      "5ec2e75e-0000-4000-8000-000000000002",
                                                      [f"output:\n{s.context_text}" for s in SECRETS[:4]])])
    result = funes("push", repo_id, "--yes")
    assert result.returncode == 2
    assert result.stderr.startswith(f"funes: hf://datasets/{repo_id}: nothing published, held back 4 chunk(s)")
    assert "run `funes scrub`, then push again" in result.stderr and result.stderr.count("\n") == 1
    assert not api.repo_exists(repo_id, repo_type="dataset")


def test_a_missing_scanner_means_nothing_is_clean(memory_home, hub_server, repo_id, monkeypatch, capsys):
    from funes import redaction

    def unavailable():
        raise redaction.SecretScannerUnavailable("the secret scanner is not installed: test")

    monkeypatch.setattr(redaction, "get_scanner", unavailable)
    assert run_cli("push", repo_id, "--yes") == 2
    assert "no clean scan (the secret scanner is not installed: test)" in capsys.readouterr().err


# --------------------------------------------------------------------------- the Dagster asset


def test_the_hub_publication_asset_runs_the_same_push(memory_home, hub_server, repo_id, monkeypatch):
    import dagster as dg

    from funes.assets.publication import hub_publication
    from funes.assets.resources import MemoryResource

    monkeypatch.setenv("FUNES_HUB_REMOTE", repo_id)
    run_config = {"ops": {"hub_publication": {"config": {"assume_yes": True}}}}
    result = dg.materialize([hub_publication], resources={"memory": MemoryResource()}, run_config=run_config,
                            instance=dg.DagsterInstance.ephemeral())
    assert result.success
    [materialization] = result.asset_materializations_for_node("hub_publication")
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert metadata["pushed"] == len(local_ids(memory_home / ".funes")) and metadata["card"] == "written"
    assert remote_ids(hub_server, repo_id) == local_ids(memory_home / ".funes")
