"""The BM25 index: segments that score like one index, merges, readers that catch up."""

import json
import os
import random

import numpy as np
import pytest

from funes.memory.lexical import MANIFEST, LexicalIndex

WORDS = ("lance parquet dagster bm25 vector embedding session transcript chunk redact secret hook "
         "recall memory index cursor sensor fragment manifest commit push remote cache token").split()


def _corpus(n, seed=0):
    rng = random.Random(seed)
    ids = [f"{i:016x}" for i in range(n)]
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(n)]
    return ids, texts


def _fetcher(ids, texts):
    table = dict(zip(ids, texts))
    return lambda wanted: {i: table[i] for i in wanted if i in table}


@pytest.mark.parametrize("query", ["lance fragment manifest", "secret token redact", "hook cursor", "zebra"])
def test_segments_score_like_a_single_index(tmp_path, query):
    ids, texts = _corpus(600)
    fetch = _fetcher(ids, texts)
    segmented = LexicalIndex.open(tmp_path / "seg")
    # Batches of decreasing size, so merging leaves several segments behind.
    for start, end in ((0, 400), (400, 500), (500, 560), (560, 590), (590, 600)):
        segmented.add(ids[start:end], texts[start:end], end, fetch)
    single = LexicalIndex.open(tmp_path / "one")
    single.rebuild(ids, texts, 1)
    assert len(segmented.segments) > 1
    got = dict(segmented.search(query, len(ids)))
    want = dict(single.search(query, len(ids)))
    if query == "zebra":
        assert got == want == {}
        return
    # Global IDF makes every document's score agree closely; only length normalisation
    # differs (each segment's own mean length), which can swap near ties in the
    # ranking of a corpus of 24 words, so scores are compared, not places.
    assert got.keys() == want.keys()
    for chunk, score in want.items():
        assert got[chunk] == pytest.approx(score, rel=0.05)


def test_merging_keeps_every_live_document_and_drops_deleted_ones(tmp_path):
    ids, texts = _corpus(200)
    live = dict(zip(ids, texts))
    index = LexicalIndex.open(tmp_path)
    for start in range(0, 200, 20):
        index.add(ids[start:start + 20], texts[start:start + 20], start, lambda w: {i: live[i] for i in w if i in live})
        if start == 100:
            del live[ids[0]]  # "forgotten" before the next merge re-tokenizes it
    covered = set(index.covered_ids().tolist())
    assert covered <= set(ids)
    assert set(ids[1:]) <= covered
    assert len(index.segments) <= 4  # log-structured: few segments for many adds
    reopened = LexicalIndex.open(tmp_path)
    assert reopened.table_version == 180
    assert set(reopened.covered_ids().tolist()) == covered


def test_a_document_is_merged_again_once_per_level_it_climbs(tmp_path, monkeypatch):
    """Equal writes (a bulk index's flushes) are merged by levels: a memory of 64
    writes holds one segment, each document merged three times, not once per
    write after it (a first index of 300k chunks spent a third of its writer's
    time merging, each chunk 7.1 times)."""
    from funes.memory import lexical

    flush = lexical.MERGE_FLOOR
    ids, texts = _corpus(64 * flush)
    fetch = _fetcher(ids, texts)
    merged_docs = []
    merged = lexical.Segment.merged.__func__

    def counting(cls, folder, segments, keep=None):
        merged_docs.append(sum(s.n_docs for s in segments))
        return merged(cls, folder, segments, keep)

    monkeypatch.setattr(lexical.Segment, "merged", classmethod(counting))
    index = LexicalIndex.open(tmp_path)
    most = 0
    for start in range(0, len(ids), flush):
        index.add(ids[start:start + flush], texts[start:start + flush], start, fetch)
        most = max(most, len(index.segments))
    assert [s.n_docs for s in index.segments] == [len(ids)]
    assert sum(merged_docs) == 3 * len(ids)  # 64 → 256 → 1,024 → 4,096 documents a segment
    assert most <= 3 * (lexical.MERGE_FACTOR - 1) + 1
    assert sorted(index.search("lance fragment", len(ids))) == sorted(
        LexicalIndex(None, [lexical.Segment.build("one", ids, texts)], 0).search("lance fragment", len(ids)))


def test_a_writer_holds_its_segments_as_their_files_not_in_its_own_memory(tmp_path):
    """After each commit a writer's segments are the files it saved, memory-mapped as a
    reader maps them: the indexer that built a million chunks' segments embeds their
    backlog for hours after, and held them all in its own memory (540 MB more peak
    RSS at 1M chunks).  It searches and merges from them as before."""
    ids, texts = _corpus(300)
    fetch = _fetcher(ids, texts)
    index = LexicalIndex.open(tmp_path)
    for start, end in ((0, 200), (200, 260), (260, 300)):
        index.add(ids[start:end], texts[start:end], end, fetch)
        for segment in index.segments:
            for array in (segment.data, segment.indices, segment.indptr, segment.tf, segment.lengths):
                assert isinstance(array, np.memmap) and str(array.filename).startswith(str(tmp_path / segment.name))
    assert index.search("lance fragment manifest", 10) == LexicalIndex.open(tmp_path).search("lance fragment manifest", 10)


def test_a_merge_reads_mapped_segments_from_their_files_and_gets_the_same_segment(tmp_path, monkeypatch):
    """A merge reads a memory-mapped segment's entries from its file, block by block
    (pages touched through the mapping stay resident: ~380 MB at the last merges of a
    first index of 1M chunks), and makes the segment it made from arrays in memory."""
    from dataclasses import replace

    from funes.memory import segments
    from funes.memory.segments import Segment

    monkeypatch.setattr(segments, "SCORE_BLOCK", 97)  # blocks that start and end mid-column
    ids, texts = _corpus(360)
    index = LexicalIndex.open(tmp_path)
    for start, end in ((0, 300), (300, 360)):  # under a quarter of the first: left unmerged
        index.add(ids[start:end], texts[start:end], end, _fetcher(ids, texts))
    mapped = LexicalIndex.open(tmp_path).segments
    assert len(mapped) == 2 and all(isinstance(s.indices, np.memmap) for s in mapped)
    in_memory = [replace(s, **{name: np.array(getattr(s, name)) for name in ("data", "indices", "indptr", "tf", "lengths")})
                 for s in mapped]
    from_files, from_memory = Segment.merged(tmp_path / "a", mapped), Segment.merged(tmp_path / "b", in_memory)
    for name in ("ids", "data", "indices", "indptr", "tf", "lengths"):
        np.testing.assert_array_equal(getattr(from_files, name), getattr(from_memory, name))
    assert from_files.vocab == from_memory.vocab


def test_a_reader_searches_the_segments_it_opened_when_a_merge_removes_them(tmp_path, monkeypatch):
    """A writer's merge replaces the manifest and removes the merged segments' folders,
    which can happen just after a reader has loaded them: the MCP server's recall
    failed with FileNotFoundError during a first index of 1M chunks.  The reader
    answers from what it loaded (its arrays stay mapped), as the manifest it read."""
    import shutil

    from funes.memory import lexical

    ids, texts = _corpus(300)
    LexicalIndex.open(tmp_path).rebuild(ids, texts, 1)
    expected = LexicalIndex.open(tmp_path).search("lance fragment manifest", 10)
    load = lexical.Segment.load.__func__

    def load_then_merged_away(cls, folder):
        segment = load(cls, folder)
        shutil.rmtree(folder)
        return segment

    monkeypatch.setattr(lexical, "_OPENED", {})  # nothing this process loaded before
    monkeypatch.setattr(lexical.Segment, "load", classmethod(load_then_merged_away))
    reader = LexicalIndex.open(tmp_path)
    assert not any(tmp_path.glob("seg-*")) and reader.problem is None
    assert reader.search("lance fragment manifest", 10) == expected


def test_allowed_mask_filters_before_ranking(tmp_path):
    ids, texts = _corpus(300)
    index = LexicalIndex.open(tmp_path)
    index.rebuild(ids, texts, 1)
    allowed = np.array(ids[:10], dtype="<U16")
    hits = index.search("lance vector", 50, allowed)
    assert hits and {h[0] for h in hits} <= set(ids[:10])


def test_a_crash_before_the_manifest_leaves_the_previous_index(tmp_path):
    ids, texts = _corpus(50)
    index = LexicalIndex.open(tmp_path)
    index.rebuild(ids[:40], texts[:40], 3)
    before = (tmp_path / MANIFEST).read_text()
    # A writer that died after saving a segment folder but before the manifest.
    (tmp_path / "seg-orphan").mkdir()
    reopened = LexicalIndex.open(tmp_path)
    assert (tmp_path / MANIFEST).read_text() == before
    assert reopened.table_version == 3
    assert len(reopened.covered_ids()) == 40
    # A reader covers what the manifest lacks in memory, writing nothing.
    view = reopened.with_transient(ids[40:], texts[40:])
    assert len(view.covered_ids()) == 50
    assert (tmp_path / MANIFEST).read_text() == before


def test_a_changed_tokenizer_means_an_empty_index_to_rebuild(tmp_path):
    ids, texts = _corpus(20)
    index = LexicalIndex.open(tmp_path)
    index.rebuild(ids, texts, 1)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    manifest["tokenizer"]["stopwords"] = "something-else"
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    assert LexicalIndex.open(tmp_path).segments == []


def test_a_segment_scores_every_document_as_bm25s_does(tmp_path):
    """The numpy build gives each (document, term) bm25s's own float32 score, so
    recall ranks exactly as with ``bm25s.BM25.index``: documents with repeated
    lines (a chunk weighted three times), identifiers, a line shared with a
    neighbour, and one with no token at all."""
    import bm25s

    from funes.memory.documents import document

    from funes.memory.segments import BM25_PARAMS, Segment

    from funes.memory.tokens import tokenize

    ids, texts = _corpus(500, seed=3)
    rng = random.Random(7)
    texts = [document(t, [texts[i - 1]] if i else [], block_type=rng.choice(["text", "tool_use", "tool_result"]),
                      tool_name="Bash") for i, t in enumerate(texts)]
    texts[10] = document("resolveWorkspaceRoot failed in lib/spotter/transcript_renderer.ex\nsecond line")
    texts[11] = "!!! ?? ..."
    built = Segment.build("seg", ids, texts)
    reference = bm25s.BM25(**BM25_PARAMS)
    reference.index(tokenize(texts), show_progress=False)
    scores = reference.scores
    assert set(built.vocab) == set(reference.vocab_dict)
    for token, mine in built.vocab.items():
        if token == "":
            continue
        theirs = reference.vocab_dict[token]
        ours = slice(built.indptr[mine], built.indptr[mine + 1])
        bm25s_column = slice(scores["indptr"][theirs], scores["indptr"][theirs + 1])
        assert np.array_equal(built.indices[ours], scores["indices"][bm25s_column]), token
        assert np.array_equal(built.data[ours], scores["data"][bm25s_column]), token
    assert built.data.dtype == np.float32 and built.indices.dtype == scores["indices"].dtype


def test_a_merge_scores_as_a_build_over_the_same_documents(tmp_path, monkeypatch):
    """Merging reads no text: from the segments' term counts and lengths it makes,
    score for score, the segment a build over the kept documents makes (a repeated
    id once, a dropped one gone with the terms only it held), blocks of any size."""
    from funes.memory import segments
    from funes.memory.segments import Segment

    monkeypatch.setattr(segments, "SCORE_BLOCK", 97)
    ids, texts = _corpus(700, seed=5)
    texts = [t + f" only{i}" if i % 50 == 0 else t for i, t in enumerate(texts)]
    texts[3] = ""
    parts = [Segment.build(f"s{n}", ids[a:b], texts[a:b]) for n, (a, b) in enumerate(((0, 400), (400, 650), (650, 700)))]
    parts.append(Segment.build("again", ids[:5], texts[:5]))  # ids a segment already holds
    rng = random.Random(2)
    keep = np.array([rng.random() > 0.15 for _ in range(705)])
    merged = Segment.merged(tmp_path / "m", parts, keep)
    kept = [i for i, k in zip(ids, keep[:700]) if k]
    built = Segment.build("b", kept, [t for t, k in zip(texts, keep[:700]) if k])
    assert merged.name == "m" and isinstance(merged.data, np.memmap)  # saved as made, held as a reader holds it
    for segment in (merged, Segment.load(tmp_path / "m")):
        assert segment.ids.tolist() == kept
        _assert_same_columns(segment, built)


def _assert_same_columns(segment, built):
    """The two segments hold the same terms, each with the same documents, scores
    and counts (term ids may be numbered differently)."""
    assert set(segment.vocab) == set(built.vocab)
    assert np.array_equal(segment.lengths, built.lengths)
    for token, column in built.vocab.items():
        if token == "":
            continue
        ours, theirs = segment.vocab[token], column
        a, b = slice(segment.indptr[ours], segment.indptr[ours + 1]), slice(built.indptr[theirs], built.indptr[theirs + 1])
        assert np.array_equal(segment.indices[a], built.indices[b]), token
        assert np.array_equal(segment.data[a], built.data[b]), token
        assert np.array_equal(segment.tf[a], built.tf[b]), token


def test_documents_counted_elsewhere_build_the_segment_their_texts_build():
    """A segment over documents whose term counts were made apart (a worker counts
    the sessions it chunks) is the one their texts build, score for score, in the
    order the ids give: counts over other vocabularies united, documents no id names
    left out (with the terms only they held), an id two parts hold taken once."""
    from funes.memory.segments import Segment
    from funes.memory.tokens import count_terms

    ids, texts = _corpus(500, seed=11)
    texts = [t + f" only{i}" if i % 40 == 0 else t for i, t in enumerate(texts)]
    texts[7] = ""
    parts = [count_terms(ids[:200], texts[:200]), count_terms(ids[150:420], texts[150:420])]
    wanted = [i for n, i in enumerate(ids) if n % 40 != 0]  # "only0", "only40", ... are in no wanted document
    rng = random.Random(4)
    rng.shuffle(wanted)
    position = {i: n for n, i in enumerate(ids)}
    mixed = [None if position[i] < 420 else texts[position[i]] for i in wanted]
    built = Segment.build("b", wanted, [texts[position[i]] for i in wanted])
    counted = Segment.build("c", wanted, mixed, parts)
    assert counted.ids.tolist() == wanted
    assert not any(token.startswith("only") for token in counted.vocab)
    _assert_same_columns(counted, built)
    with pytest.raises(ValueError):
        Segment.build("missing", ids[:10], [None] * 10, [count_terms(ids[:5], texts[:5])])


def test_segments_of_an_older_format_are_rebuilt(tmp_path):
    ids, texts = _corpus(20)
    index = LexicalIndex.open(tmp_path)
    index.rebuild(ids, texts, 1)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    del manifest["format"]  # written before segments kept their term counts
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    reopened = LexicalIndex.open(tmp_path)
    assert reopened.segments == [] and reopened.table_version == -1


def test_a_saved_vocabulary_finds_each_of_its_terms_and_nothing_else(tmp_path):
    """Terms are looked up by bisection over their sorted UTF-8 bytes: prefixes of
    one another, non-ASCII, bm25s's empty token and words that sort before, between
    and after all of them."""
    from funes.memory.segments import Vocabulary

    vocab = {"": 9, "ab": 0, "a": 3, "abc": 1, "b": 8, "zz": 2, "ĉefo": 4, "日本語": 5, "naïve": 6, "z": 7}
    Vocabulary.of(vocab).save(tmp_path)
    loaded = Vocabulary.load(tmp_path, n_terms=9)
    assert dict(loaded.items()) == vocab and sorted(loaded) == sorted(vocab) and len(loaded) == len(vocab)
    assert all(loaded[token] == column for token, column in vocab.items())
    for absent in ("aa", "abd", "0", "zzz", "ĉ", "日本", "naive", "A"):
        assert absent not in loaded and loaded.get(absent) is None


def test_segments_saved_with_a_json_vocabulary_are_read_then_saved_sorted_at_the_next_commit(tmp_path):
    """A memory indexed before vocabularies were saved sorted is read as it is; the
    next writer's commit saves its segments again (arrays linked, vocabulary sorted)
    under new names, and a reader that had opened the old ones still searches them."""
    from funes.memory.segments import Vocabulary

    ids, texts = _corpus(120)
    index = LexicalIndex.open(tmp_path)
    index.add(ids[:30], texts[:30], 1, _fetcher(ids, texts))
    queries = ("lance fragment manifest", "secret token redact", "hook cursor")
    before = {query: index.search(query, 20) for query in queries}
    (folder,) = [tmp_path / s.name for s in index.segments]
    vocab = dict(Vocabulary.load(folder, n_terms=10**9).items())
    for name in Vocabulary.FILES:
        (folder / name).unlink()
    (folder / Vocabulary.LEGACY_FILE).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")

    reader = LexicalIndex.open(tmp_path)
    assert reader.problem is None and {query: reader.search(query, 20) for query in queries} == before
    LexicalIndex.open(tmp_path).mark_version(2)  # a writer's commit that adds no text
    (resaved,) = LexicalIndex.open(tmp_path).segments
    assert resaved.name != folder.name and not folder.exists() and not any(tmp_path.rglob(Vocabulary.LEGACY_FILE))
    assert Vocabulary.files_in(tmp_path / resaved.name) == Vocabulary.FILES
    assert {query: LexicalIndex.open(tmp_path).search(query, 20) for query in queries} == before
    assert {query: reader.search(query, 20) for query in queries} == before

    writer = LexicalIndex.open(tmp_path)
    for start in range(30, 120, 30):  # three more segments of its level: the four are merged
        writer.add(ids[start:start + 30], texts[start:start + 30], start, _fetcher(ids, texts))
    rebuilt = LexicalIndex.open(tmp_path / "fresh")
    rebuilt.rebuild(ids, texts, 1)
    for query in queries:
        assert LexicalIndex.open(tmp_path).search(query, 20) == rebuilt.search(query, 20)


@pytest.mark.parametrize("damage", ["truncated terms", "column past the matrix", "starts missing"])
def test_a_vocabulary_that_does_not_fit_its_segment_is_reported_as_damage(tmp_path, damage):
    ids, texts = _corpus(60)
    LexicalIndex.open(tmp_path).rebuild(ids, texts, 1)
    (folder,) = [path for path in tmp_path.iterdir() if path.is_dir()]
    if damage == "truncated terms":
        os.truncate(folder / "terms.bin", 10)
    elif damage == "column past the matrix":
        columns = np.load(folder / "term_columns.npy")
        columns[0] = 10**6
        np.save(folder / "term_columns.npy", columns)
    else:
        (folder / "term_starts.npy").unlink()
    index = LexicalIndex.open(tmp_path)
    assert index.segments == [] and index.problem == f"{tmp_path.name}/{folder.name} cannot be read"
