"""A bulk index parses, chunks and redacts in worker processes: the same memory as
one process, unreadable units reported as before, and no worker outlives it."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory_helpers import append_user_turn, make_agent_home


def _index(units, funes_home: Path, workers: int):
    from funes.embedding import IDENTITY
    from funes.indexing import index_units
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter

    os.environ["FUNES_HOME"] = str(funes_home)
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        report = index_units(writer, units, workers=workers)
    memory = Memory.open(local_memory())
    rows = memory.scan(["id", "text", "session_id", "seq", "tier"]).to_pylist()
    return report, sorted(rows, key=lambda r: r["id"]), memory


def test_workers_store_what_one_process_stores_and_report_bad_units_alike(isolated_env, monkeypatch):
    from funes import indexing
    from funes.discovery import discover

    make_agent_home(isolated_env)
    units = discover()
    gone = next(u for u in units if u.harness == "pi")
    gone.path.unlink()  # found, then unreadable when parsed: counted, named, retried next run
    monkeypatch.setattr(indexing, "POOL_BYTES_PER_WORKER", 1)  # every unit set pays for a pool here
    pooled, pooled_rows, pooled_memory = _index(units, isolated_env / "pooled", workers=2)
    alone, alone_rows, alone_memory = _index(units, isolated_env / "alone", workers=1)
    assert pooled.workers == 2 and alone.workers == 0
    assert pooled_rows == alone_rows and len(pooled_rows) > 100
    assert pooled.errors == alone.errors and str(gone.path) in pooled.errors[0]
    assert pooled.per_session[gone.key].error
    assert {k: (s.chunks, s.chunks_added, s.turns, s.error) for k, s in pooled.per_session.items()} == \
           {k: (s.chunks, s.chunks_added, s.turns, s.error) for k, s in alone.per_session.items()}
    assert [w.message for w in pooled.warnings] == [w.message for w in alone.warnings]
    for query in ("container build failed", "session transcript", "docker compose"):
        assert pooled_memory.lexical().search(query, 10) == alone_memory.lexical().search(query, 10)
    assert pooled.peak_rss_bytes > 50_000_000


@pytest.mark.parametrize("bytes_ahead, units_ahead, most_waiting", [
    (10**12, 10**6, "all"),  # small units: the workers get them all while the first is stored
    (1, 10**6, 1),  # one worker's bytes reached by one unit
    (10**12, 2, 4),  # the count bounds what a database's sessions (no size of their own) queue
])
def test_the_pool_works_ahead_by_transcript_bytes_and_units_within_bounds(isolated_env, monkeypatch, bytes_ahead,
                                                                          units_ahead, most_waiting):
    """Workers are kept fed while the writer stores a flush (two units each ahead left
    them idle), and what waits for the writer stays bounded."""
    from funes import indexing
    from funes.discovery import discover

    make_agent_home(isolated_env)
    units = discover()
    monkeypatch.setattr(indexing, "POOL_BYTES_PER_WORKER", 1)
    monkeypatch.setattr(indexing, "POOL_AHEAD_BYTES_PER_WORKER", bytes_ahead)
    monkeypatch.setattr(indexing, "POOL_AHEAD_UNITS_PER_WORKER", units_ahead)
    submitted = []
    real_pool = indexing._worker_pool

    def counted_pool(workers):
        pool = real_pool(workers)
        submit = pool.submit
        pool.submit = lambda call, unit, *args: submitted.append(unit) or submit(call, unit, *args)
        return pool

    monkeypatch.setattr(indexing, "_worker_pool", counted_pool)
    waiting = [len(submitted) - given for given, _ in enumerate(indexing.prepared_units(units, workers=2), 1)]
    assert submitted == list(units)
    assert max(waiting) == (len(units) - 1 if most_waiting == "all" else most_waiting)


def test_a_small_increment_starts_no_worker(isolated_env):
    from funes.discovery import discover
    from funes.indexing import pool_size

    make_agent_home(isolated_env)
    units = discover()
    assert sum(u.path.stat().st_size for u in units) < 16_000_000
    assert pool_size(units, 16) == 1


INDEX_IN_WORKERS = textwrap.dedent("""
    import os, sys
    from funes import indexing
    from funes.discovery import discover
    from funes.embedding import IDENTITY
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter
    indexing.POOL_BYTES_PER_WORKER = 1
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        units = discover()
        def slow(stage, advance, total):  # keeps the index running while the test kills it
            import time; time.sleep(0.5)
        indexing.index_units(writer, units, workers=2, progress=slow)
""")


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.update(int(p) for p in task.read_text().split())
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_index_leaves_no_worker_and_the_rerun_completes_it(isolated_env):
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    make_agent_home(isolated_env)
    process = subprocess.Popen([sys.executable, "-c", INDEX_IN_WORKERS], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    workers: set[int] = set()
    while time.monotonic() < deadline and len(workers) < 2 and process.poll() is None:
        workers = _children(process.pid)
        time.sleep(0.2)
    assert len(workers) >= 2, process.stderr.read() if process.poll() is not None else "no workers started"
    os.kill(process.pid, signal.SIGKILL)  # the parent alone: its workers must not outlive it
    process.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.2)
    assert not [w for w in workers if Path(f"/proc/{w}").exists()], "a worker outlived the index"
    rerun = subprocess.run([sys.executable, "-m", "funes.cli", "index", "--yes"], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "FUNES_INDEX_EMBED_S": "0"})
    assert rerun.returncode == 0, rerun.stderr
    ids = Memory.open(local_memory()).scan(["id"]).column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a chunk was stored twice"


def _indexed_terms(index) -> dict[str, tuple[int, dict[str, float]]]:
    """Each indexed chunk's document length and term counts: what BM25 scores it from."""
    found = {}
    for segment in index.segments:
        names = {column: token for token, column in segment.vocab.items()}
        terms: list[dict[str, float]] = [{} for _ in range(segment.n_docs)]
        for column in range(len(segment.indptr) - 1):
            for entry in range(int(segment.indptr[column]), int(segment.indptr[column + 1])):
                terms[int(segment.indices[entry])][names[column]] = float(segment.tf[entry])
        found.update((chunk, (int(length), counts)) for chunk, length, counts
                     in zip(segment.ids.tolist(), segment.lengths.tolist(), terms, strict=True))
    return found


def _table_terms(memory) -> dict[str, tuple[int, dict[str, float]]]:
    """The same, for every row, from the documents the whole table gives (a rebuild's)."""
    from funes.memory.documents import DOCUMENT_COLUMNS, documents_from_rows
    from funes.memory.tokens import count_terms

    documents = documents_from_rows(memory.scan(list(DOCUMENT_COLUMNS)).to_pylist())
    counts = count_terms(list(documents), list(documents.values()))
    found: dict[str, tuple[int, dict[str, float]]] = {i: (int(n), {}) for i, n in zip(counts.ids, counts.lengths.tolist())}
    for doc, term, count in zip(counts.doc.tolist(), counts.term.tolist(), counts.count.tolist(), strict=True):
        found[counts.ids[doc]][1][counts.tokens[term]] = float(count)
    return found


def test_workers_count_new_sessions_terms_and_the_writer_the_grown_ones(isolated_env, monkeypatch):
    """In a pool, the worker that chunks a session new to the table also counts its
    chunks' BM25 documents into terms: the writing process builds none of them.  A
    grown session's documents take their context from the table, in the writer.
    Either way each chunk is indexed with the terms a rebuild from the table gives it."""
    from funes import indexing
    from funes.discovery import discover
    from funes.memory import documents

    make_agent_home(isolated_env)
    monkeypatch.setattr(indexing, "POOL_BYTES_PER_WORKER", 1)  # every unit set pays for a pool here
    built: list[str] = []  # the documents this process built (spawned workers are not patched)
    real_document = documents.document
    monkeypatch.setattr(documents, "document", lambda text, *a, **k: built.append(text) or real_document(text, *a, **k))
    units = discover()
    report, _, memory = _index(units, isolated_env / "fh", workers=2)
    assert report.workers == 2 and report.chunks_added > 100
    assert built == []
    assert _indexed_terms(memory.lexical()) == _table_terms(memory)

    transcript = next(u.path for u in units if u.harness == "claude_code")
    append_user_turn(transcript)
    grown, _, memory = _index(discover(), isolated_env / "fh", workers=2)
    assert grown.chunks_added == 1 and built  # its document built here, with context from the table
    assert _indexed_terms(memory.lexical()) == _table_terms(memory)


def test_a_run_that_finds_nothing_changed_reads_no_ids(isolated_env, monkeypatch):
    """Which sessions the table holds (to hand new ones out for counting) is read
    only when some unit changed: a run with nothing to do does not scan the table."""
    from funes.discovery import discover
    from funes.memory.writer import MemoryWriter

    make_agent_home(isolated_env)
    units = discover()
    _index(units, isolated_env / "fh", workers=1)

    def known_ids(self):
        raise AssertionError("the table's ids were read")

    monkeypatch.setattr(MemoryWriter, "known_ids", known_ids)
    report, _, _ = _index(units, isolated_env / "fh", workers=1)
    assert report.changed == 0
