"""Recall and get over a memory built from every agent's fixtures, through the CLI
and in-process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from memory_helpers import LONG_SESSION

FUNES = [sys.executable, "-m", "funes.cli"]


def funes(*args, env=None, timeout=120):
    return subprocess.run([*FUNES, *args], capture_output=True, text=True, timeout=timeout,
                          env=env or os.environ.copy())


def recall_json(*args):
    result = funes("recall", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def recaller(memory_home):
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    return Recaller.open(open_memory(None))


@pytest.mark.parametrize("query, expected", [
    ("make a realistic interactive 3D model of the planet", "Build me a photo-realistic, highly interactive 3D digital twin of Earth."),
    ("why did the test depend on dictionary order", "The test depends on dict ordering; sort the keys."),
])
def test_a_paraphrase_brings_the_known_passage_first(memory_home, query, expected):
    hits = recall_json(query, "-k", "3")
    assert hits[0]["text"] == expected
    top = hits[0]
    for field in ("harness", "session_id", "turn_uuid", "ts", "workdir", "seq", "block_type", "role"):
        assert top[field] not in (None, ""), field
    assert set(top["scores"]) >= {"bm25", "dense", "fused", "rerank", "recency", "final"}


def test_a_question_asking_for_a_number_brings_the_output_that_holds_one_first(recaller):
    """"How many" asks for a number: of the chunks about tests passing, the run's
    tally ("2 failed, 3 passed") comes before text that only talks about tests."""
    from funes.retrieval.answer_types import asked_types, holds_answer

    question = "how many tests passed"
    hits = recaller.recall(question, k=3).hits
    assert hits[0].text == "2 failed, 3 passed"
    assert holds_answer({"text": hits[0].text, "role": hits[0].role, "block_type": hits[0].block_type,
                         "tool_name": hits[0].tool_name}, asked_types(question))


def test_a_keyword_match_the_vector_search_left_out_is_fused_with_its_own_cosine(recaller, monkeypatch):
    """With the vector search's pool cut to six, BM25's other candidates reach fusion
    with the query's true cosine to their stored vectors (not the pool's floor); rows
    without a vector (tool calls) are not given one."""
    import funes.retrieval.search as search
    from funes.retrieval.fusion import Fusion

    seen = {}
    fuse = Fusion.fuse

    def spying(self, lexical, dense, pool=None, pending=(), cosines=None):
        seen.update(lexical=lexical, dense=dense, cosines=dict(cosines or {}))
        return fuse(self, lexical, dense, pool, pending, cosines)

    monkeypatch.setattr(search, "POOL", 6)
    monkeypatch.setattr(Fusion, "fuse", spying)
    question = "the test run and the flaky test"
    recaller.recall(question, k=2, candidates=2)
    left_out = [chunk for chunk, _ in seen["lexical"] if chunk not in dict(seen["dense"])]
    assert left_out and set(seen["cosines"]) <= {chunk for chunk, _ in seen["lexical"]}
    rows = recaller.memory.rows(left_out, ("id", "vector"))
    asked = recaller.embedder.embed([question])[0]
    with_vector = {chunk for chunk, row in rows.items() if row["vector"] is not None}
    assert with_vector and with_vector <= set(seen["cosines"])
    for chunk in with_vector:
        vector = np.asarray(rows[chunk]["vector"], dtype=np.float32)
        expected = float(vector @ asked / (np.linalg.norm(vector) * np.linalg.norm(asked)))
        assert seen["cosines"][chunk] == pytest.approx(expected, abs=1e-5)
        assert seen["cosines"][chunk] <= min(score for _, score in seen["dense"]) + 1e-5
    assert not {chunk for chunk, row in rows.items() if row["vector"] is None} & set(seen["cosines"])


def test_the_default_rerank_stage_runs_without_a_download(memory_home):
    hits = recall_json("flaky test", "-k", "2")
    assert hits and all(h["reranker"] == "maxsim-static" and h["reranker_note"] is None for h in hits)
    assert all(h["scores"]["rerank"] is not None for h in hits)


def test_the_reranker_fallback_is_visible(memory_home, monkeypatch):
    # A cross-encoder named but not in the cache, and the Hub unreachable.
    monkeypatch.setenv("FUNES_RERANKER", "cross-encoder/ms-marco-MiniLM-L6-v2")
    hits = recall_json("flaky test", "-k", "2")
    assert hits and all(h["reranker"] is None for h in hits)
    assert "cross-encoder" in hits[0]["reranker_note"] or "reranker" in hits[0]["reranker_note"]
    status = json.loads(funes("status", "--json").stdout)
    assert status["reranker"]["available"] is False and status["reranker"]["reason"]


def test_each_filter_excludes_what_it_must(recaller):
    from funes.retrieval.filters import Filters

    query = "test"

    def hits(**filters):
        return recaller.recall(query, k=20, neighbors=0, filters=Filters.parse(**filters)).hits

    everything = hits()
    assert {h.harness for h in everything} > {"hermes"}
    assert {h.harness for h in hits(harness="hermes")} == {"hermes"}
    assert {h.harness for h in hits(harness="claude")} == {"claude_code"}
    assert {h.block_type for h in hits(block_type="tool_use")} == {"tool_use"}
    assert {h.session_id for h in hits(session="s_main")} == {"s_main"}
    assert all(h.workdir.startswith("-home-dev-proj") for h in hits(workdir="/home/dev/proj"))
    assert {h.branch for h in hits(branch="main")} == {"main"}
    assert hits(repo="nobody/nothing") == []
    dated = hits(since="2026-05-28", until="2026-05-29")
    assert dated and all("2026-05-28" <= h.ts[:10] <= "2026-05-29" for h in dated)
    assert hits(since="1d") == []  # the fixtures are older than a day


def test_a_repo_filter_matches_the_checkout_remote(memory_home, tmp_path):
    # A session whose cwd is a git checkout gets its owner/name from the remote.
    checkout = tmp_path / "work" / "proj"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/rocket.git\n')
    session = memory_home / ".claude" / "projects" / "-x" / "repo-session.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"type": "user", "uuid": "r1", "sessionId": "repo-session", "cwd": str(checkout),
                                   "gitBranch": "feature/thrust", "timestamp": "2026-07-01T00:00:00Z",
                                   "message": {"role": "user", "content": "tune the rocket thrust curve"}}) + "\n")
    assert funes("index", str(session)).returncode == 0
    hits = recall_json("rocket thrust", "--repo", "acme/rocket", "-k", "5")
    assert [h["session_id"] for h in hits] == ["repo-session"]
    assert hits[0]["repo"] == "acme/rocket" and hits[0]["branch"] == "feature/thrust"
    assert "repo-session" not in {h["session_id"] for h in recall_json("rocket thrust", "--branch", "main")}


def test_get_reassembles_a_split_block_byte_for_byte(memory_home):
    from funes.discovery import discover, parse_unit
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    memory = Memory.open(local_memory())
    split = memory.scan(["turn_uuid", "block_idx"], f"session_id = '{LONG_SESSION}' AND split_idx = 2")
    turn_uuid = split.column("turn_uuid")[0].as_py()
    block_idx = split.column("block_idx")[0].as_py()
    unit = next(u for u in discover() if u.session_id == LONG_SESSION)
    original = next(t for t in parse_unit(unit).turns if t.turn_uuid == turn_uuid).blocks[block_idx].text
    result = funes("get", LONG_SESSION, turn_uuid, "--window", "0")
    assert result.returncode == 0, result.stderr
    header, _, rest = result.stdout.partition("\n")
    assert header.endswith(f"turn={turn_uuid}  (requested)")
    body = "\n".join(line[2:] for line in rest.rsplit("\n---\n", 1)[0].split("\n"))  # unquoted
    # The whole block, every split joined exactly once (the agent format breaks lines where
    # str.splitlines does: this tool output holds carriage returns).
    assert "\n".join(original.splitlines()) in body
    assert result.stdout.rstrip().splitlines()[-1].startswith("turns ")


def test_get_window_and_missing_turn(memory_home):
    result = funes("get", "s_main", "3", "--window", "1")
    assert result.returncode == 0
    seqs = [line.split()[2] for line in result.stdout.splitlines() if line.startswith("[") and " seq" in line]
    assert seqs == ["seq0", "seq1", "seq2"]
    missing = funes("get", "s_main", "no-such-turn")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "funes: turn no-such-turn not found in session s_main"


@pytest.mark.parametrize("args, code, message", [
    (["recall", "   "], 2, "the query is empty"),
    (["recall", "x", "-k", "0"], 2, "-k must be an integer from 1 to 1,000, got 0"),
    (["recall", "x", "--neighbors", "51"], 2, "--neighbors must be an integer from 0 to 50, got 51"),
    (["recall", "x", "--half-life", "inf"], 2, "--half-life must be a positive number of days, got inf"),
    (["recall", "x" * 8_001], 2, "the query is 8,001 characters long; the limit is 8,000"),
    (["recall", "x", "--harness", ""], 2, "--harness '': give a value, or leave --harness out"),
    (["get", "s_main", "3", "--window", "1001"], 2, "--window must be an integer from 0 to 1,000, got 1001"),
    (["recall", "x", "--type", "prose"], 2, "--type 'prose'"),
    (["recall", "x", "--harness", "emacs"], 2, "--harness 'emacs'"),
    (["recall", "x", "--since", "last tuesday"], 2, "--since 'last tuesday'"),
    (["recall", "x", "--repo", "just-a-name"], 2, "--repo 'just-a-name'"),
    (["recall", "x", "--memory", "/nonexistent/memory"], 3, "no memory at /nonexistent/memory: run funes index"),
])
def test_bad_input_is_a_one_line_error(memory_home, args, code, message):
    result = funes(*args)
    assert result.returncode == code, result.stderr
    assert result.stderr.startswith("funes: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_session_is_named_by_its_id_or_a_unique_prefix(memory_home, tmp_path):
    """Every hit prints the first 8 characters of its session: --session, get and
    forget take them (or more) wherever a session id goes."""
    from hub_helpers import index_into_local_memory, write_claude_session

    hits = recall_json("photo-realistic digital twin of Earth", "--session", "claude_s", "-k", "3")
    assert hits and {hit["session_id"] for hit in hits} == {"claude_session"}
    opened = funes("get", "claude_s", hits[0]["turn_uuid"], "--window", "0")
    assert opened.returncode == 0 and f"turn={hits[0]['turn_uuid']}  (requested)" in opened.stdout
    assert funes("get", "claude_session", hits[0]["turn_uuid"], "--window", "0").stdout == opened.stdout

    twins = ["5e55a0a0-0000-4000-8000-000000000001", "5e55a0a0-0000-4000-8000-000000000002"]
    index_into_local_memory([write_claude_session(tmp_path / f"{twin}.jsonl", twin, ["the rocket thrust curve"])
                             for twin in twins])
    message = ("funes: session '5e55a0a0' is ambiguous: 2 sessions start with it "
               f"({twins[0]}, {twins[1]}); give more of the id\n")
    for args in (["recall", "rocket thrust", "--session", "5e55a0a0"],
                 ["get", "5e55a0a0", "5e55a0a0-0000-4000-8000-000000000000"],
                 ["forget", "--session", "5e55a0a0", "--yes"]):
        result = funes(*args)
        assert (result.returncode, result.stderr) == (2, message), args
    only = recall_json("rocket thrust", "--session", twins[1][:-1] + "2")
    assert {hit["session_id"] for hit in only} == {twins[1]}
    # Under 8 characters only a whole id counts: a prefix that short names no session.
    assert funes("recall", "photo-realistic", "--session", "claude").stdout == "no results\n"


def test_an_empty_or_missing_memory_says_how_to_fix_it(isolated_env):
    result = funes("recall", "anything")
    assert result.returncode == 3
    assert result.stderr.strip() == "funes: no memory at local: run funes index"


def test_a_damaged_table_is_a_one_line_error(memory_home):
    manifests = memory_home / ".funes" / "memory" / "chunks.lance" / "_versions"
    for manifest in manifests.iterdir():
        manifest.write_bytes(b"garbage")
    result = funes("recall", "anything")
    assert result.returncode == 4, result.stderr
    assert result.stderr.startswith("funes: memory at local") and result.stderr.count("\n") == 1


def test_batch_answers_every_query_from_one_process(memory_home, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in [
        {"qid": "a", "query": "flaky test", "k": 2},
        {"qid": "b", "query": "digital twin of Earth"},
    ]) + "\nnot json\n" + "\n".join(json.dumps(q) for q in [
        {"qid": "c", "query": "x" * 9_000},
        {"qid": "d", "query": "flaky test", "k": 1e30},
    ]) + "\n")
    result = funes("recall", "--batch", str(queries), "-k", "3")
    assert result.returncode == 2  # the bad lines are reported, the others answered
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["qid"] for line in lines] == ["a", "b"]
    assert len(lines[0]["hits"]) == 2 and len(lines[1]["hits"]) == 3
    assert result.stderr.splitlines() == [
        f"funes: {queries}:3: Expecting value: line 1 column 1 (char 0)",
        f"funes: {queries}:4: the query is 9,000 characters long; the limit is 8,000: say what to recall in fewer words",
        f"funes: {queries}:5: k must be an integer from 1 to 1,000, got 1e+30"]


def test_half_life_turns_recency_into_a_factor(recaller):
    plain = recaller.recall("test", k=30, neighbors=0)  # every candidate
    decayed = recaller.recall("test", k=5, neighbors=0, half_life=30)
    assert all(h.scores["recency"] == 1.0 for h in plain.hits)
    assert all(h.scores["recency"] < 1.0 for h in decayed.hits)
    undecayed = {hit.id: hit.scores["final"] for hit in plain.hits}
    for hit in decayed.hits:  # months-old fixtures: the ranked score, decayed
        assert hit.score == pytest.approx(undecayed[hit.id] * hit.scores["recency"], rel=1e-3)


def test_a_hit_from_far_down_the_ranking_has_its_neighbours_too(recaller):
    """Neighbours are read for the first hits while their passages are; a hit the
    half-life brings up from further down has them read after."""
    from funes.retrieval.search import NEIGHBOR_SLACK

    k = 3
    order = [hit.id for hit in recaller.recall("test", k=30, neighbors=0).hits]
    decayed = recaller.recall("test", k=k, neighbors=1, half_life=1).hits
    assert any(order.index(hit.id) >= k + NEIGHBOR_SLACK for hit in decayed)
    for hit in decayed:
        turns = recaller.memory.turn_rows({hit.session_id: range(hit.seq - 1, hit.seq + 2)},
                                          ("seq", "turn_uuid", "block_idx"))[hit.session_id]
        assert [(n.seq, n.turn_uuid) for n in hit.neighbors] == \
            [(row["seq"], row["turn_uuid"]) for row in turns if row["seq"] != hit.seq]
        assert hit.neighbors or not turns


def test_chunks_tied_at_the_last_place_go_to_the_newest(isolated_env):
    """Recency breaks a tie in score (newest first), however the ranking ordered the
    tied chunks and wherever the cut at k falls among them."""
    from hub_helpers import chunk

    from funes.embedding import load_embedder
    from funes.indexing import open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.retrieval.search import Recaller

    same = "The nightly export job writes the invoices to the archive bucket."
    # The same block in six sessions of one shape, a minute apart: one score, six times.
    tied = [chunk(f"s-{n}", 1, same, ts=f"2026-05-01T10:0{n}:00.000Z") for n in range(6)]
    others = [chunk("s-other", 1, "Dark mode colours now come from the design tokens file.")]
    embedder = load_embedder("cpu")
    with open_writer(local_memory()) as writer:
        rows = tied + others
        writer.add_chunks(rows, np.asarray(embedder.embed([c.text for c in rows]), dtype=np.float32))
    recaller = Recaller.open(Memory.open(local_memory()), rerank=False)
    every = recaller.recall("nightly export invoices archive", k=7, neighbors=0).hits
    assert len({h.score for h in every[:6]}) == 1  # the six are tied
    newest = sorted(tied, key=lambda c: c.ts, reverse=True)
    for k in (1, 2, 3):
        hits = recaller.recall("nightly export invoices archive", k=k, neighbors=0).hits
        assert [h.id for h in hits] == [c.id for c in newest[:k]]


def test_a_passage_two_blocks_of_a_session_hold_is_one_hit(isolated_env):
    """A subagent's report and the Task result that hands it back are one text in two
    blocks, chunked apart at different places: recall shows it once, and the hit
    after it takes the freed place, with and without the rerank stage."""
    from hub_helpers import chunk

    from funes.embedding import load_embedder
    from funes.indexing import open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.retrieval.passage import PASSAGE_CHARS
    from funes.retrieval.search import Recaller

    report = ("## Audit summary\n\nThe audit found three dotenv files: apps/web/.env.local, packages/sdk/.env and "
              "the root .env. None is tracked by git; the root .gitignore lists all three patterns. "
              + " ".join(f"Package {name} pins its toolchain in its own manifest and builds with the shared config."
                         for name in ("web", "sdk", "cli", "docs", "worker", "api"))
              + " The sdk manifest pins version 2.4.1 and the web app runs Next.js 15 on port 3001.")
    assert 600 < len(report) < PASSAGE_CHARS  # two chunks; a passage shows the whole block
    cut_text, cut_result = 560, 590  # the two blocks split at different places
    rows = [chunk("s-1", 1, report[:cut_text], block_type="text"),
            chunk("s-1", 1, report[cut_text:], split_idx=1, char_start=cut_text, block_type="text"),
            chunk("s-1", 2, report[:cut_result], block_type="tool_result", tool_name="Task", role="tool", tier=3),
            chunk("s-1", 2, report[cut_result:], split_idx=1, char_start=cut_result, block_type="tool_result",
                  tool_name="Task", role="tool", tier=3),
            chunk("s-1", 3, "Next I will audit the dotenv files of the sdk package again."),
            chunk("s-2", 1, "Dark mode colours now come from the design tokens file.")]
    embedder = load_embedder("cpu")
    with open_writer(local_memory()) as writer:
        writer.add_chunks(rows, np.asarray(embedder.embed([c.text for c in rows]), dtype=np.float32))
    for rerank in (False, True):
        recaller = Recaller.open(Memory.open(local_memory()), rerank=rerank)
        hits = recaller.recall("which dotenv files did the audit find", k=3, neighbors=0).hits
        assert [h.text for h in hits].count(report) == 1
        assert len(hits) == 3 and len({(h.session_id, h.text) for h in hits}) == 3


def test_a_recall_refused_for_its_memory_does_not_wait_for_a_first_model_export(isolated_env, tmp_path):
    """On a fresh machine (no model derived yet) and no memory, recall says so at once:
    it neither exports the query model (seconds of torch) nor waits for one at exit."""
    cache = tmp_path / "fresh-cache"
    env = {**os.environ, "FUNES_CACHE_DIR": str(cache)}
    result = funes("recall", "why did the build fail", env=env)
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith("funes: ") and "run funes index" in result.stderr
    assert not cache.exists() or not any(cache.iterdir())  # no export begun (torch writes its caches here)


@pytest.mark.parametrize("argv, fusion_variable, loads", [
    (["recall", "why did the build fail"], None, True),
    (["recall", "why did the build fail", "--fusion", "lexical"], None, False),
    (["recall", "--fusion=lexical", "why did the build fail"], None, False),
    (["recall", "why did the build fail"], "lexical", False),
    (["recall", "--help"], None, False),
])
def test_a_recall_loads_the_query_model_before_parsing_only_where_it_may_use_it(argv, fusion_variable, loads,
                                                                                monkeypatch):
    """main() starts loading the query embedder before typer parses the command
    line (it then runs beside the parsing and the memory's open); a lexical recall
    or a help page must not pay for a model it never runs."""
    from funes.cli import recall_cmd
    from funes.embedding import load_embedder

    load_embedder(for_queries=True)  # the export, in the shared cache
    monkeypatch.setattr(recall_cmd, "_preloaded_embedder", None)
    if fusion_variable:
        monkeypatch.setenv("FUNES_FUSION", fusion_variable)
    recall_cmd.preload_query_embedder(argv)
    if not loads:
        assert recall_cmd._preloaded_embedder is None
        return
    preloaded = recall_cmd._preloaded_embedder.result(timeout=60)
    np.testing.assert_array_equal(preloaded.embed(["why did the build fail"]),
                                  load_embedder(for_queries=True).embed(["why did the build fail"]))


def test_a_tool_calls_hit_shows_what_came_of_it(memory_home):
    """A command alone does not say what it did: a hit on a tool call carries the
    result that call produced, in `--json` and in the agent format (docs/contract.md)."""
    query = ["recall", "Get-ChildItem list files in working directory", "-k", "5"]
    hits = recall_json(*query[1:])
    call = next(h for h in hits if h["block_type"] == "tool_use" and "Get-ChildItem" in h["text"])
    result = call["result"]
    assert (result["block_type"], result["text"]) == ("tool_result", "(PowerShell completed with no output)")
    assert result["seq"] > call["seq"] and result["turn_uuid"] != call["turn_uuid"]
    assert call["text"].endswith("\n" + result["text"]) and "Get-ChildItem" in call["text"].split("\n")[0]
    assert all(h["result"] is None for h in hits if h["block_type"] != "tool_use")
    shown = funes(*query)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    opened = lines.index(f"  ⇒ [{result['role']} tool_result seq{result['seq']}]")
    assert lines[opened + 1] == "> (PowerShell completed with no output)"
    assert any("Get-ChildItem" in line for line in lines[:opened] if line.startswith("> "))
    closing = lines.index("---", opened)
    assert not any(line.startswith(f"  ~ [{result['role']} tool_result seq{result['seq']}]")
                   for line in lines[opened:closing])  # not previewed again as a neighbour
