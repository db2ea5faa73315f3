"""The vector index keeps up with the vectors as they are filled in, without `funes
maintain`: exact while small, IVF_PQ once large, and every vector given after it was
built is still found; the fragments the hooks leave are compacted as they gather.
The thresholds are lowered so that a few thousand rows cross them; the vectors are
random (what is tested is the index, not what a model finds)."""

from __future__ import annotations

import hashlib

import lance
import numpy as np
import pytest

from funes.embedding import Embedder
from hub_helpers import chunk


class HashEmbedder(Embedder):
    """A unit vector per text, the same for the same text (a stand-in for the model,
    at one precision for every tier)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.stack([np.random.default_rng(int(hashlib.sha1(t.encode()).hexdigest()[:12], 16))
                            .normal(size=384) for t in texts]).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def small_thresholds(monkeypatch):
    from funes.memory import upkeep

    monkeypatch.setattr(upkeep, "EXACT_INDEX_MIN_ROWS", 300)
    monkeypatch.setattr(upkeep, "VECTOR_INDEX_MIN_ROWS", 1500)
    monkeypatch.setattr(upkeep, "INDEX_REFRESH_ROWS", 100)


def _chunks(session: str, count: int, start: int = 0) -> list:
    return [chunk(session, turn, f"{session} turn {turn}: the upload retried {turn * 7 % 13} times")
            for turn in range(start, start + count)]


def _exact(ids: list[str], vectors: np.ndarray, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` nearest rows by cosine distance, every vector compared."""
    distances = 1.0 - (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ (query / np.linalg.norm(query))
    return [(ids[i], float(distances[i])) for i in np.argsort(distances, kind="stable")[:k]]


def _vector_index_type(memory_dir) -> str | None:
    for index in lance.dataset(str(memory_dir / "chunks.lance")).describe_indices():
        if list(index.field_names) == ["vector"]:
            return index.index_type
    return None


def _embedded(memory) -> tuple[list[str], np.ndarray]:
    table = memory.scan(["id", "vector"], "vector IS NOT NULL")
    return table.column("id").to_pylist(), np.stack(table.column("vector").to_numpy(zero_copy_only=False))


def _assert_rows_read_with_the_search(memory, query: np.ndarray, where: str | None = None) -> None:
    """``nearest_rows`` finds what ``vector_search`` finds, each with the columns asked
    for and a ``_rowid`` that takes back the same row (a recall reads its dense pool so)."""
    found = memory.nearest_rows(query, 10, where, ("session_id", "text"))
    assert [(row["id"], distance) for row, distance in found] == memory.vector_search(query, 10, where)
    stored = memory.rows([row["id"] for row, _ in found], ("id", "session_id", "text"))
    assert [{k: row[k] for k in ("id", "session_id", "text")} for row, _ in found] == \
        [stored[row["id"]] for row, _ in found]
    taken = memory.rows_at([row["_rowid"] for row, _ in found], ("id",))
    assert set(taken) == {row["id"] for row, _ in found}


def test_a_memory_without_a_vector_index_is_searched_exactly_from_vectors_read_once(isolated_env, monkeypatch):
    """Under the vector index's threshold a reader compares the query with every
    vector, kept in memory after the first search (up to FLAT_CACHE_ROWS; past it
    Lance's flat search each time): the same hits and distances either way, rows
    without a vector never among them, a filter still applied."""
    from funes.indexing import embed_backlog, open_writer
    from funes.memory import reader
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    with open_writer(local_memory()) as writer:
        writer.add_chunks(_chunks("s-flat", 300))
        embed_backlog(writer, HashEmbedder(), limit=200)
        writer.add_chunks(_chunks("s-other", 40), HashEmbedder().embed([c.text for c in _chunks("s-other", 40)]))
    assert _vector_index_type(isolated_env / ".funes" / "memory") is None
    queries = np.random.default_rng(3).normal(size=(6, 384)).astype(np.float32)
    kept = Memory.open(local_memory())
    ids, vectors = _embedded(kept)
    assert len(ids) == 240
    kept.vector_search(queries[0], 1)  # reads the 240 vectors and keeps them
    monkeypatch.setattr(reader, "FLAT_CACHE_ROWS", 100)
    read_each_time = Memory.open(local_memory())
    for query in queries:
        exact = _exact(ids, vectors, query, 10)
        for found in (read_each_time.vector_search(query, 10), kept.vector_search(query, 10)):
            assert [i for i, _ in found] == [i for i, _ in exact]
            assert np.allclose([d for _, d in found], [d for _, d in exact], atol=1e-5)
    assert isinstance(kept._flat, tuple) and read_each_time._flat is None
    for memory in (kept, read_each_time):
        _assert_rows_read_with_the_search(memory, queries[1])
        _assert_rows_read_with_the_search(memory, queries[2], "session_id = 's-other'")
    other = {c.id for c in _chunks("s-other", 40)}
    assert {i for i, _ in kept.vector_search(queries[0], 10, "session_id = 's-other'")} <= other


def test_vectors_filled_in_get_an_exact_index_then_ivf_pq_and_stay_findable(isolated_env, small_thresholds):
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    memory_dir = isolated_env / ".funes" / "memory"
    with open_writer(local_memory()) as writer:
        writer.add_chunks(_chunks("s-first-index", 2000))  # a first index's lexical pass: no vectors
        embed_backlog(writer, HashEmbedder(), limit=200)
        assert _vector_index_type(memory_dir) is None  # under EXACT_INDEX_MIN_ROWS: flat search
        embed_backlog(writer, HashEmbedder(), limit=400)
        assert _vector_index_type(memory_dir) == "IVF_FLAT"

    # Exact: the same hits and distances as comparing the query with every vector,
    # including the rows given a vector after the index was built.
    with open_writer(local_memory()) as writer:
        embed_backlog(writer, HashEmbedder(), limit=300)
    memory = Memory.open(local_memory())
    ids, vectors = _embedded(memory)
    assert len(ids) == 900 and _vector_index_type(memory_dir) == "IVF_FLAT"
    rng = np.random.default_rng(1)
    for query in rng.normal(size=(10, 384)).astype(np.float32):
        indexed = memory.vector_search(query, 10)
        exact = _exact(ids, vectors, query, 10)
        assert [i for i, _ in indexed] == [i for i, _ in exact]
        assert np.allclose([d for _, d in indexed], [d for _, d in exact], atol=1e-5)
        _assert_rows_read_with_the_search(memory, query)

    # A turn stored with its vectors (a hook's write) and rows still without one: the
    # new vectors are found, no row without a vector is ever a hit.
    hook_turn = _chunks("s-hook", 20)
    with open_writer(local_memory()) as writer:
        writer.add_chunks(hook_turn, HashEmbedder().embed([c.text for c in hook_turn]))
        writer.add_chunks(_chunks("s-later", 50))
    memory = Memory.open(local_memory())
    pending = set(memory.scan(["id"], "vector IS NULL").column("id").to_pylist())
    for new in hook_turn:
        hits = memory.vector_search(HashEmbedder().embed([new.text])[0], 5)
        assert hits[0][0] == new.id and not pending & {i for i, _ in hits}

    # Past VECTOR_INDEX_MIN_ROWS the index becomes IVF_PQ, and a vector still finds its row.
    with open_writer(local_memory()) as writer:
        embed_backlog(writer, HashEmbedder())
        assert writer.pending_count() == 0
    assert _vector_index_type(memory_dir) == "IVF_PQ"
    memory = Memory.open(local_memory())
    ids, vectors = _embedded(memory)
    sample = rng.choice(len(ids), 100, replace=False)
    found = sum(memory.vector_search(vectors[i], 1)[0][0] == ids[i] for i in sample)
    assert found >= 95, found
    _assert_rows_read_with_the_search(memory, vectors[0])


def test_a_page_folds_the_btrees_back_before_the_vector_index_is_built(isolated_env, small_thresholds,
                                                                         monkeypatch):
    """A page's merge drops every fragment it touches from the id BTREE (its key), which
    a recall reads its pool by, and building the vector index can take a minute at a
    million rows: the writer folds the BTREEs back first, so while that index is built
    no recall reads those fragments' ids flat."""
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory
    from funes.memory.upkeep import IndexUpkeep

    uncovered_while_building = []
    build = IndexUpkeep.build_vector_index

    def spied(upkeep, embedded):
        uncovered_while_building.append({s.columns: s.uncovered_rows for s in upkeep.index_states()
                                         if s.columns != ("vector",)})
        return build(upkeep, embedded)

    monkeypatch.setattr(IndexUpkeep, "build_vector_index", spied)
    with open_writer(local_memory()) as writer:
        for day in range(1, 7):  # fragments of a session each, the pages' rows among all of them
            writer.add_chunks([chunk(f"s-day-{day}", turn, f"day {day} turn {turn}: the upload retried",
                                     ts=f"2026-05-{turn % 28 + 1:02d}T10:00:00.000Z") for turn in range(200)])
        assert writer.keep_indexes() == "built BTREE on id, built BTREE on session_id"
        embed_backlog(writer, HashEmbedder(), limit=400)  # one page: past EXACT_INDEX_MIN_ROWS
    assert uncovered_while_building == [{("id",): 0, ("session_id",): 0}]


def _ivf_partitions(memory_dir) -> list[int]:
    """The vectors in each partition of the IVF index, its deltas summed."""
    stats = lance.dataset(str(memory_dir / "chunks.lance")).stats.index_stats("vector_idx")
    sizes = np.zeros(max(len(segment["partitions"]) for segment in stats["indices"]), dtype=int)
    for segment in stats["indices"]:
        sizes[:len(segment["partitions"])] += [p["size"] for p in segment["partitions"]]
    return sizes.tolist()


@pytest.mark.slow  # among the longest tests (20–35 s on 2 loaded cores): the default suite stays under ten minutes
def test_an_ivf_pq_keeps_its_partition_size_as_vectors_grow(isolated_env, small_thresholds, monkeypatch):
    """The IVF_PQ is built once, with a target size for its partitions: each refresh
    splits the partitions new vectors swell and joins the ones left small, so a
    first index's IVF_PQ, built at the threshold, still fits its vectors at the end
    of the backlog (without a target Lance sized them by its own: 156 partitions of
    40k vectors became 2 at the first refresh).  An IVF_PQ an older funes built
    without one is rebuilt, by the backlog and by `funes maintain`, once."""
    from funes.indexing import embed_backlog, open_writer
    from funes.memory import upkeep
    from funes.memory.location import MemoryLocation, local_memory
    from funes.memory.reader import Memory

    monkeypatch.setattr(upkeep, "IVF_PARTITION_ROWS", 64)
    memory_dir = isolated_env / ".funes" / "memory"
    with open_writer(local_memory()) as writer:
        for day in range(1, 19):  # a session a day, each its own fragment: a page gives vectors to a few
            writer.add_chunks([chunk(f"s-day-{day}", turn, f"day {day} turn {turn}: the upload retried",
                                     ts=f"2026-05-{day:02d}T10:00:{turn % 60:02d}.000Z") for turn in range(500)])
        keep, did = writer.keep_indexes, []
        writer.keep_indexes = lambda **kw: did.append(keep(**kw) or "") or did[-1]
        embed_backlog(writer, HashEmbedder(), limit=2000)
        assert _vector_index_type(memory_dir) == "IVF_PQ" and len(_ivf_partitions(memory_dir)) == 31
        embed_backlog(writer, HashEmbedder())
    assert sum("built IVF_PQ" in d for d in did) == 1, did
    sizes = _ivf_partitions(memory_dir)
    assert sum(sizes) == 9000 and len(sizes) >= 9000 // (4 * 64) and max(sizes) <= 4 * 64, sizes
    memory = Memory.open(local_memory())
    ids, vectors = _embedded(memory)
    sample = np.random.default_rng(2).choice(len(ids), 100, replace=False)
    assert sum(memory.vector_search(vectors[i], 1)[0][0] == ids[i] for i in sample) >= 95

    older_dir = isolated_env / "older"
    older = MemoryLocation(uri=str(older_dir), label="older")
    with open_writer(older) as writer:
        rows = _chunks("s-older", 3000)
        writer.add_chunks(rows, HashEmbedder().embed([c.text for c in rows]))
        writer.table.to_lance().create_index("vector", "IVF_PQ", name="vector_idx", metric="cosine",
                                             num_partitions=16, num_sub_vectors=48)  # as funes built it before: no target
        assert writer.maintain()["vector_index_built"]
        assert len(_ivf_partitions(older_dir)) == 3000 // 64
        assert not writer.maintain()["vector_index_built"]
        writer.table.to_lance().create_index("vector", "IVF_PQ", name="vector_idx", metric="cosine", replace=True,
                                             num_partitions=16, num_sub_vectors=48)
        more = _chunks("s-newer", 200)
        writer.add_chunks(more, HashEmbedder().embed([c.text for c in more]))
        assert writer.keep_indexes() == "built IVF_PQ, refreshed"
        assert writer.keep_indexes() is None


def _state(writer, column: str):
    return next(state for state in writer.upkeep.index_states() if state.columns == (column,))


def test_rows_outside_the_indexes_are_folded_in_once_enough_gather(isolated_env, small_thresholds, monkeypatch):
    """Rows stored after an index, and rows given a vector since (Lance drops a fragment
    whose vectors change from every index, the BTREE on id included), are read flat by
    every search or merge on id until folded in: past INDEX_REFRESH_ROWS the next write
    folds them into every index."""
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory

    with open_writer(local_memory()) as writer:
        writer.add_chunks(_chunks("s-one", 400))
        writer.add_chunks(_chunks("s-two", 300))
        embed_backlog(writer, HashEmbedder(), limit=500)  # pages of vectors into both sessions' fragments
        assert _state(writer, "vector").index_type == "IVF_FLAT"
        assert _state(writer, "id").uncovered_rows == 0 and _state(writer, "vector").uncovered_rows == 0

        # A hook's turn stores a few vectors: it does not count the table's (a scan of the
        # vector column of every row) to decide which vector index the memory needs.
        counted: list[int] = []
        real_count = writer.embedded_count
        monkeypatch.setattr(writer, "embedded_count", lambda: counted.append(1) or real_count())
        more = _chunks("s-three", 60)
        writer.add_chunks(more, HashEmbedder().embed([c.text for c in more]))
        assert writer.keep_indexes() is None  # 60 rows outside: not worth a refresh
        assert counted == []
        assert _state(writer, "id").uncovered_rows == _state(writer, "vector").uncovered_rows == 60
        more = _chunks("s-four", 60)
        writer.add_chunks(more, HashEmbedder().embed([c.text for c in more]))
        assert writer.keep_indexes() == "refreshed"
        assert _state(writer, "id").uncovered_rows == 0 and _state(writer, "vector").uncovered_rows == 0

        embed_backlog(writer, HashEmbedder())  # the rest of the vectors, into fragments both indexes covered
        assert writer.pending_count() == 0
        assert _state(writer, "id").uncovered_rows == 0 and _state(writer, "vector").uncovered_rows == 0


def test_a_memory_grown_a_turn_at_a_time_gets_its_vector_index_from_its_saved_counts(
        isolated_env, small_thresholds, monkeypatch):
    """The hook worker stores each turn with its vectors, a few at a time, in a writer of
    its own: no writer ever stores INDEX_REFRESH_ROWS vectors, and none counts the
    table's (a scan of the vector column), yet the counts each write saves say when the
    memory has grown into a vector index, so recall stops reading every vector flat
    without waiting for `funes maintain`."""
    from funes.indexing import open_writer
    from funes.memory import upkeep
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    counted: list[int] = []
    grown = 0
    kinds = []
    for turn in range(27):  # 60 vectors a turn: 1,620 in all
        with open_writer(local_memory()) as writer:
            monkeypatch.setattr(writer, "embedded_count", lambda: counted.append(1) or 0)
            more = _chunks(f"s-{turn}", 60)
            writer.add_chunks(more, HashEmbedder().embed([c.text for c in more]))
            writer.keep_indexes()
            grown += 60
            kinds.append(_vector_index_type(isolated_env / ".funes" / "memory"))
    assert counted == []
    # Built by the turn that reached each threshold, with what the saved counts held.
    def reached(rows: int) -> int:
        return -(-rows // 60) - 1

    assert kinds.index("IVF_FLAT") == reached(upkeep.EXACT_INDEX_MIN_ROWS)
    assert kinds.index("IVF_PQ") == reached(upkeep.VECTOR_INDEX_MIN_ROWS)
    assert kinds[-1] == "IVF_PQ"
    memory = Memory.open(local_memory())
    ids, vectors = _embedded(memory)
    assert len(ids) == grown
    query = HashEmbedder().embed(["s-3 turn 7: the upload retried 10 times"])[0]
    assert memory.vector_search(query, 1)[0][0] == _exact(ids, vectors, query, 1)[0][0]


def test_a_first_index_gets_btrees_on_the_columns_recall_filters(isolated_env, small_thresholds):
    """A recall reads its pool by id and its block splits and neighbours by session:
    past INDEX_REFRESH_ROWS rows the writer gives both columns a BTREE (before, only
    `funes maintain` did), and the reads answer the same rows with it as without."""
    from funes.indexing import open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    def reads() -> tuple:
        memory = Memory.open(local_memory())
        spans = memory.turn_rows({"s-one": (3, 4, 5), "s-it's": (0, 1), "s-none": range(10)},
                                 ["seq", "block_idx", "split_idx", "text"])
        return ({sid: [(r["seq"], r["text"]) for r in rows] for sid, rows in spans.items()},
                [r["seq"] for r in memory.session_rows("s-it's", 70, 90)],
                sorted(memory.rows([c.id for c in first[::7]], ("id", "seq"))))

    with open_writer(local_memory()) as writer:
        first = _chunks("s-one", 60)
        writer.add_chunks(first)
        assert writer.keep_indexes() is None  # 60 rows: a scan costs less than an index
        unindexed = reads()
        writer.add_chunks(_chunks("s-it's", 80))
        assert writer.keep_indexes() == "built BTREE on id, built BTREE on session_id"
        assert {s.columns: s.uncovered_rows for s in writer.upkeep.index_states()} == {("id",): 0, ("session_id",): 0}
        writer.add_chunks(_chunks("s-one", 120, start=60))  # new rows, outside both until folded in
        assert writer.keep_indexes() == "refreshed"
        assert {s.columns: s.uncovered_rows for s in writer.upkeep.index_states()} == {("id",): 0, ("session_id",): 0}

    spans, quoted, by_id = reads()
    assert spans["s-one"] == unindexed[0]["s-one"] == [(t, f"s-one turn {t}: the upload retried {t * 7 % 13} times")
                                                       for t in (3, 4, 5)]
    assert [seq for seq, _ in spans["s-it's"]] == [0, 1] and spans["s-none"] == []
    assert quoted == list(range(70, 80)) and by_id == unindexed[2]


def test_ctrl_c_while_embedding_folds_the_rows_it_moved_back_into_the_indexes(isolated_env, small_thresholds):
    """Vectors filled in move their fragments out of every index; a page's end folds
    them back, and so does Ctrl-C in the middle of one (re-raised, every vector
    stored kept), so recall does not read them flat until some later write."""
    from funes.indexing import EMBED_STEP, embed_backlog, open_writer
    from funes.memory.location import local_memory

    class InterruptedEmbedder(HashEmbedder):
        calls = 0

        def embed(self, texts: list[str]) -> np.ndarray:
            self.calls += 1
            if self.calls == 4:
                raise KeyboardInterrupt
            return super().embed(texts)

    with open_writer(local_memory()) as writer:
        for n in range(4):
            writer.add_chunks(_chunks(f"s-{n}", 300))
        embed_backlog(writer, HashEmbedder(), limit=400)
        assert writer.keep_indexes() is None
        assert {s.columns: s.uncovered_rows for s in writer.upkeep.index_states()}[("vector",)] == 0
        with pytest.raises(KeyboardInterrupt):
            embed_backlog(writer, InterruptedEmbedder())
        assert writer.pending_count() == 1200 - 400 - 3 * EMBED_STEP  # what was stored stays
        assert {s.columns: s.uncovered_rows for s in writer.upkeep.index_states()} == {
            ("id",): 0, ("session_id",): 0, ("vector",): 0}


def test_a_page_of_vectors_is_stored_at_once_and_stopping_stores_what_was_embedded(
        isolated_env, small_thresholds, monkeypatch):
    """Each merge of vectors moves the fragments it touches out of the id and vector
    indexes until they are folded back in.  The backlog embeds a page step by step but
    stores it in one merge, folded in at once, so while the next page is embedded every
    row a reader searches is indexed.  Stopping in the middle of a page (a hook's turn
    waiting: ``should_stop``) stores what was embedded of it."""
    from funes import indexing
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory

    monkeypatch.setattr(indexing, "BACKLOG_PAGE", 400)
    monkeypatch.setattr(indexing, "EMBED_STEP", 100)

    class WatchingEmbedder(HashEmbedder):
        def __init__(self) -> None:
            self.uncovered: list[int] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.uncovered.append(max(state.uncovered_rows for state in writer.upkeep.index_states()))
            return super().embed(texts)

    with open_writer(local_memory()) as writer:
        for n in range(4):
            writer.add_chunks(_chunks(f"s-{n}", 400))
        embed_backlog(writer, HashEmbedder(), limit=400)  # builds the indexes
        watching = WatchingEmbedder()
        assert embed_backlog(writer, watching, limit=800) == 800
        assert watching.uncovered == [0] * 8
        assert writer.pending_count() == 400

        steps: list[int] = []

        class CountingEmbedder(HashEmbedder):
            def embed(self, texts: list[str]) -> np.ndarray:
                steps.append(len(texts))
                return super().embed(texts)

        assert embed_backlog(writer, CountingEmbedder(), should_stop=lambda: len(steps) == 2) == 200
        assert writer.pending_count() == 200 and writer.embedded_count() == 1400


def test_a_writer_caches_a_bounded_amount_however_many_pages_it_folds(isolated_env, small_thresholds, monkeypatch):
    """Each page of the backlog folds its vectors into new versions of the indexes,
    and lancedb's default session kept every version a writer opened: at 1M rows a
    writer grew ~30 MB a page, gigabytes over a first index.  The writer's session is
    bounded."""
    from funes import indexing
    from funes.indexing import embed_backlog, open_writer
    from funes.memory import writer as memory_writer
    from funes.memory.location import local_memory

    monkeypatch.setattr(memory_writer, "WRITER_INDEX_CACHE_BYTES", 1 << 20)
    monkeypatch.setattr(memory_writer, "WRITER_METADATA_CACHE_BYTES", 1 << 20)
    monkeypatch.setattr(indexing, "BACKLOG_PAGE", 200)
    sessions = []
    real_session = memory_writer._writer_session
    monkeypatch.setattr(memory_writer, "_writer_session", lambda: sessions.append(real_session()) or sessions[-1])
    with open_writer(local_memory()) as writer:
        for n in range(6):
            writer.add_chunks(_chunks(f"s-{n}", 500))
        assert embed_backlog(writer, HashEmbedder()) == 3000  # 15 pages, each folded
    assert sessions and sessions[0].size_bytes <= 2 << 20


def test_a_writer_that_embedded_its_backlog_still_stores_nothing_twice(isolated_env):
    """The backlog lets go of the table's ids (~110 MB at 1M rows); rows stored after
    it are still checked against every stored id."""
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    with open_writer(local_memory()) as writer:
        writer.add_chunks(_chunks("s-grown", 30))
        assert embed_backlog(writer, HashEmbedder()) == 30
        stored = writer.add_chunks(_chunks("s-grown", 40))  # the session grew by ten turns
        assert stored == [c.id for c in _chunks("s-grown", 10, start=30)]
    assert Memory.open(local_memory()).count() == 40


def test_the_fragments_a_hook_leaves_each_turn_are_compacted_as_they_gather(isolated_env, monkeypatch):
    """Each hook stores one turn as a fragment of a few rows, and every fragment costs
    every cold reader; once COMPACT_SMALL_FRAGMENTS have gathered the writer compacts
    them.  Nothing a reader sees changes (against the same turns stored with no
    compaction): the rows and their vectors, a recall's hits, the BM25 segments'
    coverage (no reader indexes a row again), and the counts saved for the table as
    it now is are the table's (no reader counts it again)."""
    import dataclasses

    from funes.discovery import discover
    from funes.indexing import index_memory
    from funes.memory import upkeep
    from funes.memory.location import local_memory
    from funes.memory.stats import load_stats, table_state
    from funes.memory.reader import Memory
    from funes.retrieval.search import Recaller
    from hub_helpers import write_claude_session

    def hooked(home: str, turns: int) -> list[int]:
        """The fragments after each turn, the transcript growing a turn at a time and
        indexed after each, as the hook worker does."""
        monkeypatch.setenv("FUNES_HOME", str(isolated_env / home))
        transcript = isolated_env / home / "hooked.jsonl"
        counts = []
        for turn in range(turns):
            write_claude_session(transcript, "5e551012-0000-4000-8000-00000000c0de",
                                 [f"turn {turn}: the upload retried {turn % 5} times with jitter"], start_minute=turn)
            index_memory(local_memory(), discover(transcript), embedder=HashEmbedder, embed_new=True, wait_s=0)
            counts.append(len(lance.dataset(local_memory().table_uri).get_fragments()))
        return counts

    def seen() -> tuple:
        memory = Memory.open(local_memory())
        rows = memory.scan(["id", "text", "vector"]).to_pylist()
        hits = Recaller.open(memory, rerank=False, embedder=HashEmbedder()).recall("upload retried jitter", k=5).hits
        return sorted((r["id"], r["text"], tuple(r["vector"])) for r in rows), [(h.id, h.score) for h in hits]

    monkeypatch.setattr(upkeep, "COMPACT_SMALL_FRAGMENTS", 1000)
    assert hooked("uncompacted", 16) == list(range(1, 17))  # a fragment a turn
    reference = seen()

    monkeypatch.setattr(upkeep, "COMPACT_SMALL_FRAGMENTS", 6)
    counts = hooked("compacted", 16)
    # The sixth turn's write compacted all six; the compacted fragment is small too, so
    # five more turns' fragments join it (the last write compacts: what is read below).
    assert counts == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1]
    assert seen() == reference

    memory = Memory.open(local_memory())
    assert memory.lexical().table_version == memory.version  # its segments cover the compacted table
    saved = load_stats(local_memory().state_dir, table_state(memory.dataset, memory.dense_tiers), memory.version)
    assert saved is not None and dataclasses.replace(saved, version=0) == dataclasses.replace(memory._count(),
                                                                                               version=0)
    assert (saved.chunks, saved.embedded) == (16, 16)
