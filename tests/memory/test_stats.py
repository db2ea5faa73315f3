"""`funes status` counts a memory once per state of its rows: counts saved for the
rows as they are are read back (a million rows took 2.2 s and ~1 GB to count, for
every status call of a first index hours long), the backlog's pages of vectors keep
them exact, and any other change to the rows counts again."""

from __future__ import annotations

from hub_helpers import chunk
from test_vector_index import HashEmbedder


def _chunks(session: str, count: int, *, tier: int = 1, harness: str = "claude_code") -> list:
    block = {1: "text", 2: "tool_use", 3: "tool_result"}[tier]
    return [chunk(session, turn, f"{session} {block} {turn}: retried {'é' * (turn % 5)} {turn * 7 % 13} times",
                  block_idx=tier, tier=tier, block_type=block, harness=harness,
                  tool_name=None if tier == 1 else "Bash")
            for turn in range(count)]


def _fresh_count(location):
    from funes.memory.reader import Memory

    return Memory.open(location)._count()


def test_counts_are_read_back_for_the_same_rows_and_kept_through_appends(isolated_env, monkeypatch):
    """A first index saves the counts of every flush from the empty table on, and a
    hook's turn (rows with their vectors, one not finite, a session id another harness
    already used) keeps them exact: no reader counts again."""
    import numpy as np

    from funes.indexing import open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    location = local_memory()
    calls = []
    real_count = Memory._count
    monkeypatch.setattr(Memory, "_count", lambda self: calls.append(1) or real_count(self))
    with open_writer(location) as writer:
        writer.add_chunks(_chunks("s-text", 30))
        writer.add_chunks(_chunks("s-tools", 20, tier=3, harness="codex"))
    counted = Memory.open(location).stats()
    assert calls == []  # saved by the writer, flush by flush
    assert (counted.chunks, counted.sessions, counted.embedded) == (50, 2, 0)
    assert counted.pending_by_tier == {1: 30, 3: 20}
    assert counted.per_harness == {"claude_code": {"chunks": 30, "sessions": 1},
                                   "codex": {"chunks": 20, "sessions": 1}}
    assert counted.last_indexed and counted.last_indexed.endswith("Z")
    assert Memory.open(location).stats() == counted and calls == []

    turn = (_chunks("s-tools", 4, harness="pi")  # a session id codex used: a new session of pi's
            + _chunks("s-later", 3, tier=2) + _chunks("s-text", 33)[30:])  # a new session; one grown
    vectors = HashEmbedder().embed([c.text for c in turn])
    vectors[1] = np.nan  # stored as null: still owed a vector
    with open_writer(location) as writer:
        writer.add_chunks(turn, vectors)
    grown = Memory.open(location).stats()
    assert calls == [] and grown.version > counted.version
    monkeypatch.setattr(Memory, "_count", real_count)
    assert grown == _fresh_count(location)
    assert (grown.chunks, grown.sessions, grown.embedded, grown.pending_by_tier) == (60, 4, 9, {1: 31, 3: 20})


def test_the_backlog_keeps_the_saved_counts_exact_page_by_page(isolated_env, monkeypatch):
    """A status poll while the backlog is embedded reads the counts the embedder saved
    for each page (text lengths in characters, not bytes), equal to counting again."""
    from funes import indexing
    from funes.indexing import embed_backlog, open_writer
    from funes.memory import upkeep
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    monkeypatch.setattr(indexing, "BACKLOG_PAGE", 16)
    location = local_memory()
    with open_writer(location) as writer:
        writer.add_chunks(_chunks("s-text", 40) + _chunks("s-calls", 10, tier=2) + _chunks("s-out", 30, tier=3))
    seen = []

    class PollingEmbedder(HashEmbedder):
        """Reads status between its steps, as `funes status` does while an index runs."""

        def embed(self, texts):
            seen.append(Memory.open(location).stats())
            return super().embed(texts)

    calls = []
    real_count = Memory._count
    monkeypatch.setattr(Memory, "_count", lambda self: calls.append(1) or real_count(self))
    monkeypatch.setattr(upkeep, "INDEX_REFRESH_ROWS", 16)  # the vector index's kind looked at every page
    with open_writer(location) as writer:
        filters = []
        real_count_rows = writer.table.count_rows
        writer.table.count_rows = lambda where=None: filters.append(where) or real_count_rows(where)
        assert embed_backlog(writer, PollingEmbedder(), limit=50) == 50
    assert calls == []  # the embedder starts from the counts the appends saved; every poll reads back a page's
    assert "vector IS NOT NULL" not in filters  # nor did the index upkeep count the vectors again
    assert [s.embedded for s in seen] == [0, 16, 32, 48]
    monkeypatch.setattr(Memory, "_count", real_count)
    after = Memory.open(location).stats()
    assert after == _fresh_count(location)
    assert (after.embedded, after.pending_by_tier) == (50, {3: 20})  # tool calls are left to BM25
    assert after.pending_chars_by_tier[3] == sum(len(c.text) for c in _chunks("s-out", 20, tier=3))


def test_an_index_build_keeps_the_counts_a_tier_policy_change_does_not(isolated_env, monkeypatch):
    from funes.indexing import open_writer
    from funes.memory import upkeep
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    location = local_memory()
    with open_writer(location) as writer:
        writer.add_chunks(_chunks("s-text", 30) + _chunks("s-calls", 10, tier=2))
    before = Memory.open(location).stats()
    calls = []
    real_count = Memory._count
    monkeypatch.setattr(Memory, "_count", lambda self: calls.append(1) or real_count(self))
    monkeypatch.setattr(upkeep, "INDEX_REFRESH_ROWS", 20)
    with open_writer(location) as writer:
        assert "built BTREE" in (writer.keep_indexes() or "")  # a commit of indexes only
    after = Memory.open(location).stats()
    assert calls == [] and after.version > before.version and after.pending_by_tier == {1: 30}

    with open_writer(location) as writer:
        writer.embed_every_tier()  # tool calls now owed a vector: the same rows count otherwise
    assert Memory.open(location).stats().pending_by_tier == {1: 30, 2: 10} and calls == [1]


def test_counts_saved_for_other_rows_or_unreadable_are_never_used(isolated_env):
    from funes.indexing import open_writer
    from funes.memory.location import local_memory
    from funes.memory.stats import STATS_FOLDER
    from funes.memory.reader import Memory

    location = local_memory()
    with open_writer(location) as writer:
        writer.add_chunks(_chunks("s-text", 12))
    Memory.open(location).stats()
    (saved,) = (location.state_dir / STATS_FOLDER).glob("*.json")
    saved.write_text('{"chunks": 9', encoding="utf-8")  # cut short
    assert Memory.open(location).stats().chunks == 12
    with open_writer(location) as writer:
        writer.set_vectors([c.id for c in _chunks("s-text", 2)], HashEmbedder().embed(["a", "b"]),
                           filled=[(3, 10), (3, 10)])  # not what the counts have pending: counted again
    assert Memory.open(location).stats() == _fresh_count(location)
    assert Memory.open(location).stats().embedded == 2


def test_counts_saved_before_a_data_file_was_damaged_in_place_are_not_served(isolated_env):
    """Damage in place leaves the manifest, and so the state the counts were saved for,
    as it was: status must count what can still be read, not read back the old counts."""
    import os

    import lance

    from funes.indexing import open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    location = local_memory()
    with open_writer(location) as writer:
        writer.add_chunks(_chunks("s-first", 20))
    with open_writer(location) as writer:
        writer.add_chunks(_chunks("s-second", 12))  # a fragment of its own
    assert Memory.open(location).stats().chunks == 32  # counted and saved
    table = lance.dataset(location.table_uri)
    damaged = next(f for f in table.get_fragments() if f.count_rows() == 20)
    os.truncate(os.path.join(location.table_uri, "data", damaged.data_files()[0].path), 100)

    memory = Memory.open(location)
    counted = memory.stats()
    assert memory.damage and (counted.chunks, counted.sessions) == (12, 1)
