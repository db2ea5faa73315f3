"""`funes index` and `funes status` end to end, through the real CLI in a temp HOME."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_helpers import LONG_SESSION, append_user_turn, make_agent_home

FUNES = [sys.executable, "-m", "funes.cli"]


def funes(*args, env=None, timeout=300, **kwargs):
    return subprocess.run([*FUNES, *args], capture_output=True, text=True, timeout=timeout,
                          env=env or os.environ.copy(), **kwargs)


def stored_ids(funes_home: Path) -> list[str]:
    import lance

    dataset = lance.dataset(str(funes_home / "memory" / "chunks.lance"))
    return dataset.to_table(columns=["id"]).column("id").to_pylist()


def status(env=None) -> dict:
    result = funes("status", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_index_twice_leaves_identical_rows(memory_home):
    before = sorted(stored_ids(memory_home / ".funes"))
    first = status()
    result = funes("index", "--yes")
    assert result.returncode == 0, result.stderr
    assert "0 chunks added" in result.stderr
    assert sorted(stored_ids(memory_home / ".funes")) == before
    assert status()["chunks"] == first["chunks"] == len(before) == len(set(before))


def test_status_reports_counts_per_agent_and_vectors(memory_home):
    report = status()
    assert isinstance(report["chunks"], int) and isinstance(report["sessions"], int)
    assert set(report["harnesses"]) == {"claude_code", "codex", "pi", "hermes"}
    assert report["pending_by_tier"] == {} and report["embedded"] > 0  # every chunk the tier policy embeds
    assert report["embedding_model"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert report["embedding_model"]["precision_by_tier"] == {"text": "int8", "tool_result": "int8"}
    assert report["embedding_model"]["tool_result_input"] == "call and output"
    assert report["last_indexed"].endswith("Z")
    human = funes("status").stdout
    assert "claude_code" in human and "vectors" in human and "text int8, tool_result int8" in human
    assert "from their output alone" not in human


def test_status_names_a_memory_whose_tool_results_were_embedded_from_their_output_alone(memory_home):
    """A memory made before results were read after their call keeps that input until
    a rebuild: status says so, and what changes it."""
    import lance

    from funes.embedding import RESULT_INPUT_KEY

    lance.dataset(str(memory_home / ".funes" / "memory" / "chunks.lance")).update_schema_metadata(
        {RESULT_INPUT_KEY: ""})
    assert status()["embedding_model"]["tool_result_input"] == "output"
    human = funes("status").stdout
    assert ("tool results embedded from their output alone: `funes index --rebuild` embeds them after their call"
            in human)


def test_a_grown_transcript_adds_only_its_new_turns(memory_home):
    transcript = next((memory_home / ".claude" / "projects").rglob("claude_session.jsonl"))
    before = set(stored_ids(memory_home / ".funes"))
    append_user_turn(transcript)
    result = funes("index", str(transcript))
    assert result.returncode == 0, result.stderr
    after = set(stored_ids(memory_home / ".funes"))
    assert before < after and len(after - before) == 1


def on_terminal(args: list[str], answer: str, *, env: dict, timeout: float = 300) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal, as a person runs it;
    type ``answer`` and Enter at its first ``[Y/n]`` question.  Returns the exit code and
    everything it printed, colours and cursor moves removed."""
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.Popen([*FUNES, *args], stdin=terminal, stdout=terminal, stderr=terminal, env=env,
                               close_fds=True, start_new_session=True)
    os.close(terminal)
    output, answered, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                data = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process has exited
                break
            if not data:
                break
            output += data
            if not answered and b"[Y/n]" in output:
                os.write(controller, answer.encode() + b"\r")
                answered = True
        else:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"funes {' '.join(args)} still running after {timeout} s: {output[-2000:]!r}")
        code = process.wait(timeout=30)
    finally:
        os.close(controller)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output.decode("utf-8", errors="replace")).replace("\r", "")
    return code, text


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["y", "n", ""], ids=["yes", "no", "enter"])
def test_interactive_first_index_offers_the_rest_with_a_measured_estimate(isolated_env, answer):
    """The offer comes from the budget, not from this host's speed: the smallest budget
    there is embeds exactly one step (a pass that was given time always measures a
    rate), then asks about the rest with an estimate at the rate it measured."""
    from funes.indexing import EMBED_STEP
    from hub_helpers import write_claude_session

    turns = 600
    write_claude_session(isolated_env / ".claude" / "projects" / "-work-app" / "cache-session.jsonl",
                         "5e551011-0000-4000-8000-000000000000",
                         [f"turn {n}: the cache key now includes the commit sha, attempt {n}" for n in range(turns)])
    env = {**os.environ, "TERM": "xterm", "FUNES_INDEX_EMBED_S": "1e-9"}
    code, text = on_terminal(["index"], answer, env=env)
    assert code == 0, text
    assert "Traceback" not in text
    question = re.search(r"(\d+) chunks are searchable by keyword but not yet by meaning; embed them now "
                         r"\(~\d+ (?:s|min), estimated from the (\d+) chunks/s measured on the first (\d+)\)\? "
                         r"\[Y/n\]", text)
    assert question, text
    waiting, quoted_rate, first = (int(question.group(n)) for n in (1, 2, 3))
    assert (first, waiting) == (EMBED_STEP, turns - EMBED_STEP)
    # The embedding bar says its rate, how much of the memory has vectors, and when it
    # ends.  The estimate's rate is the same pass's, over its whole time (storing the
    # page's vectors included), so it is at most the rate the bar showed.
    bars = list(re.finditer(r"embed .*?(\d+) chunks/s · dense (\d+)% · ~\d+ (?:s|min) left",
                            text[:question.start()]))
    assert bars, text
    assert int(bars[-1].group(2)) == round(100 * first / turns), text
    assert 0 < quoted_rate <= int(bars[-1].group(1)) + 1, text
    summary = re.search(r"indexed 1 of 1 session\(s\): 600 turns, 600 chunks added, 0 already stored, "
                        r"(\d+) embedded, (\d+) awaiting vectors", text)
    assert summary, text
    embedded, pending = int(summary.group(1)), int(summary.group(2))
    if answer == "n":
        assert (embedded, pending) == (first, waiting)
        assert "run `funes index --yes` to embed the rest" in text
    else:
        assert (embedded, pending) == (turns, 0)
    report = status()
    assert (report["chunks"], report["embedded"]) == (turns, embedded)


@pytest.mark.slow
def test_interactive_first_index_done_within_its_budget_asks_nothing(isolated_env):
    """A first index whose vectors all fit in the budget says what it did and asks no
    question (the budget here is an hour: no host needs it for 40 short turns)."""
    from hub_helpers import write_claude_session

    turns = 40
    write_claude_session(isolated_env / ".claude" / "projects" / "-work-app" / "small-session.jsonl",
                         "5e551013-0000-4000-8000-000000000000",
                         [f"turn {n}: the retry loop now backs off, attempt {n}" for n in range(turns)])
    env = {**os.environ, "TERM": "xterm", "FUNES_INDEX_EMBED_S": "3600"}
    code, text = on_terminal(["index"], "n", env=env)
    assert code == 0, text
    assert "[Y/n]" not in text and "Traceback" not in text
    assert re.search(rf"indexed 1 of 1 session\(s\): {turns} turns, {turns} chunks added, 0 already stored, "
                     rf"{turns} embedded, 0 awaiting vectors", text), text
    assert "funes index --yes" not in text
    assert (status()["chunks"], status()["embedded"]) == (turns, turns)


def test_status_shows_the_backlog_by_tier_and_the_time_left_at_the_measured_rate(isolated_env):
    """Status counts what awaits vectors (rows and characters, by tier); with no
    embedding pass measured it says so instead of guessing, then estimates from the
    characters/s the last pass measured."""
    from funes.discovery import discover
    from funes.embedding import load_embedder
    from funes.indexing import IndexReport, embed_backlog, index_memory, open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from hub_helpers import write_claude_session

    turns = 300
    transcript = write_claude_session(isolated_env / ".claude" / "projects" / "-work-app" / "backlog.jsonl",
                                      "5e551012-0000-4000-8000-000000000000",
                                      [f"turn {n}: the retry backoff now has jitter, case {n} " + "x" * (n % 50)
                                       for n in range(turns)])
    index_memory(local_memory(), discover(transcript), embedder=load_embedder, backlog_budget_s=0)
    texts = Memory.open(local_memory()).scan(["text"]).column("text").to_pylist()
    lexical_only = status()
    assert lexical_only["backlog_by_tier"] == {"text": {"chunks": turns, "chars": sum(map(len, texts))}}
    assert lexical_only["embed_rate"] is None and lexical_only["embed_seconds_left"] is None
    assert "rate not measured yet" in funes("status").stdout

    report = IndexReport()
    with open_writer(local_memory()) as writer:
        embed_backlog(writer, load_embedder(), limit=100, report=report)
    assert report.embedded == 100
    pending = Memory.open(local_memory()).scan(["text"], "vector IS NULL").column("text").to_pylist()
    partial = status()
    assert partial["backlog_by_tier"] == {"text": {"chunks": len(pending), "chars": sum(map(len, pending))}}
    rate = partial["embed_rate"]
    measured = report.backlog_chars / report.embed_seconds
    assert rate["chars_per_s"] == pytest.approx(measured, rel=0.05)
    assert rate["chunks_per_s"] == pytest.approx(report.embedded / report.embed_seconds, rel=0.05)
    assert partial["embed_seconds_left"] == pytest.approx(sum(map(len, pending)) / measured, rel=0.05, abs=0.1)
    human = funes("status").stdout
    assert re.search(rf"backlog: text {len(pending)} \(\d+k? chars\); ~\d+ (s|min) left at \d+ chunks/s", human), human


def test_a_recall_before_any_vector_answers_by_keyword_without_exporting_the_model(isolated_env, tmp_path,
                                                                                  monkeypatch):
    """During a first index's lexical pass no row has a vector: a cold recall on a
    machine that never exported the model answers from BM25 and leaves the model
    unexported (that export is seconds of torch beside the indexer), and a recaller
    opened then embeds its queries once it follows the memory to its first vectors."""
    from funes import embedding
    from funes.discovery import discover
    from funes.embedding import load_embedder
    from funes.indexing import embed_backlog, index_memory, open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.retrieval.search import Recaller
    from hub_helpers import write_claude_session

    transcript = write_claude_session(isolated_env / ".claude" / "projects" / "-work-app" / "first.jsonl",
                                      "5e551012-0000-4000-8000-000000000001",
                                      [f"turn {n}: the flaky upload retried {n} times" for n in range(40)]
                                      + ["the quokka cache evicts on the tenth write"])
    index_memory(local_memory(), discover(transcript), embedder=load_embedder, backlog_budget_s=0)
    assert Memory.open(local_memory()).stats().embedded == 0

    fresh_cache = tmp_path / "never-exported"
    fresh_cache.mkdir(mode=0o700)
    result = funes("recall", "quokka cache", "--json", "-k", "1",
                   env={**os.environ, "FUNES_CACHE_DIR": str(fresh_cache)})
    assert result.returncode == 0, result.stderr
    [hit] = json.loads(result.stdout)
    assert hit["text"] == "the quokka cache evicts on the tenth write"
    assert hit["scores"]["bm25"] is not None and hit["scores"]["dense"] is None
    assert not list(fresh_cache.rglob("*.onnx")), "the recall exported the model"

    loads = []
    loading = embedding.loading_query_embedder
    monkeypatch.setattr(embedding, "loading_query_embedder", lambda: loads.append(1) or loading())
    recaller = Recaller.open(Memory.open(local_memory()), rerank=False)
    assert recaller.recall("quokka cache", k=1).hits[0].scores["dense"] is None
    assert loads == []
    with open_writer(local_memory()) as writer:
        embed_backlog(writer, load_embedder())
    recaller.follow(Memory.open(local_memory()))
    [top] = recaller.recall("quokka cache", k=1).hits
    assert top.text == "the quokka cache evicts on the tenth write" and top.scores["dense"] is not None
    assert loads == [1]


def test_unattended_index_must_name_a_target(memory_home):
    result = funes("index", stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.startswith("funes: an unattended index must name a target")
    assert "Traceback" not in result.stderr


def test_bad_flags_and_paths_are_one_line_errors(memory_home, tmp_path):
    for args, code in ((["index", "--limit", "0"], 2), (["index", "--bogus"], 2),
                       (["index", str(tmp_path / "nope.jsonl")], 2), (["index", "--harness", "vim"], 2)):
        result = funes(*args)
        assert result.returncode == code, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("funes: "), result.stderr


@pytest.mark.slow
def test_a_second_writer_waits_then_gives_up_clearly(memory_home):
    from filelock import FileLock

    lock = FileLock(str(memory_home / ".funes" / "memory" / "write.lock"))
    with lock:
        started = time.monotonic()
        result = funes("index", "--yes")
    assert result.returncode == 5
    assert "another funes process is writing" in result.stderr
    assert time.monotonic() - started >= 5  # it waited its 5 s for the lock before giving up
    assert status()["chunks"] == len(stored_ids(memory_home / ".funes"))


def test_an_unwritable_funes_home_is_a_clear_error(memory_home, tmp_path):
    # A FUNES_HOME below a regular file cannot be created, even by root.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = {**os.environ, "FUNES_HOME": str(blocker / "funes")}
    result = funes("index", "--yes", env=env)
    assert result.returncode != 0
    assert result.stderr.startswith("funes: cannot write") and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_memory_built_with_another_model_is_refused(memory_home):
    import lance

    table = memory_home / ".funes" / "memory" / "chunks.lance"
    dataset = lance.dataset(str(table))
    dataset.update_schema_metadata({"funes.embedding.model_id": "BAAI/bge-small-en-v1.5"})
    for args in (["index", "--yes"], ["recall", "anything"]):
        result = funes(*args)
        assert result.returncode == 4, result.stderr
        assert "was built with BAAI/bge-small-en-v1.5" in result.stderr
        assert "funes index --rebuild" in result.stderr
    result = funes("index", "--rebuild", "--yes")
    assert result.returncode == 0, result.stderr
    after = status()
    assert after["embedding_model"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert after["pending_by_tier"] == {} and after["chunks"] == len(stored_ids(memory_home / ".funes"))


@pytest.mark.slow
def test_sigkill_at_any_moment_then_rerun_gives_the_uninterrupted_memory(built_memory, isolated_env, tmp_path):
    reference = sorted(stored_ids(built_memory[1]))
    make_agent_home(isolated_env)
    funes_home = isolated_env / ".funes"
    env = os.environ.copy()
    for delay in (1.5, 4.0, 7.0, 12.0):
        process = subprocess.Popen([*FUNES, "index", "--yes"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(delay)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    result = funes("index", "--yes", env=env)
    assert result.returncode == 0, result.stderr
    ids = stored_ids(funes_home)
    assert len(ids) == len(set(ids)), "a chunk was stored twice"
    assert sorted(ids) == reference
    report = status(env)
    assert report["pending_by_tier"] == {} and report["chunks"] == len(reference)
    # The long session's split blocks are all there and searchable.
    hits = funes("recall", "container build failed", "--session", LONG_SESSION, "--json", "--no-rerank")
    assert hits.returncode == 0 and json.loads(hits.stdout)


def under_file_size_limit(kib: int, *args: str, payload: bytes | None = None,
                          module: list[str] = FUNES) -> subprocess.CompletedProcess:
    """Run the CLI where any file grown past ``kib`` KiB fails with EFBIG, as writes fail
    on a full disk (Python ignores SIGXFSZ).  The limit is set by the shell: a
    preexec_fn can deadlock a threaded pytest.  Output goes to pipes, which no limit
    applies to."""
    import shlex

    command = " ".join(shlex.quote(part) for part in [*module, *args])
    return subprocess.run(["bash", "-c", f"ulimit -f {kib} && exec {command}"], capture_output=True,
                          text=payload is None, input=payload, timeout=300)


REFUSED = "funes: cannot write memory at local: "
KEPT = "; free some space and run the command again (everything indexed before this is kept)\n"


def assert_refused_in_one_line(result: subprocess.CompletedProcess, reason: str) -> None:
    assert result.returncode == 1, result.stderr
    assert result.stderr == f"{REFUSED}{reason}{KEPT}", result.stderr


@pytest.mark.slow
def test_a_disk_that_refuses_writes_is_a_clear_error_and_loses_nothing(memory_home):
    import shutil

    from memory_helpers import REAL

    before = status()
    big = memory_home / ".claude" / "projects" / "-big" / "big-session.jsonl"
    big.parent.mkdir(parents=True)
    shutil.copyfile(REAL / "episodic_memory" / "0fae0449-64d3-4788-8622-d3a47d82c14b.jsonl", big)

    refused = under_file_size_limit(64, "index", str(big))
    assert_refused_in_one_line(refused, "a file grew past the size the system allows")
    assert status()["chunks"] == before["chunks"]  # the memory still opens, nothing lost
    again = funes("index", str(big))
    assert again.returncode == 0, again.stderr
    assert status()["chunks"] > before["chunks"]


@pytest.mark.slow  # among the longest tests (20–35 s on 2 loaded cores): the default suite stays under ten minutes
def test_a_disk_that_refuses_the_bm25_segment_is_a_clear_error_and_loses_nothing(isolated_env):
    import random

    from hub_helpers import write_claude_session

    # Sixty chunks of distinct four-letter words: the table's data file (~36 KiB) fits under a
    # 48 KiB limit, the BM25 segment's term arrays (~64 KiB each) do not.
    rng = random.Random(0)
    words = [" ".join("".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(4)) for _ in range(110))
             for _ in range(60)]
    transcript = write_claude_session(isolated_env / "t" / "words.jsonl", "5e55f011-0000-4000-8000-000000000000",
                                      words)
    refused = under_file_size_limit(48, "index", str(transcript))
    assert_refused_in_one_line(refused, "a file grew past the size the system allows")
    bm25 = isolated_env / ".funes" / "memory" / "bm25"
    assert not list(bm25.glob("*.tmp")), "a half-written segment was left behind"
    # The rows were committed before the segment: recall finds them by keyword meanwhile.
    assert status()["chunks"] == 60
    query = " ".join(words[17].split()[:5])
    hits = funes("recall", query, "--json", "--no-rerank", "--fusion", "lexical", "-k", "1")
    assert hits.returncode == 0, hits.stderr
    assert json.loads(hits.stdout)[0]["text"] == words[17]
    again = funes("index", str(transcript))
    assert again.returncode == 0, again.stderr
    report = status()
    assert (report["chunks"], report["embedded"], report["lexical_segments"]) == (60, 60, 1)


@pytest.mark.slow  # two CLI runs under a file-size limit (15 s)
def test_a_disk_that_refuses_the_coverage_database_is_a_clear_error(isolated_env):
    from hub_helpers import write_claude_session

    transcript = write_claude_session(isolated_env / "t" / "s.jsonl", "5e55f012-0000-4000-8000-000000000000",
                                      ["Where is coverage kept?", "In coverage.sqlite, beside the table."])
    # SQLite's shared-memory file (32 KiB) cannot grow past a 16 KiB limit: SQLITE_IOERR_SHMSIZE.
    refused = under_file_size_limit(16, "index", str(transcript))
    assert_refused_in_one_line(refused, "the disk refused a write")
    assert funes("index", str(transcript)).returncode == 0
    assert status()["chunks"] == 2


def test_a_hook_on_a_full_disk_says_so_in_one_line_and_fails_open(isolated_env):
    payload = json.dumps({"session_id": "5e55f013-0000-4000-8000-000000000000",
                          "transcript_path": str(isolated_env / "t.jsonl")}).encode()
    from funes.wiring import Binding

    result = under_file_size_limit(0, payload=payload, module=Binding(None).hook_command("claude"))
    assert result.returncode == 0  # an agent's turn never fails because of funes
    spool = isolated_env / ".funes" / "spool"
    assert result.stderr.decode() == (f"funes: cannot spool the turn in {spool}: a file grew past the size the system"
                                      " allows; free some space (everything indexed before this is kept)\n")
    assert [p.name for p in spool.iterdir()] == [], "a stray spool file was left behind"


def test_the_backlog_is_embedded_with_every_thread_of_the_indexer_at_low_priority(tmp_path):
    """Linux nice is per thread: the threads Lance started during the lexical pass
    (its merges, index refreshes and IVF_PQ build) are lowered with the embedding
    thread, and threads started afterwards inherit it, so a recall meanwhile gets the
    CPU first.  In a child process: a process cannot raise its priority back."""
    if not Path("/proc/self/task").is_dir():
        pytest.skip("per-thread niceness is read from Linux's /proc")
    script = f"""
import json, os, threading
import lance, pyarrow as pa
lance.write_dataset(pa.table({{"a": [1, 2, 3]}}), {str(tmp_path / "t.lance")!r})  # starts Lance's runtime threads
stop = threading.Event()
early = threading.Thread(target=stop.wait); early.start()
from funes.cli.index_cmd import _lower_priority
_lower_priority(None)
late = threading.Thread(target=stop.wait); late.start()
nice = {{tid: int(open(f"/proc/self/task/{{tid}}/stat").read().rsplit(")", 1)[1].split()[16])
         for tid in os.listdir("/proc/self/task")}}
stop.set()
print(json.dumps(nice))
"""
    env = {k: v for k, v in os.environ.items() if k != "FUNES_EMBED_NICENESS"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    nice = json.loads(done.stdout)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert len(nice) >= 4, nice  # the main thread, two of ours, and Lance's
    if base >= 19:
        pytest.skip("the tests already run at the lowest priority: nothing can be seen lowered")
    assert all(value == 19 for value in nice.values()), nice  # the default: as low as Linux goes
