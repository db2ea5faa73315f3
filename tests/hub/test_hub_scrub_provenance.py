"""Scrubbing a secret found only in a turn's stored files/commands reaches the remotes:
`funes scrub` redacts it in place and records those chunks, status names the remote that
still holds it, and the next push replaces them there, for readers with an empty cache
too.  And a remote table of the older (version 1) shape gets the provenance columns."""

import json
import shutil
from pathlib import Path

import lance
import pytest

from fake_secrets import generate_secrets
from hub_helpers import (
    chunk,
    deploy_with_token,
    env_with,
    funes,
    head_text,
    local_ids,
    remote_ids,
    remote_rows,
    remote_status,
    secret_forms,
    unscanned_egress,
    write_memory,
)

pytestmark = pytest.mark.usefixtures("hub_env")

SECRET = next(s for s in generate_secrets(seed=31) if s.kind == "github_classic_pat")
SESSION = "c0ffee00-0000-4000-8000-000000000031"
FILES = "\nsrc/deploy.py\tread\n"


def provenance_memory() -> None:
    """Turn 1's two blocks say nothing secret; the command the turn ran holds the token."""
    command = f"deploy --token {SECRET.value}"
    write_memory([
        chunk(SESSION, 1, "A clean note about the build pipeline: deploying it now.", commands=command, files=FILES),
        chunk(SESSION, 1, "The deploy of the build pipeline finished.", block_idx=1, commands=command, files=FILES),
        chunk(SESSION, 2, "Another clean note about the release checklist."),
    ])


def holds_secret(text: str) -> bool:
    return any(form in text for value in SECRET.values for form in secret_forms(value))


def reader_env(home: Path) -> dict[str, str]:
    """Another machine: its own FUNES_HOME and HF cache; the head re-resolved every time."""
    return env_with(HOME=str(home), FUNES_HOME=str(home / ".funes"), HF_HOME=str(home / "hf"),
                    HF_HUB_CACHE=str(home / "hf" / "hub"), FUNES_HUB_HEAD_TTL="0")


def read_back(repo_id: str, home: Path) -> str:
    """What a reader of the remote gets: recall's hits (with their turns' commands and
    files) and the scan of the turns that ran a command holding the token."""
    recalled = funes("recall", "clean note about the build pipeline", "--memory", repo_id, "--json", "-k", "50",
                     "--no-rerank", env=reader_env(home))
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)
    scanned = funes("scan", "deploy", "--command", SECRET.value, "--memory", repo_id, "--json", env=reader_env(home))
    assert scanned.returncode == 0, scanned.stderr
    return recalled.stdout + scanned.stdout


@pytest.mark.slow
def test_a_secret_scrubbed_from_a_stored_command_leaves_the_remote(isolated_env, hub_server, tmp_path):
    from funes.hub.push import push

    repo_id = "test-user/scrub-provenance"
    provenance_memory()
    with unscanned_egress():
        push(repo_id, assume_yes=True)
    assert holds_secret(head_text(hub_server, repo_id))  # in the commands column only
    assert holds_secret(read_back(repo_id, tmp_path / "reader-before"))
    assert remote_status()["scrubbed_chunks"] == 0

    scrubbed = funes("scrub")
    assert scrubbed.returncode == 0, scrubbed.stderr
    assert "0 chunks replaced by 0; files/commands redacted on 2 chunk(s)" in scrubbed.stderr
    assert f"warning: hf://datasets/{repo_id} received 2 of the scrubbed chunks" in scrubbed.stderr
    status = remote_status()
    assert (status["scrubbed_chunks"], status["holds_removed"], status["checked"]) == (2, True, "receipts")
    asked = remote_status("--check-remotes")
    assert (asked["scrubbed_chunks"], asked["holds_removed"], asked["checked"]) == (2, True, "hub")

    pushed = funes("push", repo_id, "--json")
    assert pushed.returncode == 0, pushed.stderr
    report = json.loads(pushed.stdout)
    assert (report["scrub_retracted"], report["pushed"], report["held_back"]) == (2, 2, 0)
    head = head_text(hub_server, repo_id)
    assert not holds_secret(head)
    assert "deploy --token [REDACTED:" in head and "clean note about the build pipeline" in head
    assert remote_ids(hub_server, repo_id) == local_ids(isolated_env / ".funes")
    fresh = read_back(repo_id, tmp_path / "reader-after")
    assert not holds_secret(fresh) and "[REDACTED:" in fresh
    for flags in ((), ("--check-remotes",)):
        assert remote_status(*flags)["scrubbed_chunks"] == 0
    again = funes("push", repo_id)
    assert again.returncode == 0 and "up to date" in again.stderr


@pytest.mark.slow
def test_a_result_embedded_again_for_its_scrubbed_call_gets_its_new_vector_on_the_remote(isolated_env, hub_server):
    """A tool result's vector reads its call: once scrub redacts the call and embeds the
    result again, the remote still holds the vector made from the secret until the next
    push replaces it, and status says so."""
    from funes.hub.push import push

    repo_id = "test-user/scrub-result-vector"
    write_memory(deploy_with_token(SESSION, SECRET.value))
    with unscanned_egress():
        push(repo_id, assume_yes=True)
    scrubbed = funes("scrub")
    assert scrubbed.returncode == 0, scrubbed.stderr
    assert "1 chunks replaced by 1;" in scrubbed.stderr and "; 1 tool result(s) embedded again" in scrubbed.stderr
    local = {row["block_type"]: row for row in lance.dataset(str(isolated_env / ".funes" / "memory" / "chunks.lance"))
             .to_table(columns=["id", "block_type", "vector"]).to_pylist()}
    result = local["tool_result"]["id"]
    before = {row["id"]: row["vector"] for row in remote_rows(hub_server, repo_id, ["id", "vector"])}
    assert before[result] != local["tool_result"]["vector"]
    assert remote_status("--check-remotes")["scrubbed_chunks"] == 2  # the call and its result

    pushed = funes("push", repo_id, "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["scrub_retracted"] == 2
    after = {row["id"]: row["vector"] for row in remote_rows(hub_server, repo_id, ["id", "vector"])}
    assert after[result] == local["tool_result"]["vector"]
    assert after[local["text"]["id"]] == before[local["text"]["id"]]
    assert not holds_secret(head_text(hub_server, repo_id))
    assert remote_status("--check-remotes")["scrubbed_chunks"] == 0


def test_pushing_onto_a_version_1_table_gives_it_the_provenance_columns(isolated_env, hub_server, tmp_path):
    """A remote first pushed by a funes without files/commands: rows appended later keep theirs."""
    from funes.hub.push import push
    from funes.memory.location import MemoryLocation
    from funes.memory.schema import PROVENANCE_COLUMNS

    repo_id = "test-user/scrub-provenance-v1"
    write_memory([chunk(SESSION, 2, "Another clean note about the release checklist.")])
    older = tmp_path / "older-memory"
    shutil.copytree(isolated_env / ".funes" / "memory", older)
    table = lance.dataset(str(older / "chunks.lance"))
    table.drop_columns(list(PROVENANCE_COLUMNS))
    assert not set(PROVENANCE_COLUMNS) & set(lance.dataset(str(older / "chunks.lance")).schema.names)
    push(repo_id, location=MemoryLocation(uri=str(older), label="older"), assume_yes=True)

    write_memory([chunk(SESSION, 3, "A clean note about the build pipeline: deploying it now.",
                        commands="make deploy", files=FILES)])
    pushed = funes("push", repo_id, "--yes", "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["pushed"] == 1
    found = funes("scan", "deploying", "--command", "make deploy", "--memory", repo_id, "--json",
                  env=reader_env(tmp_path / "reader"))
    assert found.returncode == 0, found.stderr
    assert [total["blocks"] for total in json.loads(found.stdout)["totals"]] == [1]


def test_a_block_replaced_for_its_text_keeps_its_turns_redacted_commands(isolated_env):
    """The replacement chunks of a block whose text held the token copy the turn's
    provenance: the redacted one, not what the turn stored before."""
    command = f"deploy --token {SECRET.value}"
    write_memory([chunk(SESSION, 1, f"Deploying with {SECRET.value} now.", commands=command, files=FILES),
                  chunk(SESSION, 1, "The deploy finished.", block_idx=1, commands=command, files=FILES)])
    scrubbed = funes("scrub")
    assert scrubbed.returncode == 0, scrubbed.stderr
    assert "1 chunks replaced by 1; files/commands redacted on 1 chunk(s)" in scrubbed.stderr
    rows = lance.dataset(str(isolated_env / ".funes" / "memory" / "chunks.lance")).to_table(
        columns=["text", "files", "commands"]).to_pylist()
    assert len(rows) == 2 and all(row["files"] == FILES for row in rows)
    assert not any(holds_secret(row["text"]) or holds_secret(row["commands"]) for row in rows), rows
    assert all(row["commands"].startswith("deploy --token [REDACTED:") for row in rows)
