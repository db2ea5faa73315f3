"""BM25 segments: a saved bm25s index over the chunks written together.

A segment is bm25s's eager index (a sparse doc × term matrix of precomputed BM25
scores, CSC) over its documents, with its chunk ids, each entry's term count and
each document's length: enough to merge segments by scoring again from the counts,
never reading or tokenizing a document twice (:meth:`Segment.merged`).  Its arrays
are ``.npy`` files a reader memory-maps; its vocabulary is saved sorted
(:class:`Vocabulary`).
"""

from __future__ import annotations

import bisect
import io
import json
import math
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from funes.memory.tokens import TermCounts, count_terms

BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
# What a segment holds on disk; a manifest of another format is rebuilt.  2: each
# segment keeps its entries' term counts and its documents' lengths, so merging
# scores from them instead of reading and tokenizing the documents again.
SEGMENT_FORMAT = 2

def _lucene_idf_of(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """bm25s's lucene IDF of each term, in its float64 ``math.log`` arithmetic,
    rounded to float32 as it stores it."""
    distinct, which = np.unique(doc_freq, return_inverse=True)
    return np.array([math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) for df in distinct.tolist()],
                    dtype=np.float32)[which]


# Entries (document, term) placed or scored per numpy pass when a merge makes its
# segment: each pass holds about eight 8-byte arrays of this length (64 MB), on top
# of the merged segment, at a first index's last merges: its peak.
SCORE_BLOCK = 1 << 20


def _read_block(array: np.ndarray, start: int, end: int) -> np.ndarray:
    """``array[start:end]`` as a copy.  A memory-mapped segment's entries are read
    from its file instead of through the mapping: every page a merge touches in a
    mapping stays in the process's resident memory until the segment is dropped, and
    a first index's last merges read hundreds of MB of them (its peak)."""
    if not isinstance(array, np.memmap) or array.filename is None or end <= start:
        return np.array(array[start:end])
    block = np.empty(end - start, dtype=array.dtype)
    with open(array.filename, "rb", buffering=0) as handle:
        handle.seek(array.offset + start * array.itemsize)
        handle.readinto(memoryview(block).cast("B"))
    return block


def _entry_columns(indptr: np.ndarray, start: int, end: int) -> np.ndarray:
    """The column (term) of each entry ``start``..``end`` of a CSC matrix with column
    pointers ``indptr``: the columns' numbers repeated by their entries in that range,
    linear where a ``searchsorted`` per entry was a third of a merge."""
    first = int(np.searchsorted(indptr, start, side="right")) - 1
    last = int(np.searchsorted(indptr, end - 1, side="right")) - 1
    bounds = np.clip(indptr[first:last + 2], start, end)
    return np.repeat(np.arange(first, last + 1, dtype=np.int64), np.diff(bounds))


def _scores(term: np.ndarray, doc: np.ndarray, tf: np.ndarray, lengths: np.ndarray, idf: np.ndarray,
            mean_length: float) -> np.ndarray:
    """bm25s's float32 score of each (document, term) entry, from its count ``tf``
    and the document's length (its float64 arithmetic)."""
    k1, b = BM25_PARAMS["k1"], BM25_PARAMS["b"]
    tf = tf.astype(np.float64)
    tfc = tf / (k1 * ((1 - b) + b * lengths[doc] / mean_length) + tf)
    return (idf[term].astype(np.float64) * tfc).astype(np.float32)


def _bm25_matrix(counts: TermCounts) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """The vocabulary and the doc × term BM25 score matrix (CSC: data, indices,
    indptr) that ``bm25s.BM25(**BM25_PARAMS).index(tokenize(texts))`` builds over the
    documents ``counts`` counted, score for score (its float64 arithmetic, rounded to
    float32 as it does), with each entry's term count (float32, parallel to data)
    and each document's length in tokens: what a merge scores again from.  Term ids
    are numbered in another order than bm25s's (set order), which no search depends on."""
    doc, term, lengths = counts.doc, counts.term.astype(np.int64), counts.lengths
    tf = counts.count.astype(np.float64)
    n_terms = len(counts.tokens)
    doc_freq = np.bincount(term, minlength=n_terms)
    idf = _lucene_idf_of(doc_freq, len(counts.ids))
    scores = _scores(term, doc, tf, lengths, idf, lengths.mean() if len(lengths) else 0.0)
    order = np.argsort(term, kind="stable")  # by term, documents in order within each
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(doc_freq, out=indptr[1:])
    vocab = {token: position for position, token in enumerate(counts.tokens)}
    vocab.setdefault("", n_terms)  # bm25s's empty token, never queried
    return (vocab, scores[order], doc[order], indptr, tf[order].astype(np.float32),
            lengths.astype(np.int32))


class Vocabulary(Mapping[str, int]):
    """A saved segment's terms and their columns: the terms' UTF-8 bytes in sorted
    order, concatenated (``terms.bin``), where each starts (``term_starts.npy``) and
    each one's column (``term_columns.npy``).  A reader looks up a query's few terms by
    bisection over the bytes, where a dict of every term would be parsed first, on
    every cold recall, for every segment (BENCHMARKS.md, "BM25 vocabularies saved
    sorted").
    Segments saved before kept a dict as ``vocab.json``; they are still read (:meth:`load`),
    and a writer's next commit saves them again in this format (:meth:`Segment.resaved`)."""

    FILES = ("terms.bin", "term_starts.npy", "term_columns.npy")
    LEGACY_FILE = "vocab.json"

    def __init__(self, terms: bytes, starts: np.ndarray, columns: np.ndarray):
        self._terms = terms
        self._starts = starts  # int64, one more than the terms: the last is len(terms)
        self._columns = columns  # int64, each term's column

    @classmethod
    def of(cls, vocab: Mapping[str, int]) -> Vocabulary:
        # Code point order is the UTF-8 bytes' order (surrogates passed through too),
        # and strings sort faster than bytes.
        tokens = sorted(vocab)
        encoded = [token.encode("utf-8", "surrogatepass") for token in tokens]
        starts = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=starts[1:])
        columns = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        return cls(b"".join(encoded), starts, columns)

    def _term(self, rank: int) -> bytes:
        return self._terms[int(self._starts[rank]):int(self._starts[rank + 1])]

    def __getitem__(self, token: str) -> int:
        key = token.encode("utf-8", "surrogatepass")
        rank = bisect.bisect_left(range(len(self)), key, key=self._term)
        if rank == len(self) or self._term(rank) != key:
            raise KeyError(token)
        return int(self._columns[rank])

    def __iter__(self) -> Iterator[str]:
        starts = self._starts.tolist()
        return (self._terms[start:end].decode("utf-8", "surrogatepass") for start, end in zip(starts, starts[1:]))

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        """Each term with its column, in term order (a merge reads them all: not one
        lookup each)."""
        return zip(self, self._columns.tolist(), strict=True)

    def __len__(self) -> int:
        return len(self._columns)

    def save(self, folder: Path) -> None:
        _write_file(folder / "terms.bin", self._terms)
        _write_file(folder / "term_starts.npy", self._starts)
        _write_file(folder / "term_columns.npy", self._columns)

    @classmethod
    def files_in(cls, folder: Path) -> tuple[str, ...]:
        """The vocabulary's files in a saved segment's ``folder``: this format's, or the
        ``vocab.json`` of a segment saved before it."""
        return (cls.LEGACY_FILE,) if (folder / cls.LEGACY_FILE).exists() else cls.FILES

    @classmethod
    def load(cls, folder: Path, n_terms: int) -> Mapping[str, int]:
        """The vocabulary saved in ``folder`` for a matrix of ``n_terms`` columns;
        ValueError (or OSError) when its files do not fit together or with it."""
        if cls.files_in(folder) == (cls.LEGACY_FILE,):
            vocab = json.loads((folder / cls.LEGACY_FILE).read_text(encoding="utf-8"))
            if not isinstance(vocab, dict):
                raise ValueError(f"{cls.LEGACY_FILE} is not an object")
            return vocab
        terms = (folder / "terms.bin").read_bytes()
        starts = np.load(folder / "term_starts.npy")
        columns = np.load(folder / "term_columns.npy")
        if not (starts.dtype == columns.dtype == np.int64 and starts.ndim == columns.ndim == 1
                and len(starts) == len(columns) + 1 and starts[0] == 0 and starts[-1] == len(terms)
                and (np.diff(starts) >= 0).all() and (len(columns) == 0 or 0 <= columns.min() <= columns.max() <= n_terms)):
            raise ValueError("its vocabulary does not fit its terms or its columns")
        return cls(terms, starts, columns)


@dataclass
class Segment:
    name: str
    ids: np.ndarray  # chunk ids, '<U16'
    vocab: Mapping[str, int]  # a dict as built or merged, a Vocabulary as loaded
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    tf: np.ndarray  # each entry's term count (float32, parallel to data): what a merge scores from
    lengths: np.ndarray  # each document's length in tokens (int32)
    _id_set: frozenset[str] | None = field(default=None, repr=False, compare=False)

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @property
    def id_set(self) -> frozenset[str]:
        if self._id_set is None:
            self._id_set = frozenset(self.ids.tolist())
        return self._id_set

    def doc_freq(self, token_id: int) -> int:
        return int(self.indptr[token_id + 1] - self.indptr[token_id])

    @classmethod
    def build(cls, name: str, ids: Sequence[str], texts: Sequence[str | None],
              counted: Sequence[TermCounts] = ()) -> Segment:
        """A segment over the documents of chunk ``ids``, in that order: ``texts[i]``
        is the document of ``ids[i]``, or None where one of ``counted`` holds its term
        counts already."""
        if counted:
            own = [n for n, text in enumerate(texts) if text is not None]
            counts = TermCounts.joined([count_terms([ids[n] for n in own], [texts[n] for n in own]), *counted], ids)
        else:
            counts = count_terms(ids, texts)
        vocab, data, indices, indptr, tf, lengths = _bm25_matrix(counts)
        return cls(name=name, ids=np.asarray(ids, dtype="<U16"), vocab=vocab, data=data, indices=indices,
                   indptr=indptr, tf=tf, lengths=lengths)

    @classmethod
    def merged(cls, folder: Path, segments: Sequence[Segment], keep: np.ndarray | None = None) -> Segment:
        """One segment over the documents of ``segments`` in turn (those ``keep``
        marks, a mask over their concatenated ids; a repeated id counts once), scored
        from their saved term counts and lengths: what :meth:`build` makes of the same
        documents, score for score, without reading or tokenizing any text.  Saved in
        ``folder`` (its name is the segment's) and returned mapped from there, as
        :meth:`save` then :meth:`mapped` would.  The entries are placed straight into
        the merged columns (a term's documents stay in order: segment by segment, each
        already in order), ``SCORE_BLOCK`` at a time, and scored into the file block
        by block: beside the entries' documents and counts only one block's arrays
        are held, never the scores (a first index's last merge makes tens of
        millions of entries)."""
        ids = np.concatenate([s.ids for s in segments]) if segments else np.empty(0, "<U16")
        kept = np.zeros(len(ids), dtype=bool)
        kept[np.unique(ids, return_index=True)[1]] = True  # first occurrence of each id
        if keep is not None:
            kept &= keep
        new_doc = np.cumsum(kept, dtype=np.int64) - 1
        new_doc[~kept] = -1
        vocab: dict[str, int] = {}
        columns = []  # per segment: its term columns' merged term ids
        for segment in segments:
            column_terms = np.zeros(len(segment.indptr) - 1, dtype=np.int64)
            for token, column in segment.vocab.items():
                if token != "" and column < len(column_terms):
                    column_terms[column] = vocab.setdefault(token, len(vocab))
            columns.append(column_terms)
        n_terms = len(vocab)
        doc_freq = np.zeros(n_terms, dtype=np.int64)
        first = 0
        parts = []  # per segment: its documents' new numbers, its entries kept (None: all), its columns' counts
        for segment, column_terms in zip(segments, columns, strict=True):
            docs = new_doc[first:first + segment.n_docs]
            first += segment.n_docs
            seg_indptr = np.asarray(segment.indptr, dtype=np.int64)
            column_df = np.diff(seg_indptr)
            entry_kept = None
            if not (docs >= 0).all():
                entry_kept = docs[np.asarray(segment.indices)] >= 0
                before = np.concatenate([[0], np.cumsum(entry_kept, dtype=np.int64)])
                column_df = before[seg_indptr[1:]] - before[seg_indptr[:-1]]
            np.add.at(doc_freq, column_terms, column_df)
            parts.append((docs, seg_indptr, entry_kept, column_df))
        if not doc_freq.all():  # terms only dropped documents held: gone, as from a build
            live = doc_freq > 0
            renumber = np.cumsum(live) - 1  # a dead term's columns hold no kept entry
            columns = [renumber[c] for c in columns]
            vocab = {token: int(renumber[term]) for token, term in vocab.items() if live[term]}
            doc_freq = doc_freq[live]
            n_terms = len(doc_freq)
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(doc_freq, out=indptr[1:])
        entries = int(indptr[-1])
        indices = np.empty(entries, dtype=np.int32)
        tf = np.empty(entries, dtype=np.float32)
        filled = indptr[:-1].copy()  # where each term's next entry goes
        for segment, column_terms, (docs, seg_indptr, entry_kept, column_df) in zip(segments, columns, parts,
                                                                                    strict=True):
            total = int(seg_indptr[-1]) if len(seg_indptr) else 0
            kept_before = None if entry_kept is None else np.concatenate([[0], np.cumsum(entry_kept, dtype=np.int64)])
            for start in range(0, total, SCORE_BLOCK):
                end = min(start + SCORE_BLOCK, total)
                at = np.arange(start, end, dtype=np.int64)
                column = _entry_columns(seg_indptr, start, end)
                block_docs = _read_block(segment.indices, start, end)
                block_tf = _read_block(segment.tf, start, end)
                if kept_before is None:
                    rank = at - seg_indptr[column]
                else:
                    mask = entry_kept[start:end]
                    at, column, block_docs, block_tf = at[mask], column[mask], block_docs[mask], block_tf[mask]
                    rank = kept_before[at] - kept_before[seg_indptr[column]]
                where = filled[column_terms[column]] + rank
                indices[where] = docs[block_docs]
                tf[where] = block_tf
            np.add.at(filled, column_terms, column_df)
        lengths = np.concatenate([s.lengths for s in segments])[kept] if segments else np.empty(0, np.int32)
        n_docs = int(kept.sum())
        idf = _lucene_idf_of(doc_freq, n_docs)
        mean_length = lengths.mean() if len(lengths) else 0.0
        vocab[""] = n_terms  # bm25s's empty token, never queried

        def scores() -> Iterator[np.ndarray]:
            for start in range(0, entries, SCORE_BLOCK):
                end = min(start + SCORE_BLOCK, entries)
                term = _entry_columns(indptr, start, end)
                yield _scores(term, indices[start:end], tf[start:end], lengths, idf, mean_length)

        _save_segment(folder, {"ids": ids[kept], "indices": indices, "indptr": indptr, "tf": tf, "lengths": lengths},
                      vocab, ("data", np.dtype(np.float32), entries, scores()))
        return cls(name=folder.name, ids=ids[kept], vocab=vocab, **_mapped_arrays(folder))

    def save(self, folder: Path) -> None:
        _save_segment(folder, {"ids": self.ids, "data": self.data, "indices": self.indices, "indptr": self.indptr,
                               "tf": self.tf, "lengths": self.lengths}, self.vocab)

    def mapped(self, folder: Path) -> Segment:
        """This segment with its arrays memory-mapped from ``folder``, where it was just
        saved, as a reader holds them, so a writer does not keep every segment it
        built or merged in its own memory for as long as the backlog embeds.  Its ids and vocabulary stay as they are: the same, and in use."""
        return replace(self, **_mapped_arrays(folder))

    def resaved(self, folder: Path, new: Path) -> Segment:
        """This segment, saved in ``folder`` with a ``vocab.json``, saved again as ``new``
        with its vocabulary sorted (:class:`Vocabulary`), so that a memory indexed
        before gets the faster reads at its next commit, not only as its segments are
        merged (its largest seldom are).  The arrays are hard links to the old files, not
        copies; the old folder stays for readers that opened it until the commit
        removes it as an orphan."""
        tmp = new.with_name(new.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            for name in SEGMENT_ARRAY_FILES:
                try:
                    os.link(folder / name, tmp / name)
                except OSError:  # a file system without hard links
                    shutil.copyfile(folder / name, tmp / name)
            Vocabulary.of(self.vocab).save(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.replace(tmp, new)
        return replace(self, name=new.name, **_mapped_arrays(new))

    @classmethod
    def load(cls, folder: Path) -> Segment:
        """A saved segment; ValueError (or OSError) when its files do not fit together."""
        indptr = np.load(folder / "indptr.npy", mmap_mode="r")
        segment = cls(
            name=folder.name,
            ids=np.load(folder / "ids.npy"),
            vocab=Vocabulary.load(folder, max(len(indptr) - 1, 0)),
            data=np.load(folder / "data.npy", mmap_mode="r"),
            indices=np.load(folder / "indices.npy", mmap_mode="r"),
            indptr=indptr,
            tf=np.load(folder / "tf.npy", mmap_mode="r"),
            lengths=np.load(folder / "lengths.npy", mmap_mode="r"),
        )
        entries = int(segment.indptr[-1]) if len(segment.indptr) else 0
        if not (len(segment.data) == len(segment.indices) == len(segment.tf) == entries
                and len(segment.lengths) == len(segment.ids)):
            raise ValueError(f"BM25 segment {folder.name} is inconsistent")
        return segment


SEGMENT_ARRAY_FILES = ("ids.npy", "data.npy", "indices.npy", "indptr.npy", "tf.npy", "lengths.npy")


class _Writes:
    """A file seen by numpy as a plain writable object: numpy writes real files with
    ``tofile``, whose short write on a full disk raises an OSError without errno,
    which no caller can tell from any other failure; to anything else it writes
    pieces of the array in turn (no copy of the whole array is made)."""

    def __init__(self, handle: io.BufferedWriter):
        self.handle = handle

    def write(self, data: bytes) -> int:
        return self.handle.write(data)


def _write_file(path: Path, data: bytes | np.ndarray | tuple[np.dtype, int, Iterable[np.ndarray]]) -> None:
    """Write (an array as ``.npy``, or one of ``(dtype, length, its blocks in
    order)`` as its blocks come) and fsync through Python's own file object."""
    with open(path, "wb") as handle:
        if isinstance(data, np.ndarray):
            np.lib.format.write_array(_Writes(handle), np.asanyarray(data), allow_pickle=False)
        elif isinstance(data, tuple):
            dtype, length, blocks = data
            np.lib.format.write_array_header_1_0(handle, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                          "fortran_order": False, "shape": (length,)})
            written = 0
            for block in blocks:
                handle.write(memoryview(np.ascontiguousarray(block, dtype=dtype)).cast("B"))
                written += len(block)
            if written != length:
                raise ValueError(f"{path.name}: {written} values written, {length} announced")
        else:
            handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


_ARRAYS = ("data", "indices", "indptr", "tf", "lengths")  # a segment's arrays a reader maps


def _save_segment(folder: Path, arrays: dict[str, np.ndarray], vocab: Mapping[str, int],
                  streamed: tuple[str, np.dtype, int, Iterable[np.ndarray]] | None = None) -> None:
    """A segment's files written into a fresh folder beside ``folder``, then moved to
    it: ``arrays`` whole, ``streamed`` (name, dtype, length, blocks) as its blocks
    come."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for name, array in arrays.items():
            _write_file(tmp / f"{name}.npy", np.asarray(array))
        if streamed is not None:
            name, dtype, length, blocks = streamed
            _write_file(tmp / f"{name}.npy", (dtype, length, blocks))
        (vocab if isinstance(vocab, Vocabulary) else Vocabulary.of(vocab)).save(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk leaves no half-written segment behind
        raise
    os.replace(tmp, folder)


def _mapped_arrays(folder: Path) -> dict[str, np.ndarray]:
    return {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
