"""BM25 over the memory, kept in step with the table in segments.

bm25s builds an eager index (a sparse doc × term matrix of precomputed BM25
scores) but cannot add documents to it.  So the index is a list of segments, each
a saved bm25s index over the chunks written together, plus their chunk ids:

* adding chunks writes a new segment whose cost is proportional to the new chunks
  (then the last segments, four of like size at a time, are merged: see
  :data:`MERGE_FACTOR`; a memory holds O(log n) segments); a segment keeps its
  entries' term counts and its documents' lengths, so a merge scores from them
  with numpy and never reads or tokenizes a document again (:meth:`Segment.merged`);
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

What is indexed for a chunk is its *document* (:mod:`funes.memory.documents`), its
tokens as :mod:`funes.memory.tokens` makes them; a segment's files are
:mod:`funes.memory.segments`'.  The manifest records the tokenizer, BM25 and
document settings: segments built under others are not opened, and the next
write rebuilds them, so an index never mixes two schemes.  The hit a recall
returns is still the chunk's own verbatim text.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Container, Sequence
from pathlib import Path

import numpy as np

from funes.files import write_atomically
from funes.memory.documents import DOCUMENT
from funes.memory.segments import BM25_PARAMS, SEGMENT_ARRAY_FILES, SEGMENT_FORMAT, Segment, Vocabulary
from funes.memory.tokens import TOKENIZER, TermCounts, tokenize

MANIFEST = "manifest.json"
# Segments are merged by levels (Lucene's log merge policy): a segment of n documents
# is at level floor(log_F(n / MERGE_FLOOR)), and the last MERGE_FACTOR segments are
# merged into one when they are all at one level.  A document is merged again about
# once per level it climbs, and a memory holds at most MERGE_FACTOR - 1 segments a
# level (BENCHMARKS.md, "First index, lexical pass").  The floor keeps a
# hook's few chunks from reaching a bulk flush's level.
MERGE_FACTOR = 4
MERGE_FLOOR = 64

# The segments each folder's manifest named when last opened in this process, with
# their files' sizes and times.  A committed segment's files never change (a new one
# gets a new name), so a long-lived reader (the MCP server) that follows the table
# through version bumps (vectors filled in) reuses what it loaded instead of reading
# it again; files found changed or gone (damage) are loaded, and checked, anew.
_OPENED: dict[Path, dict[str, tuple[tuple[tuple[int, int], ...], Segment]]] = {}


def _files_signature(folder: Path) -> tuple[tuple[int, int], ...]:
    files = (*SEGMENT_ARRAY_FILES, *Vocabulary.files_in(folder))
    return tuple((stat.st_size, stat.st_mtime_ns) for stat in (os.stat(folder / f) for f in files))


def _opened_segment(folder: Path, name: str) -> tuple[tuple[tuple[int, int], ...], Segment]:
    """The segment ``name`` with the signature of the files it was read from, both taken
    now: a writer's merge may remove the folder right after (a reader that stats it
    again later meets FileNotFoundError)."""
    signature = _files_signature(folder / name)
    known = _OPENED.get(folder, {}).get(name)
    if known is not None and known[0] == signature:
        return known
    return signature, Segment.load(folder / name)


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))



def _stored_mask(segments: Sequence[Segment], still_stored: Callable[[Sequence[str]], Container[str]]) -> np.ndarray:
    """Which of ``segments``' ids, in turn, the table still holds.  Its own function:
    the ids as Python strings are gone before the merge allocates its arrays (the
    indexer's peak is a first index's last merge)."""
    ids = np.concatenate([s.ids for s in segments]).tolist()
    stored = still_stored(ids)
    return np.fromiter((i in stored for i in ids), dtype=bool, count=len(ids))


def _merge_level(n_docs: int) -> int:
    """The merge level of a segment of ``n_docs`` documents (see :data:`MERGE_FACTOR`)."""
    level, bound = 0, MERGE_FLOOR * MERGE_FACTOR
    while n_docs >= bound:
        level, bound = level + 1, bound * MERGE_FACTOR
    return level


class LexicalIndex:
    """The BM25 segments of one memory (``folder`` is ``<memory>/bm25``).

    ``problem`` says what is wrong when the manifest or a segment it names exists but
    cannot be read (the index then opens empty and readers index the table in memory)."""

    def __init__(self, folder: Path | None, segments: list[Segment], table_version: int,
                 problem: str | None = None):
        self.folder = folder
        self.segments = segments
        self.table_version = table_version
        self.problem = problem
        self._term_cache: dict[str, tuple[tuple[int, int], ...]] = {}

    # ------------------------------------------------------------------ reading
    @classmethod
    def open(cls, folder: Path) -> LexicalIndex:
        """The index as last committed; an empty one when none was written or the
        tokenisation changed (the caller then re-indexes)."""
        # A writer may replace the manifest and remove merged segments between our
        # reading the manifest and opening them: read again when that happens.
        problem = None
        for _attempt in range(3):
            try:
                manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
                if not isinstance(manifest, dict):
                    raise ValueError("not an object")
            except FileNotFoundError:
                return cls(folder, [], -1)
            except (OSError, ValueError):
                problem = f"{folder.name}/{MANIFEST} cannot be read"
                continue
            if (manifest.get("tokenizer") != TOKENIZER or manifest.get("bm25") != BM25_PARAMS
                    or manifest.get("document") != DOCUMENT or manifest.get("format") != SEGMENT_FORMAT):
                return cls(folder, [], -1)
            opened = {}
            try:
                for name in manifest.get("segments", []):
                    problem = f"{folder.name}/{name} cannot be read"
                    opened[name] = _opened_segment(folder, name)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            _OPENED[folder] = opened
            return cls(folder, [segment for _, segment in opened.values()], int(manifest.get("table_version", -1)))
        return cls(folder, [], -1, problem)  # damaged: the caller re-indexes from the table

    @property
    def n_docs(self) -> int:
        return sum(s.n_docs for s in self.segments)

    def covers(self, chunk_id: str) -> bool:
        """Whether some segment indexes ``chunk_id``."""
        return any(chunk_id in segment.id_set for segment in self.segments)

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
        terms = {t: self._segment_terms(t) for t in set(tokens)}
        global_df = {t: sum(df for _, df in found) for t, found in terms.items()}
        hits: list[tuple[float, str]] = []
        for number, segment in enumerate(self.segments):
            scores = np.zeros(segment.n_docs, dtype=np.float32)
            touched = False
            for token in tokens:
                token_id, seg_df = terms[token][number]
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

    def _segment_terms(self, token: str) -> tuple[tuple[int, int], ...]:
        """Each segment's column of ``token`` and its document frequency there ((-1, 0)
        where it has none): one bisection a segment per query term, remembered while
        the segments stay."""
        cached = self._term_cache.get(token)
        if cached is None:
            cached = tuple((-1, 0) if (column := s.vocab.get(token)) is None else (column, s.doc_freq(column))
                           for s in self.segments)
            self._term_cache[token] = cached
        return cached

    def with_transient(self, ids: Sequence[str], texts: Sequence[str]) -> LexicalIndex:
        """A reader's view with chunks the manifest does not cover yet, indexed in
        memory (nothing is written)."""
        if not ids:
            return self
        extra = Segment.build(f"transient-{uuid.uuid4().hex[:8]}", ids, texts)
        return LexicalIndex(None, [*self.segments, extra], self.table_version)

    # ------------------------------------------------------------------ writing
    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str | None],
        table_version: int,
        still_stored: Callable[[Sequence[str]], Container[str]],
        counted: Sequence[TermCounts] = (),
    ) -> None:
        """Index new chunks as a segment, merge neighbours of like size, commit.

        ``texts`` are the chunks' documents (:func:`document`), None for those whose
        term counts ``counted`` holds (see :meth:`Segment.build`); ``still_stored``
        says which of some chunk ids the table still holds (a merge drops the
        others).  Merging reads no text (:meth:`Segment.merged`)."""
        assert self.folder is not None, "a transient index cannot be written"
        segments = list(self.segments)
        if ids:
            segments.append(Segment.build(self._new_name(), ids, texts, counted))
        while len(segments) >= MERGE_FACTOR and len({_merge_level(s.n_docs) for s in segments[-MERGE_FACTOR:]}) == 1:
            tail = segments[-MERGE_FACTOR:]
            segments[-MERGE_FACTOR:] = [Segment.merged(self.folder / self._new_name(), tail,
                                                       _stored_mask(tail, still_stored))]
        self._commit(segments, table_version)

    def rebuild(self, ids: Sequence[str], texts: Sequence[str], table_version: int) -> None:
        """One segment over the whole table (maintenance, or a tokenizer change)."""
        assert self.folder is not None
        segments = [Segment.build(self._new_name(), ids, texts)] if ids else []
        self._commit(segments, table_version)

    def mark_version(self, table_version: int) -> None:
        """Record that the table changed without adding text (vectors filled in)."""
        if table_version != self.table_version:
            self._commit(self.segments, table_version)

    def _new_name(self) -> str:
        return f"seg-{uuid.uuid4().hex[:12]}"

    def _commit(self, segments: list[Segment], table_version: int) -> None:
        assert self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True)  # a new memory's first commit may add no text
        saved = []
        for segment in segments:
            folder = self.folder / segment.name
            if not folder.exists():
                segment.save(folder)
                segment = segment.mapped(folder)
            elif Vocabulary.files_in(folder) == (Vocabulary.LEGACY_FILE,):
                segment = segment.resaved(folder, self.folder / self._new_name())
            saved.append(segment)
        segments = saved
        manifest = {
            "tokenizer": TOKENIZER,
            "bm25": BM25_PARAMS,
            "document": DOCUMENT,
            "format": SEGMENT_FORMAT,
            "table_version": table_version,
            "segments": [s.name for s in segments],
        }
        write_atomically(self.folder / MANIFEST, json.dumps(manifest, indent=1))
        self.segments = segments
        self.table_version = table_version
        self._term_cache.clear()
        self._remove_orphans({s.name for s in segments})

    def _remove_orphans(self, live: set[str]) -> None:
        assert self.folder is not None
        for path in self.folder.iterdir():
            if path.is_dir() and path.name not in live:
                shutil.rmtree(path, ignore_errors=True)
