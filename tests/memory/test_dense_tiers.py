"""Which chunks get a vector: the tier policy measured on the dev sets
(`funes.embedding.DENSE_TIERS`, BENCHMARKS.md "Recall by embedded tier"), the same
whichever path writes the memory, and `funes index --embed-all` for every tier."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from funes.embedding import DENSE_TIERS, EVERY_TIER
from paths import REAL

FUNES = [sys.executable, "-m", "funes.cli"]


def funes(*args, timeout=600):
    return subprocess.run([*FUNES, *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy())


def vectors_by_tier(funes_home: Path) -> tuple[Counter, Counter]:
    """(rows with a vector, rows without), counted by tier, read from the Lance table."""
    import lance

    table = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(columns=["tier", "vector"])
    tiers, vectors = table.column("tier").to_pylist(), table.column("vector").is_null().to_pylist()
    return (Counter(t for t, missing in zip(tiers, vectors) if not missing),
            Counter(t for t, missing in zip(tiers, vectors) if missing))


def status() -> dict:
    result = funes("status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_memory_indexed_by_default_has_vectors_for_exactly_the_policys_tiers(memory_home):
    embedded, missing = vectors_by_tier(memory_home / ".funes")
    assert set(DENSE_TIERS) < set(EVERY_TIER), "the measured policy leaves a tier to BM25"
    assert set(embedded) == set(DENSE_TIERS)
    assert missing and set(missing) == set(EVERY_TIER) - set(DENSE_TIERS)
    report = status()
    assert report["embedded"] == sum(embedded.values()) and report["pending_by_tier"] == {}
    result = funes("index", "--yes")
    assert result.returncode == 0, result.stderr
    assert "0 embedded, 0 awaiting vectors" in result.stderr and "to embed the rest" not in result.stderr


@pytest.mark.slow  # among the longest tests (20–35 s on 2 loaded cores): the default suite stays under ten minutes
def test_embed_all_fills_the_other_tiers_and_the_memory_keeps_embedding_them(memory_home, tmp_path):
    _, missing = vectors_by_tier(memory_home / ".funes")
    result = funes("index", "--embed-all", "--yes")
    assert result.returncode == 0, result.stderr
    assert f"{sum(missing.values())} embedded, 0 awaiting vectors" in result.stderr
    embedded, missing = vectors_by_tier(memory_home / ".funes")
    assert not missing and set(embedded) == set(EVERY_TIER)
    report = status()
    assert report["embedded"] == report["chunks"] and report["pending_by_tier"] == {}

    # A later write by another path (a hook's turn: index_units with an embedder)
    # follows the memory's stamp, not the default.
    from funes.discovery import discover
    from funes.embedding import load_embedder
    from funes.indexing import index_units, open_writer
    from funes.memory.location import local_memory

    session = "5d0c1a2e-0000-4000-8000-00000000a11c"
    transcript = tmp_path / ".claude" / "projects" / "-tmp-grown" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True)
    source = (REAL / "as_claude_small.jsonl").read_text()
    transcript.write_text(source.replace('"sessionId":"ses_stage0_small"', f'"sessionId":"{session}"'))
    with open_writer(local_memory()) as writer:
        assert writer.dense_tiers == EVERY_TIER
        report = index_units(writer, discover(transcript), embedder=load_embedder("cpu"))
    assert report.chunks_added and report.per_session[next(iter(report.per_session))].embedded_by_tier[2]
    embedded, missing = vectors_by_tier(memory_home / ".funes")
    assert not missing


def test_inline_embedding_of_a_fresh_memory_follows_the_policy(isolated_env):
    from funes.discovery import discover
    from funes.embedding import load_embedder
    from funes.indexing import index_units, open_writer
    from funes.memory.location import local_memory

    transcript = REAL / "as_claude_small.jsonl"
    with open_writer(local_memory()) as writer:
        report = index_units(writer, discover(transcript), embedder=load_embedder("cpu"))
        assert report.pending == 0
    embedded, missing = vectors_by_tier(isolated_env / ".funes")
    assert set(embedded) <= set(DENSE_TIERS) and set(missing) == set(EVERY_TIER) - set(DENSE_TIERS)
    assert report.embedded == sum(embedded.values())


def test_recall_finds_a_tool_call_without_a_vector_by_keyword(memory_home):
    import re

    import lance

    dataset = lance.dataset(str(memory_home / ".funes" / "memory" / "chunks.lance"))
    texts = dataset.to_table(columns=["text"], filter="vector IS NULL AND block_type = 'tool_use'").column("text")
    # A word of one such call that no other chunk of the memory holds: what a user
    # recalls a tool call by (a flag, a path), whatever the ranking's weights.
    everywhere = Counter(w.lower() for text in dataset.to_table(columns=["text"]).column("text").to_pylist()
                         for w in set(re.findall(r"[A-Za-z]{8,}", text)))
    word = next(w for text in texts.to_pylist() for w in re.findall(r"[A-Za-z]{8,}", text)
                if everywhere[w.lower()] == 1)
    result = funes("recall", word, "--json", "-k", "5", "--no-rerank")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert any(h["block_type"] == "tool_use" and word.lower() in h["text"].lower() for h in hits), word


def _stored_vectors(funes_home: Path, where: str) -> tuple[list[str], np.ndarray]:
    """(embedding inputs, stored vectors) of the rows matching ``where``."""
    import lance

    from funes.indexing import embedding_input
    from funes.memory.documents import DOCUMENT_COLUMNS
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    table = lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(
        columns=[*DOCUMENT_COLUMNS, "vector"], filter=f"vector IS NOT NULL AND {where}", limit=24)
    rows = table.to_pylist()
    assert rows, where
    memory = Memory.open(local_memory())
    calls = memory.call_heads(rows) if memory.results_read_calls else {}
    return ([embedding_input(r["text"], r["block_type"], r["tool_name"], calls.get(r["id"])) for r in rows],
            np.asarray([r["vector"] for r in rows], dtype=np.float32))


def test_a_new_memory_stores_int8_vectors_for_text_and_tool_results(memory_home):
    """The stamp a new memory gets (`INT8_TIERS`): a CPU writer computes the vectors of
    text and of tool results with the int8 model; queries stay fp32."""
    from funes.embedding import INT8_TIERS, OnnxEmbedder
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    assert Memory.open(local_memory()).int8_tiers == INT8_TIERS == (1, 3)
    fp32, int8 = OnnxEmbedder(), OnnxEmbedder(precision="int8")
    for tier in INT8_TIERS:
        texts, stored = _stored_vectors(memory_home / ".funes", f"tier = {tier}")
        assert np.abs(stored - int8.embed(texts)).max() < 1e-4, tier
        assert np.abs(stored - fp32.embed(texts)).max() > 1e-3, "the int8 model computes other vectors"


def test_a_memory_stamped_for_int8_tool_results_only_keeps_its_text_fp32(isolated_env):
    """A memory created while only tool results were embedded at int8 was stamped
    ``3``: every writer keeps following that stamp, so its text is never embedded at int8 beside the fp32 vectors it holds."""
    from funes.embedding import INT8_TIERS_KEY, OnnxEmbedder
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory
    from hub_helpers import chunk

    rows = [chunk("s-24", turn, f"We retry the upload {turn} times before giving up.", tier=1) for turn in range(4)]
    rows += [chunk("s-24", turn + 4, f"$ pytest -q\n{turn} passed, 1 failed: test_upload_retries", tier=3,
                   block_type="tool_result", tool_name="Bash") for turn in range(4)]
    with open_writer(local_memory()) as writer:
        writer.add_chunks(rows)
        writer.table.to_lance().update_schema_metadata({INT8_TIERS_KEY: "3"})
        writer.table.checkout_latest()
        assert writer.int8_tiers == (3,)
        assert embed_backlog(writer, OnnxEmbedder()) == len(rows)
    fp32, int8 = OnnxEmbedder(), OnnxEmbedder(precision="int8")
    texts, stored = _stored_vectors(isolated_env / ".funes", "tier = 1")
    assert np.abs(stored - fp32.embed(texts)).max() < 1e-4
    texts, stored = _stored_vectors(isolated_env / ".funes", "tier = 3")
    assert np.abs(stored - int8.embed(texts)).max() < 1e-4


def test_a_memory_made_before_the_precision_stamp_keeps_fp32_tool_results(isolated_env):
    """A memory without the stamp holds fp32 vectors only: its tool results never get
    int8 ones beside them, whichever path embeds (the backlog, a hook's turn)."""
    from funes.discovery import discover
    from funes.embedding import INT8_TIERS_KEY, OnnxEmbedder
    from funes.indexing import embed_backlog, index_units, open_writer
    from funes.memory.location import local_memory
    from hub_helpers import chunk

    output = [chunk("s-old", turn, f"$ pytest -q\n{turn} passed, 1 failed: test_upload_retries", tier=3,
                    block_type="tool_result", tool_name="Bash") for turn in range(6)]
    with open_writer(local_memory()) as writer:
        writer.add_chunks(output)
        writer.table.to_lance().update_schema_metadata({INT8_TIERS_KEY: ""})  # as no funes before it wrote
        writer.table.checkout_latest()
        assert writer.int8_tiers == ()
        assert embed_backlog(writer, OnnxEmbedder()) == len(output)
        index_units(writer, discover(REAL / "as_claude_small.jsonl"),
                    embedder=OnnxEmbedder())
    texts, stored = _stored_vectors(isolated_env / ".funes", "tier = 3")
    assert np.abs(stored - OnnxEmbedder().embed(texts)).max() < 1e-4


@pytest.mark.slow  # exports the model from torch into an empty cache (40 s or more)
def test_a_backlog_owing_tool_results_derives_the_int8_model_before_its_first_vector(shared_cache, tmp_path,
                                                                                      monkeypatch):
    """The int8 model is derived (once per machine, in a child of ~1.1 GB) when the
    backlog starts, not when it reaches tool results: a first index of 1M chunks grew
    from ~0.95 to 1.5-1.75 GiB within tier 1, and the two together would pass 2 GB.
    In a memory stamped for int8 tool results only (``3``) the first vector is a
    text's (fp32): the int8 model must exist already."""
    from funes.embedding import INT8_TIERS_KEY, OnnxEmbedder, onnx_path
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory
    from hub_helpers import chunk
    from memory_helpers import copy_embedding_export

    OnnxEmbedder()  # the fp32 export, in the shared cache
    monkeypatch.setenv("FUNES_CACHE_DIR", str(tmp_path / "cache"))  # which holds it and nothing else
    copy_embedding_export(shared_cache)
    rows = [chunk("s-new", 0, "We retry the upload three times before giving up.", tier=1),
            chunk("s-new", 1, "$ pytest -q\n1 failed: test_upload_retries", tier=3, block_type="tool_result",
                  tool_name="Bash")]
    with open_writer(local_memory()) as writer:
        writer.add_chunks(rows)
        writer.table.to_lance().update_schema_metadata({INT8_TIERS_KEY: "3"})
        writer.table.checkout_latest()
        assert writer.int8_tiers == (3,) and not onnx_path("int8").exists()
        assert embed_backlog(writer, OnnxEmbedder(), limit=1) == 1
        assert writer.stats().pending_by_tier == {3: 1}  # the text took the one vector allowed
    assert onnx_path("int8").is_file()


UPLOAD_OUTPUT = "3 passed, 1 failed: test_upload_retries"


def _upload_run(session: str) -> list:
    from hub_helpers import chunk

    return [chunk(session, 0, "run the upload tests", tier=1),
            chunk(session, 1, json.dumps({"command": "pytest -q tests/test_upload.py"}), tier=2,
                  block_type="tool_use", tool_name="Bash"),
            chunk(session, 2, UPLOAD_OUTPUT, tier=3, block_type="tool_result", tool_name="Bash")]


@pytest.mark.parametrize("stamped", [True, False])
def test_a_tool_result_is_embedded_after_its_call_whichever_path_embeds_it(isolated_env, stamped):
    """"What did the upload test print" names the command, not the output: a new memory
    embeds a result after the head of its call, in a write (a hook's turn) and in the
    backlog alike.  A memory made before that stamp embeds the output alone, whichever
    path writes, until `index --rebuild` clears its vectors and stamps it."""
    from funes.embedding import RESULT_INPUT_KEY, OnnxEmbedder
    from funes.indexing import SessionChunks, embed_backlog, embed_stage, open_writer
    from funes.memory.location import local_memory

    rows = _upload_run("s-25")
    embedder = OnnxEmbedder()
    with open_writer(local_memory()) as writer:
        if not stamped:
            writer.table.to_lance().update_schema_metadata({RESULT_INPUT_KEY: ""})
            writer.table.checkout_latest()
        assert writer.results_read_calls is stamped
        writer.add_chunks(rows)
        assert embed_backlog(writer, embedder) == 2  # the call is left to BM25
        int8 = writer.int8_tiers
        inline = embed_stage([SessionChunks(None, rows, None)], set(), embedder, (1, 3), int8,
                             writer.results_read_calls)
    read = ("Bash: pytest -q tests/test_upload.py\n" if stamped else "Bash: ") + UPLOAD_OUTPUT
    texts, stored = _stored_vectors(isolated_env / ".funes", "block_type = 'tool_result'")
    assert texts == [read]
    expected = embedder.embed_chunks([read], [3], int8)[0]
    assert np.abs(stored[0] - expected).max() < 1e-4
    assert np.abs(inline[rows[2].id] - expected).max() < 1e-4
    other = ("Bash: " if stamped else "Bash: pytest -q tests/test_upload.py\n") + UPLOAD_OUTPUT
    assert np.abs(stored[0] - embedder.embed_chunks([other], [3], int8)[0]).max() > 1e-3


def test_rebuilding_a_memory_made_before_the_stamp_embeds_its_results_after_their_calls(isolated_env):
    from funes.embedding import IDENTITY, RESULT_INPUT_KEY, OnnxEmbedder
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory

    with open_writer(local_memory()) as writer:
        writer.table.to_lance().update_schema_metadata({RESULT_INPUT_KEY: ""})
        writer.table.checkout_latest()
        writer.add_chunks(_upload_run("s-26"))
        writer.rebuild_for_new_model(IDENTITY.to_metadata(), IDENTITY.dim)
        assert writer.results_read_calls
        assert embed_backlog(writer, OnnxEmbedder()) == 2
    texts, _ = _stored_vectors(isolated_env / ".funes", "block_type = 'tool_result'")
    assert texts == ["Bash: pytest -q tests/test_upload.py\n" + UPLOAD_OUTPUT]


def test_a_result_reads_only_the_head_of_a_long_call():
    """The model reads 256 word pieces at most: a long call (a heredoc, a file written
    whole) must not push the result's own output out of what its vector reads."""
    from funes.indexing import RESULT_CALL_CHARS, embedding_input

    command = " ".join(f"--flag-{i}" for i in range(100))
    read = embedding_input("3 passed", "tool_result", "Bash", command)
    head, output = read.split("\n")
    assert output == "3 passed"
    assert head.startswith("Bash: --flag-0 --flag-1 ") and len(head) <= len("Bash: ") + RESULT_CALL_CHARS
    assert command.startswith(head.removeprefix("Bash: ") + " ")  # cut between words
