"""`funes scrub`: redact what can be located, drop what cannot, re-embed the replaced
chunks, rebuild the indexes and delete older versions; then the gate lets them out."""

import json

import lance
import lance.file
import pytest

from fake_secrets import generate_secrets
from hub_helpers import (
    DEPLOY_OUTPUT,
    assert_no_secret_published,
    chunk,
    deploy_with_token,
    everything_published,
    index_into_local_memory,
    local_ids,
    run_cli,
    secret_forms,
    secret_transcript,
    unredacted_indexing,
    write_memory,
)

SECRETS = generate_secrets(seed=23)


def memory_text(funes_home):
    """Every string in every file of the memory: Lance data files decoded (their
    strings are compressed), the BM25 segments' vocabularies as they are."""
    parts = []
    for path in (funes_home / "memory").rglob("*"):
        if path.suffix == ".lance" and "data" in path.parts:
            table = lance.file.LanceFileReader(str(path)).read_all().to_table()
            parts += [str(value) for column in table.columns for value in column.to_pylist()]
        elif path.is_file() and path.suffix in (".json", ".npy", ".bin"):
            parts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def contains_a_secret(text):
    return [s.kind for s in SECRETS for value in s.values if any(form in text for form in secret_forms(value))]


@pytest.fixture
def leaky_memory(isolated_env, tmp_path):
    """A memory indexed while the scanner missed every secret."""
    with unredacted_indexing():
        index_into_local_memory([secret_transcript(tmp_path / "t" / "secrets.jsonl", SECRETS, clean_turns=3)])
    return isolated_env / ".funes"


def test_scrub_repairs_the_memory_and_the_next_push_ships_it_clean(leaky_memory, hub_server, hub_env, capsys):
    repo_id = "test-user/scrubbed"
    assert contains_a_secret(memory_text(leaky_memory))
    assert run_cli("push", repo_id, "--yes", "--json") == 0
    held = json.loads(capsys.readouterr().out)["held_back"]
    assert held >= len(SECRETS)

    assert run_cli("scrub") == 0
    summary = capsys.readouterr().err
    assert summary.startswith(f"local: scanned {2 * len(SECRETS) + 3} blocks: ")
    assert "older versions deleted" in summary and "aws-access-token×" in summary
    assert contains_a_secret(memory_text(leaky_memory)) == []
    dataset = lance.dataset(str(leaky_memory / "memory" / "chunks.lance"))
    assert len(dataset.versions()) == 1
    assert dataset.count_rows("vector IS NULL") == 0  # replaced chunks were embedded again
    assert dataset.count_rows("text LIKE '%[REDACTED:%'") >= len(SECRETS) - 2  # few blocks have to be dropped

    assert run_cli("push", repo_id, "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["held_back"] == 0 and report["pushed"] > 0
    assert_no_secret_published(hub_server, repo_id, SECRETS)
    assert "[REDACTED:" in everything_published(hub_server, repo_id)
    assert run_cli("recall", "clean note about the build pipeline", "--no-rerank", "--json") == 0
    assert json.loads(capsys.readouterr().out)


def test_scrub_of_a_clean_memory_keeps_every_row_and_vector(memory_home, capsys):
    funes_home = memory_home / ".funes"
    before = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(columns=["id", "text", "vector"])
    assert run_cli("scrub") == 0
    assert "0 redacted, 0 dropped (secrets: none); 0 chunks replaced by 0" in capsys.readouterr().err
    after = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(columns=["id", "text", "vector"])
    assert sorted(after.to_pylist(), key=lambda r: r["id"]) == sorted(before.to_pylist(), key=lambda r: r["id"])


def test_scrub_changes_nothing_when_the_scanner_is_unavailable(leaky_memory, monkeypatch, capsys):
    from funes import redaction

    def unavailable():
        raise redaction.SecretScannerUnavailable("the secret scanner is not installed: test")

    monkeypatch.setattr(redaction, "get_scanner", unavailable)
    version = lance.dataset(str(leaky_memory / "memory" / "chunks.lance")).version
    ids = local_ids(leaky_memory)
    assert run_cli("scrub") == 1
    assert capsys.readouterr().err == "funes: the secret scanner is not installed: test\n"
    assert lance.dataset(str(leaky_memory / "memory" / "chunks.lance")).version == version
    assert local_ids(leaky_memory) == ids


def test_scrub_redacts_the_commands_a_turn_carries_and_keeps_its_rows(isolated_env, capsys):
    secret = next(s for s in SECRETS if s.kind == "github_classic_pat")
    session = "c0ffee00-0000-4000-8000-000000000002"
    write_memory([chunk(session, 1, "deploying with the token now", commands=f"deploy --token {secret.value}",
                        files="\nsrc/deploy.py\tread\n")])
    table = isolated_env / ".funes" / "memory" / "chunks.lance"
    before = lance.dataset(str(table)).to_table(columns=["id", "text", "vector"]).to_pylist()
    assert run_cli("scrub") == 0
    assert "(secrets: none)" not in capsys.readouterr().err
    after = lance.dataset(str(table)).to_table(columns=["id", "text", "vector", "files", "commands"]).to_pylist()
    assert [{k: r[k] for k in ("id", "text", "vector")} for r in after] == before
    assert after[0]["commands"].startswith("deploy --token [REDACTED:") and after[0]["files"] == "\nsrc/deploy.py\tread\n"
    assert contains_a_secret(memory_text(isolated_env / ".funes")) == []


def test_scrub_embeds_the_replacements_the_tier_policy_owes_a_vector(isolated_env, capsys):
    """A replaced tool call is left to BM25, as a first index leaves it; replaced text
    gets its vector again."""
    secret = next(s for s in SECRETS if s.kind == "github_classic_pat")
    session = "c0ffee00-0000-4000-8000-000000000003"
    write_memory([
        chunk(session, 1, f"the token is {secret.value}, keep it out of the logs"),
        chunk(session, 2, json.dumps({"command": f"deploy --token {secret.value}"}), block_type="tool_use",
              tool_name="Bash", tier=2),
    ])
    assert run_cli("scrub") == 0
    capsys.readouterr()
    rows = lance.dataset(str(isolated_env / ".funes" / "memory" / "chunks.lance")).to_table(
        columns=["block_type", "text", "vector"]).to_pylist()
    assert sorted(r["block_type"] for r in rows) == ["text", "tool_use"]
    assert all("[REDACTED:" in r["text"] for r in rows)
    by_type = {r["block_type"]: r["vector"] for r in rows}
    assert by_type["text"] is not None and by_type["tool_use"] is None


def test_scrub_embeds_a_clean_result_again_when_its_call_held_the_secret(isolated_env, capsys):
    """A tool result's vector reads its call (funes/indexing.py): once the call is
    redacted, the result is embedded again from the redacted call, so no vector still
    derives from the secret, and the next push replaces it on the remote."""
    from funes.embedding import OnnxEmbedder
    from funes.memory.coverage import Coverage
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    secret = next(s for s in SECRETS if s.kind == "github_classic_pat")
    write_memory(deploy_with_token("c0ffee00-0000-4000-8000-000000000004", secret.value))
    table = isolated_env / ".funes" / "memory" / "chunks.lance"
    before = {r["block_type"]: r for r in lance.dataset(str(table)).to_table(
        columns=["id", "block_type", "vector"]).to_pylist()}
    assert run_cli("scrub") == 0
    assert "; 1 tool result(s) embedded again with their call redacted;" in capsys.readouterr().err
    rows = {r["block_type"]: r for r in lance.dataset(str(table)).to_table(
        columns=["id", "block_type", "text", "vector"]).to_pylist()}
    command = json.loads(rows["tool_use"]["text"])["command"]
    assert command.startswith("deploy --token [REDACTED:") and rows["tool_result"]["text"] == DEPLOY_OUTPUT
    expected = OnnxEmbedder().embed_chunks([f"Bash: {command}\n{DEPLOY_OUTPUT}"], [3],
                                           Memory.open(local_memory()).int8_tiers)
    assert abs(rows["tool_result"]["vector"] - expected[0]).max() < 1e-4
    assert rows["text"]["vector"] == before["text"]["vector"]  # a clean turn keeps its vector
    coverage = Coverage(isolated_env / ".funes" / "memory" / "coverage.sqlite")
    assert {rows["tool_use"]["id"], rows["tool_result"]["id"]} <= set(coverage.scrubbed())
    coverage.close()
