"""BM25 over the memory with bm25s, kept in step with the table in segments.

bm25s builds an eager index (a sparse doc × term matrix of precomputed BM25
scores) but cannot add documents to it.  So the index is a list of segments, each
a saved bm25s index over the chunks written together, plus their chunk ids:

* adding chunks writes a new segment whose cost is proportional to the new chunks
  (then small neighbouring segments are merged, log-structured, so a memory
  holds O(log n) segments and each chunk is re-tokenized O(log n) times);
* a query scores every segment with **global** statistics: bm25s bakes each
  segment's own IDF into its matrix, so each term's column is rescaled by
  ``idf_global / idf_segment`` (document frequencies are the matrix's column
  counts, summed over segments).  Length normalisation keeps each segment's own
  average length, a small approximation that maintenance removes by merging all
  segments into one.

``manifest.json`` names the live segments and the table version they cover; it is
replaced atomically after a segment is written, so a crash leaves the previous
manifest (orphan segment folders are ignored and cleaned up later).  Readers that
find the table ahead of the manifest (a write in progress, or a crash between
the table commit and the segment) index the missing chunks in memory: they never
wait for the writer.

What is indexed for a chunk is a *document* (:func:`document`), not the bare
chunk text: the chunk's text weighted three times, after the text of up to two
chunks that precede it in its session (each cut to 400 characters).  A turn often
answers the one before it ("here it is!" after "did you finish the painting?";
a tool result after the command that produced it), so the question's words
are frequently in the neighbour, not the turn.  On the LoCoMo dev split this
raised BM25's R@10 from 0.570 to 0.73 and MRR@10 from 0.405 to 0.51; the
weight keeps the chunk that says a thing ahead of the chunks after it, and on
known-item queries over real coding transcripts (words or identifiers drawn
from one chunk) it ranks that chunk first more often than indexing the bare
text did (BENCHMARKS.md).  Only *earlier* chunks
are used, so a chunk's document never changes once it is written (transcripts
grow at the end), and the context is derived from the table when a segment is
built, never stored: deleting or re-redacting a chunk removes its words from
its neighbours' documents at the next rebuild.  The hit a recall returns is
still the chunk's own verbatim text.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MANIFEST = "manifest.json"
# Tokenisation and BM25 parameters; a memory indexed with other settings is rebuilt.
TOKENIZER = {"stopwords": "en_plus", "stemmer": "english", "pattern": r"(?u)\b\w\w+\b", "lower": True}
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
# What a chunk's document holds (see the module docstring); part of the manifest, so
# a change rebuilds the index.  ``context_turns``: context chunks come from at most
# this many turns (by seq) before the chunk's own, which bounds the rows a writer
# reads to build the documents of a few new chunks.
DOCUMENT = {"context_chunks": 2, "context_chars": 400, "context_turns": 8, "own_weight": 3}
# Columns :func:`documents_from_rows` reads.
DOCUMENT_COLUMNS = ("id", "session_id", "seq", "block_idx", "split_idx", "text")
# A segment is merged into its predecessor when it holds at least this share of it.
MERGE_RATIO = 0.25


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer(TOKENIZER["stemmer"])


_STEMMER = None


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens, English stop words removed, Snowball-stemmed."""
    import bm25s

    global _STEMMER
    if _STEMMER is None:
        _STEMMER = _stemmer()
    return bm25s.tokenize(
        list(texts),
        lower=TOKENIZER["lower"],
        token_pattern=TOKENIZER["pattern"],
        stopwords=TOKENIZER["stopwords"],
        stemmer=_STEMMER,
        return_ids=False,
        show_progress=False,
    )


def _head(text: str, limit: int) -> str:
    """At most ``limit`` characters from the start of ``text``, cut at a space when
    one is in the second half."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut != -1 else limit]


def document(text: str, context: Sequence[str] = ()) -> str:
    """The text BM25 indexes for a chunk: the last ``context_chunks`` of
    ``context`` (each cut to ``context_chars``), then the chunk's own text
    ``own_weight`` times, so a term of the chunk itself weighs more than one of
    its neighbours'."""
    parts = [_head(c, DOCUMENT["context_chars"]) for c in context[-DOCUMENT["context_chunks"]:] if c]
    parts += [text] * DOCUMENT["own_weight"]
    return "\n".join(parts)


def documents_from_rows(rows: Sequence[dict], wanted: Iterable[str] | None = None) -> dict[str, str]:
    """``{chunk id: document}`` for the ``wanted`` ids (all when None), from rows
    with :data:`DOCUMENT_COLUMNS` that include, for each wanted chunk, the chunks of
    its session up to ``context_turns`` turns before it (extra rows are harmless).

    A chunk's context is the chunks just before it in its session, in (seq,
    block_idx, split_idx) order, that lie within ``context_turns`` turns."""
    want = None if wanted is None else set(wanted)
    by_session: dict[str, list[dict]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row)
    out: dict[str, str] = {}
    depth, reach = DOCUMENT["context_chunks"], DOCUMENT["context_turns"]
    for session_rows in by_session.values():
        session_rows.sort(key=lambda r: (int(r["seq"] or 0), int(r["block_idx"] or 0), int(r["split_idx"] or 0),
                                         r["id"]))
        seen: set[str] = set()
        ordered = []
        for row in session_rows:  # a row fetched twice (overlapping queries) counts once
            if row["id"] not in seen:
                seen.add(row["id"])
                ordered.append(row)
        for position, row in enumerate(ordered):
            if want is not None and row["id"] not in want:
                continue
            seq = int(row["seq"] or 0)
            context = [r["text"] or "" for r in ordered[max(0, position - depth):position]
                       if seq - int(r["seq"] or 0) <= reach]
            out[row["id"]] = document(row["text"] or "", context)
    return out


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


@dataclass
class Segment:
    name: str
    ids: np.ndarray  # chunk ids, '<U16'
    vocab: dict[str, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    def doc_freq(self, token_id: int) -> int:
        return int(self.indptr[token_id + 1] - self.indptr[token_id])

    @classmethod
    def build(cls, name: str, ids: Sequence[str], tokens: list[list[str]]) -> Segment:
        import bm25s

        retriever = bm25s.BM25(**BM25_PARAMS)
        retriever.index(tokens, show_progress=False)
        scores = retriever.scores
        return cls(
            name=name,
            ids=np.asarray(ids, dtype="<U16"),
            vocab=dict(retriever.vocab_dict),
            data=np.asarray(scores["data"]),
            indices=np.asarray(scores["indices"]),
            indptr=np.asarray(scores["indptr"]),
        )

    def save(self, folder: Path) -> None:
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        np.save(tmp / "ids.npy", self.ids)
        np.save(tmp / "data.npy", self.data)
        np.save(tmp / "indices.npy", self.indices)
        np.save(tmp / "indptr.npy", self.indptr)
        (tmp / "vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False), encoding="utf-8")
        for path in tmp.iterdir():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(tmp, folder)

    @classmethod
    def load(cls, folder: Path) -> Segment:
        return cls(
            name=folder.name,
            ids=np.load(folder / "ids.npy"),
            vocab=json.loads((folder / "vocab.json").read_text(encoding="utf-8")),
            data=np.load(folder / "data.npy", mmap_mode="r"),
            indices=np.load(folder / "indices.npy", mmap_mode="r"),
            indptr=np.load(folder / "indptr.npy", mmap_mode="r"),
        )


class LexicalIndex:
    """The BM25 segments of one memory (``folder`` is ``<memory>/bm25``)."""

    def __init__(self, folder: Path | None, segments: list[Segment], table_version: int):
        self.folder = folder
        self.segments = segments
        self.table_version = table_version
        self._doc_freq_cache: dict[str, tuple[int, ...]] = {}

    # ------------------------------------------------------------------ reading
    @classmethod
    def open(cls, folder: Path) -> LexicalIndex:
        """The index as last committed; an empty one when none was written or the
        tokenisation changed (the caller then re-indexes)."""
        # A writer may replace the manifest and remove merged segments between our
        # reading the manifest and opening them: read again when that happens.
        for _attempt in range(3):
            try:
                manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return cls(folder, [], -1)
            if (manifest.get("tokenizer") != TOKENIZER or manifest.get("bm25") != BM25_PARAMS
                    or manifest.get("document") != DOCUMENT):
                return cls(folder, [], -1)
            try:
                segments = [Segment.load(folder / name) for name in manifest.get("segments", [])]
            except (OSError, ValueError):
                continue
            return cls(folder, segments, int(manifest.get("table_version", -1)))
        return cls(folder, [], -1)  # damaged: the caller re-indexes from the table

    @property
    def n_docs(self) -> int:
        return sum(s.n_docs for s in self.segments)

    def covered_ids(self) -> np.ndarray:
        if not self.segments:
            return np.empty(0, dtype="<U16")
        return np.concatenate([s.ids for s in self.segments])

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Top ``k`` ``(chunk_id, score)`` by BM25 with global statistics.

        ``allowed``: chunk ids the caller's filters admit (None: all)."""
        tokens = tokenize([query])[0]
        if not tokens or not self.segments or k <= 0:
            return []
        total_docs = self.n_docs
        global_df = {t: sum(self._segment_dfs(t)) for t in set(tokens)}
        hits: list[tuple[float, str]] = []
        for segment in self.segments:
            scores = np.zeros(segment.n_docs, dtype=np.float32)
            touched = False
            for token in tokens:
                token_id = segment.vocab.get(token)
                if token_id is None:
                    continue
                seg_df = segment.doc_freq(token_id)
                if seg_df == 0:
                    continue
                weight = _lucene_idf(np.float64(global_df[token]), total_docs) / _lucene_idf(
                    np.float64(seg_df), segment.n_docs
                )
                start, end = int(segment.indptr[token_id]), int(segment.indptr[token_id + 1])
                # Rows within one term column are unique, so plain fancy-index adds are exact.
                scores[segment.indices[start:end]] += segment.data[start:end] * np.float32(weight)
                touched = True
            if not touched:
                continue
            if allowed is not None:
                scores[~np.isin(segment.ids, allowed)] = 0.0
            candidates = np.flatnonzero(scores > 0)
            if len(candidates) > k:
                candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
            hits.extend((float(scores[i]), str(segment.ids[i])) for i in candidates)
        hits.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(chunk, score) for score, chunk in hits[:k]]

    def _segment_dfs(self, token: str) -> tuple[int, ...]:
        cached = self._doc_freq_cache.get(token)
        if cached is None:
            cached = tuple(
                s.doc_freq(s.vocab[token]) if token in s.vocab else 0 for s in self.segments
            )
            self._doc_freq_cache[token] = cached
        return cached

    def with_transient(self, ids: Sequence[str], texts: Sequence[str]) -> LexicalIndex:
        """A reader's view with chunks the manifest does not cover yet, indexed in
        memory (nothing is written)."""
        if not ids:
            return self
        extra = Segment.build(f"transient-{uuid.uuid4().hex[:8]}", ids, tokenize(texts))
        return LexicalIndex(None, [*self.segments, extra], self.table_version)

    # ------------------------------------------------------------------ writing
    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        table_version: int,
        fetch_texts: Callable[[Sequence[str]], dict[str, str]],
    ) -> None:
        """Index new chunks as a segment, merge small neighbours, commit.

        ``texts`` are the chunks' documents (:func:`document`); ``fetch_texts``
        returns the current document of chunk ids already in the table (merging
        re-tokenizes them; ids no longer in the table drop out)."""
        assert self.folder is not None, "a transient index cannot be written"
        self.folder.mkdir(parents=True, exist_ok=True)
        segments = list(self.segments)
        if ids:
            segments.append(Segment.build(self._new_name(), ids, tokenize(texts)))
        while len(segments) >= 2 and segments[-1].n_docs >= MERGE_RATIO * segments[-2].n_docs:
            older, newer = segments[-2], segments[-1]
            merged_ids = [str(i) for i in older.ids] + [str(i) for i in newer.ids]
            known = fetch_texts(merged_ids)
            keep = [i for i in dict.fromkeys(merged_ids) if i in known]
            segments[-2:] = [Segment.build(self._new_name(), keep, tokenize([known[i] for i in keep]))]
        self._commit(segments, table_version)

    def rebuild(self, ids: Sequence[str], texts: Sequence[str], table_version: int) -> None:
        """One segment over the whole table (maintenance, or a tokenizer change)."""
        assert self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        segments = [Segment.build(self._new_name(), ids, tokenize(texts))] if ids else []
        self._commit(segments, table_version)

    def mark_version(self, table_version: int) -> None:
        """Record that the table changed without adding text (vectors filled in)."""
        if table_version != self.table_version:
            self._commit(self.segments, table_version)

    def _new_name(self) -> str:
        return f"seg-{uuid.uuid4().hex[:12]}"

    def _commit(self, segments: list[Segment], table_version: int) -> None:
        assert self.folder is not None
        for segment in segments:
            if not (self.folder / segment.name).exists():
                segment.save(self.folder / segment.name)
        manifest = {
            "tokenizer": TOKENIZER,
            "bm25": BM25_PARAMS,
            "document": DOCUMENT,
            "table_version": table_version,
            "segments": [s.name for s in segments],
        }
        tmp = self.folder / f".{MANIFEST}.{uuid.uuid4().hex[:8]}"
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.folder / MANIFEST)
        self.segments = segments
        self.table_version = table_version
        self._doc_freq_cache.clear()
        self._remove_orphans({s.name for s in segments})

    def _remove_orphans(self, live: set[str]) -> None:
        assert self.folder is not None
        for path in self.folder.iterdir():
            if path.is_dir() and path.name not in live:
                shutil.rmtree(path, ignore_errors=True)

