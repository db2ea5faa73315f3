"""BM25 over the memory with bm25s, kept in step with the table in segments.

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

What is indexed for a chunk is a *document* (:func:`document`), not the bare
chunk text: its own text weighted three times after its context, which depends
on the block type.  Text, thinking and tool calls take the two conversation
chunks (text or thinking) before them: a turn often answers the one before it
("here it is!" after "did you finish the painting?"), and an assistant's short
"stale build artefacts, let me recompile" is found by the reasoning before it.
A tool result takes the call that produced it ("what did the test run print"
names the command), not the conversation; a tool call reads as its argument
values, not escaped JSON.  Identifiers are tokens whole and in parts
(:data:`TOKENIZER`).  These were chosen on the LoCoMo and coding dev sets
(BENCHMARKS.md, "Recall quality (dev sets)").  Only *earlier* chunks are used,
so a chunk's document never changes once it is written (transcripts grow at the
end), and the context is derived from the table when a segment is built, never
stored: deleting or re-redacting a chunk removes its words from its neighbours'
documents at the next rebuild.  The manifest records the tokenizer, BM25 and
document settings: segments built under others are not opened, and the next
write rebuilds them, so an index never mixes two schemes.  The hit a recall
returns is still the chunk's own verbatim text.
"""

from __future__ import annotations

import bisect
import functools
import io
import json
import math
import os
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from funes.files import write_atomically

MANIFEST = "manifest.json"
# Tokenisation and BM25 parameters; a memory indexed with other settings is rebuilt.
# ``identifiers``: a run of word characters joined by ``.`` ``/`` ``:`` ``-`` (a
# path, ``ash.codegen``, ``spotter-gqc``) is kept whole and also split at those
# characters, at ``_`` and at case and digit changes, so ``resolveWorkspaceRoot``
# is found by "workspace root" and by itself.
TOKENIZER = {"stopwords": "en_plus", "stemmer": "english", "pattern": r"\w+(?:[./:\-]\w+)*", "lower": True,
             "identifiers": "whole+parts", "min_length": 2}
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
# What a chunk's document holds (see :func:`document`); part of the manifest, so a
# change rebuilds the index rather than mixing two schemes.  ``context_blocks``:
# the block types that serve as context (the conversation, not tool traffic);
# ``context_turns``: context comes from at most this many turns (by seq) before
# the chunk's own, which bounds the rows a writer reads to build the documents of
# a few new chunks; ``call_chars``: how much of the producing call a tool result's
# document carries.
DOCUMENT = {"scheme": 2, "context_chunks": 2, "context_chars": 400, "context_turns": 8, "own_weight": 3,
            "context_blocks": ["text", "thinking"], "call_chars": 400}
# Columns :func:`documents_from_rows` reads.
DOCUMENT_COLUMNS = ("id", "session_id", "seq", "block_idx", "split_idx", "block_type", "tool_name", "text")
# Segments are merged by levels (Lucene's log merge policy): a segment of n documents
# is at level floor(log_F(n / MERGE_FLOOR)), and the last MERGE_FACTOR segments are
# merged into one when they are all at one level.  A document is merged again about
# once per level it climbs (simulated over a 300k first index's 74 flushes: each 2.7 times, against 7.1
# when a segment was merged into its predecessor once it held a quarter of it), and
# a memory holds at most MERGE_FACTOR - 1 segments a level.  The floor keeps a
# hook's few chunks from reaching a bulk flush's level.
MERGE_FACTOR = 4
MERGE_FLOOR = 64
# What a segment holds on disk; a manifest of another format is rebuilt.  2: each
# segment keeps its entries' term counts and its documents' lengths, so merging
# scores from them instead of reading and tokenizing the documents again.
SEGMENT_FORMAT = 2

_COMPOUND = re.compile(TOKENIZER["pattern"])
_SEPARATORS = re.compile(r"[./:\-]+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Tokens of a raw word, memoised: vocabularies repeat, the regexes and the stemmer
# are the cost.  Cleared when it grows past this many words.
_MEMO_LIMIT = 500_000
_memo: dict[str, list[str]] = {}
_stemmer = None
_stopwords: frozenset[str] = frozenset()


def _word_tokens(word: str) -> list[str]:
    """The tokens of one compound word: itself, each piece between separators
    (``transcript_renderer`` of ``lib/transcript_renderer.ex``), and each piece's
    parts at ``_`` and, when ASCII, at case and digit changes; lower-cased, stop
    words and one-letter parts dropped, stemmed."""
    found = [word]
    pieces = [p for p in _SEPARATORS.split(word) if p]
    for piece in pieces if len(pieces) > 1 else [word]:
        if piece is not word:
            found.append(piece)
        parts = [q for part in piece.split("_") for q in (_PARTS.findall(part) if part.isascii() else [part]) if q]
        if len(parts) > 1:
            found += parts
    kept = [t for t in dict.fromkeys(f.lower() for f in found)
            if len(t) >= TOKENIZER["min_length"] and t not in _stopwords]
    return _stemmer.stemWords(kept) if kept else []


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Word tokens of each text (see :data:`TOKENIZER`): lower-cased, English stop
    words removed, Snowball-stemmed, identifiers kept whole and in parts."""
    global _stemmer, _stopwords
    if _stemmer is None:
        import Stemmer

        _stemmer = Stemmer.Stemmer(TOKENIZER["stemmer"])
        _stopwords = _bm25s_stopwords()
    out = []
    for text in texts:
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        tokens: list[str] = []
        # No token spans a line break, so a text's tokens are its lines' tokens in
        # turn; a document repeats its chunk's lines (``own_weight``): each distinct
        # line is tokenized once.
        lines: dict[str, list[str]] = {}
        for line in text.split("\n"):
            line_tokens = lines.get(line)
            if line_tokens is None:
                line_tokens = lines[line] = _line_tokens(line, _memo, _word_tokens)
            tokens += line_tokens
        out.append(tokens)
    return out


def _line_tokens(line: str, memo: dict[str, list], of_word: Callable[[str], list]) -> list:
    """What ``of_word`` makes of each word of ``line`` in turn (tokens, or token ids),
    each distinct word made once while ``memo`` keeps it."""
    found_in_line: list = []
    for word in _COMPOUND.findall(line):
        found = memo.get(word)
        if found is None:
            found = memo[word] = of_word(word)
        found_in_line += found
    return found_in_line


# Index builds count tokens by number: every distinct token gets one id for as long as
# the word memo lives (both are cleared together, between counts: :func:`count_terms`).
_token_ids: dict[str, int] = {}
_token_names: list[str] = []
_id_memo: dict[str, list[int]] = {}
# Documents whose term counts are gathered per numpy pass (bounds the pass's arrays).
BUILD_BLOCK = 16_384


def _word_ids(word: str) -> list[int]:
    ids = []
    for token in _word_tokens(word):
        found = _token_ids.get(token)
        if found is None:
            found = _token_ids[token] = len(_token_names)
            _token_names.append(token)
        ids.append(found)
    return ids


def _term_counts(documents: Sequence[Sequence[tuple[str, int]]], first_doc: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(document, token id, count) of each distinct token of each document, documents
    numbered from ``first_doc``, and their lengths in tokens: what :func:`tokenize`
    makes of them, counted.  A document is given as its pieces, each with how often
    it occurs (:func:`document_pieces`), the text they make joined by line breaks.
    No token spans a line break, so each distinct piece, and each distinct line of
    one, is tokenized once: a document repeats its chunk's text (``own_weight``) and
    its neighbours' documents hold it again as context."""
    memo = _id_memo
    piece_memo: dict[str, np.ndarray] = {}
    line_memo: dict[str, list[int]] = {}
    arrays: list[np.ndarray] = []
    times: list[int] = []
    per_doc: list[int] = []
    for pieces in documents:
        tokens = 0
        for piece, weight in pieces:
            piece_ids = piece_memo.get(piece)
            if piece_ids is None:
                found_ids: list[int] = []
                for line in piece.split("\n"):
                    line_ids = line_memo.get(line)
                    if line_ids is None:
                        line_ids = line_memo[line] = _line_tokens(line, memo, _word_ids)
                    found_ids += line_ids
                piece_ids = piece_memo[piece] = np.asarray(found_ids, dtype=np.int64)
            arrays.append(piece_ids)
            times.append(weight)
            tokens += weight * len(piece_ids)
        per_doc.append(tokens)
    sizes = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    ids = np.concatenate(arrays) if arrays else np.empty(0, np.int64)
    weight = np.repeat(np.asarray(times, dtype=np.int64), sizes)
    pieces_of = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
    doc = np.repeat(np.repeat(np.arange(first_doc, first_doc + len(documents), dtype=np.int64), pieces_of), sizes)
    lengths = np.asarray(per_doc, dtype=np.int64)
    pairs, inverse = np.unique((doc << 32) | ids, return_inverse=True)
    counts = np.bincount(inverse, weights=weight, minlength=len(pairs))
    return (pairs >> 32).astype(np.int32), (pairs & 0xFFFFFFFF).astype(np.int32), counts, lengths


def _lucene_idf_of(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """bm25s's lucene IDF of each term, in its float64 ``math.log`` arithmetic,
    rounded to float32 as it stores it."""
    distinct, which = np.unique(doc_freq, return_inverse=True)
    return np.array([math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) for df in distinct.tolist()],
                    dtype=np.float32)[which]


# Entries (document, term) placed or scored per numpy pass when a merge makes its
# segment: each pass holds about eight 8-byte arrays of this length (by count, 64 MB
# at 1 << 20 against 256 MB at the 1 << 22 it was), on top of the merged segment,
# at a first index's last merges: its peak.
SCORE_BLOCK = 1 << 20


def _read_block(array: np.ndarray, start: int, end: int) -> np.ndarray:
    """``array[start:end]`` as a copy.  A memory-mapped segment's entries are read
    from its file instead of through the mapping: every page a merge touches in a
    mapping stays in the process's resident memory until the segment is dropped, and
    the last merges of a first index of 1M chunks read ~380 MB of them (its peak)."""
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


@dataclass
class TermCounts:
    """Documents counted into their terms (:func:`count_terms`): what a segment is
    built from.  The process that chunked a session counts its documents
    (:func:`session_term_counts`), so the writer neither builds nor tokenizes them and
    no document text crosses processes.  Term ids are a process's own, so each
    carries its vocabulary (:meth:`joined` unites several)."""

    ids: list[str]  # each document's chunk id
    tokens: list[str]  # the vocabulary: term t is tokens[t]; each is some document's
    doc: np.ndarray  # int32: each (document, term) entry's document, an index into ids; ascending
    term: np.ndarray  # int32: each entry's term, an index into tokens
    count: np.ndarray  # int32: how often the term occurs in the document
    lengths: np.ndarray  # int64: each document's length in tokens

    @classmethod
    def joined(cls, parts: Sequence[TermCounts], ids: Sequence[str]) -> TermCounts:
        """The documents of chunk ``ids``, in that order, each taken from the first of
        ``parts`` that holds it (documents no id names are left out)."""
        where = {chunk_id: n for n, chunk_id in enumerate(ids)}
        placed = np.zeros(len(ids), dtype=bool)
        lengths = np.zeros(len(ids), dtype=np.int64)
        vocab: dict[str, int] = {}
        docs, terms, counts = [], [], []
        for part in parts:
            new_doc = np.fromiter((where.get(i, -1) for i in part.ids), dtype=np.int64, count=len(part.ids))
            taken = new_doc >= 0
            taken[taken] = ~placed[new_doc[taken]]
            if not taken.any():
                continue
            placed[new_doc[taken]] = True
            lengths[new_doc[taken]] = part.lengths[taken]
            keep = taken[part.doc]
            term_of = np.fromiter((vocab.setdefault(t, len(vocab)) for t in part.tokens), dtype=np.int64,
                                  count=len(part.tokens))
            docs.append(new_doc[part.doc[keep]])
            terms.append(term_of[part.term[keep]])
            counts.append(part.count[keep])
        if not placed.all():
            raise ValueError(f"{int((~placed).sum())} documents are in no part")
        doc = np.concatenate(docs) if docs else np.empty(0, np.int64)
        term = np.concatenate(terms) if terms else np.empty(0, np.int64)
        count = np.concatenate(counts) if counts else np.empty(0, np.int32)
        tokens = list(vocab)
        used = np.bincount(term, minlength=len(tokens)) > 0
        if not used.all():  # terms only left-out documents held
            term = (np.cumsum(used) - 1)[term]
            tokens = [t for t, u in zip(tokens, used.tolist(), strict=True) if u]
        order = np.argsort(doc, kind="stable")  # a term's documents in order, as :func:`count_terms` gives them
        return cls(list(ids), tokens, doc[order].astype(np.int32), term[order].astype(np.int32), count[order],
                   lengths)


def count_terms(ids: Sequence[str], texts: Sequence[str]) -> TermCounts:
    """The term counts of documents ``texts`` (of chunk ``ids``): what
    :func:`tokenize` makes of them, counted with numpy instead of per-token Python."""
    # Each distinct line a piece: a document repeats its chunk's lines (``own_weight``).
    return count_pieces(ids, [Counter(text.split("\n")).items() for text in texts])


def count_pieces(ids: Sequence[str], documents: Sequence[Sequence[tuple[str, int]]]) -> TermCounts:
    """:func:`count_terms` of documents given as their pieces (:func:`document_pieces`),
    never joined into one text."""
    if _stemmer is None:
        tokenize([])  # loads the stemmer and stop words
    if len(_id_memo) >= _MEMO_LIMIT or len(_token_names) >= 4 * _MEMO_LIMIT:
        _id_memo.clear()
        _token_ids.clear()
        _token_names.clear()
    blocks = [_term_counts(documents[start:start + BUILD_BLOCK], start)
              for start in range(0, len(documents), BUILD_BLOCK)]
    doc = np.concatenate([b[0] for b in blocks]) if blocks else np.empty(0, np.int32)
    token = np.concatenate([b[1] for b in blocks]) if blocks else np.empty(0, np.int32)
    count = np.concatenate([b[2] for b in blocks]).astype(np.int32) if blocks else np.empty(0, np.int32)
    lengths = np.concatenate([b[3] for b in blocks]) if blocks else np.empty(0, np.int64)
    del blocks
    names, term = np.unique(token, return_inverse=True)
    return TermCounts(list(ids), [_token_names[i] for i in names.tolist()], doc, term.astype(np.int32), count,
                      lengths)


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


def _bm25s_stopwords() -> frozenset[str]:
    """bm25s's English stop words (``en_plus``), read from its ``stopwords`` module
    alone: importing the package imports scipy (0.3-0.6 s), which a query needs
    only when bm25s builds a segment."""
    import importlib.util
    import sys

    if "bm25s.stopwords" in sys.modules:
        return frozenset(sys.modules["bm25s.stopwords"].STOPWORDS_EN_PLUS)
    package = importlib.util.find_spec("bm25s")  # finds the package without running its __init__
    assert package is not None and package.submodule_search_locations, "bm25s is a dependency"
    path = Path(package.submodule_search_locations[0]) / "stopwords.py"
    spec = importlib.util.spec_from_file_location("_funes_bm25s_stopwords", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.STOPWORDS_EN_PLUS)


def _head(text: str, limit: int) -> str:
    """At most ``limit`` characters from the start of ``text``, cut at a space when
    one is in the second half."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut != -1 else limit]


_JSON_ESCAPE = re.compile(r'\\(["\\/nrt])')
_UNESCAPED = {"n": "\n", "r": "\n", "t": "\t"}


@functools.lru_cache(maxsize=1024)
def call_text(text: str) -> str:
    """What BM25 reads of a tool call stored as JSON: its argument values, one a
    line, strings unescaped (a command, a path, a file's new content), not the
    JSON around them, whose escapes would glue ``\\n`` onto the next word.  A
    piece of a split call is not valid JSON: its escapes are undone alone.
    Memoised: a call's document reads it, and so does each of its results' (a
    piece of a call is at most a chunk's length, so the memo stays small)."""
    try:
        arguments = json.loads(text)
    except ValueError:
        return _JSON_ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), text)
    if not isinstance(arguments, dict):
        return text
    return "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in arguments.values())


def document_pieces(text: str, context: Sequence[str] = (), *, block_type: str = "text",
                    tool_name: str | None = None, call: str | None = None) -> list[tuple[str, int]]:
    """The text BM25 indexes for a chunk, as its pieces in order, each with how often
    it occurs there (:func:`document` joins them by line breaks).

    * text and thinking, and tool calls: the last ``context_chunks`` of
      ``context`` (the conversation before it, each cut to ``context_chars``),
      then the chunk's own text ``own_weight`` times, so a term of the chunk itself
      weighs more than one of its neighbours'.  A LoCoMo reply ("here it is!")
      is found by the question before it; an assistant's "stale build artefacts,
      let me recompile" by the reasoning that led to it.
    * a tool call reads as its tool's name and its argument values
      (:func:`call_text`), not as JSON;
    * a tool result: the head of the ``call`` that produced it (``call_chars``),
      then its own text, with the tool's name, ``own_weight`` times, and no
      conversation: "what did the test run print" names the command, and the
      prose around a long output would only blur it."""
    if block_type == "tool_result":
        parts = [(_head(call_text(call), DOCUMENT["call_chars"]), 1)] if call else []
    else:
        parts = [(_head(c, DOCUMENT["context_chars"]), 1) for c in context[-DOCUMENT["context_chunks"]:] if c]
    own = call_text(text) if block_type == "tool_use" else text
    if tool_name and block_type in ("tool_use", "tool_result"):
        own = f"{tool_name} {own}"
    return [*parts, (own, DOCUMENT["own_weight"])]


def document(text: str, context: Sequence[str] = (), *, block_type: str = "text", tool_name: str | None = None,
             call: str | None = None) -> str:
    """The text BM25 indexes for a chunk (:func:`document_pieces`)."""
    return "\n".join(piece for piece, times in document_pieces(text, context, block_type=block_type,
                                                               tool_name=tool_name, call=call)
                     for _ in range(times))


def documents_from_rows(rows: Sequence[dict], wanted: Iterable[str] | None = None) -> dict[str, str]:
    """``{chunk id: document}`` for the ``wanted`` ids (all when None), from rows
    with :data:`DOCUMENT_COLUMNS` that include, for each wanted chunk, the chunks of
    its session up to ``context_turns`` turns before it (extra rows are harmless).

    Rows are ordered by (seq, block_idx, split_idx) in their session.  A chunk's
    context is the chunks of ``context_blocks`` types just before it within
    ``context_turns`` turns; a tool result's call is the nearest earlier tool call
    (its first piece) of the same tool within that reach."""
    return _documents_of_rows(rows, wanted, document)


def _documents_of_rows(rows: Sequence[dict], wanted: Iterable[str] | None, make: Callable[..., Any]) -> dict[str, Any]:
    """:func:`documents_from_rows`, each document made by ``make`` (:func:`document`
    or :func:`document_pieces`) from the chunk's text, context and call."""
    want = None if wanted is None else set(wanted)
    by_session: dict[str, list[dict]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row)
    out: dict[str, Any] = {}
    depth, reach = DOCUMENT["context_chunks"], DOCUMENT["context_turns"]
    conversation = set(DOCUMENT["context_blocks"])
    for session_rows in by_session.values():
        session_rows.sort(key=lambda r: (int(r["seq"] or 0), int(r["block_idx"] or 0), int(r["split_idx"] or 0),
                                         r["id"]))
        seen: set[str] = set()
        context: list[tuple[int, str]] = []  # (seq, text) of the conversation so far, last `depth`
        calls: dict[str | None, tuple[int, str]] = {}  # tool name -> (seq, text) of its last call
        for row in session_rows:  # a row fetched twice (overlapping queries) counts once
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            seq = int(row["seq"] or 0)
            block_type = row.get("block_type") or "text"
            tool = row.get("tool_name")
            text = row["text"] or ""
            if want is None or row["id"] in want:
                call = calls.get(tool)
                out[row["id"]] = make(
                    text, [t for s, t in context if seq - s <= reach], block_type=block_type, tool_name=tool,
                    call=call[1] if call and seq - call[0] <= reach else None)
            if block_type in conversation:
                context = [*context, (seq, text)][-depth:] if depth > 0 else []
            elif block_type == "tool_use" and not row["split_idx"]:
                calls[tool] = (seq, text)
    return out


def document_rows(chunks: Iterable[object]) -> list[dict]:
    """Chunks (:class:`funes.chunking.Chunk`) as the rows :func:`documents_from_rows` reads."""
    return [{column: getattr(chunk, column) for column in DOCUMENT_COLUMNS} for chunk in chunks]


def session_term_counts(chunks: Sequence[object]) -> TermCounts:
    """The term counts of the documents of ``chunks``, a session's, as a write of
    them builds them when the table holds nothing else of the session: made by
    the process that chunked them (see :class:`TermCounts`)."""
    documents = _documents_of_rows(document_rows(chunks), None, document_pieces)
    return count_pieces(list(documents), list(documents.values()))


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


class Vocabulary(Mapping[str, int]):
    """A saved segment's terms and their columns: the terms' UTF-8 bytes in sorted
    order, concatenated (``terms.bin``), where each starts (``term_starts.npy``) and
    each one's column (``term_columns.npy``).  A reader looks up a query's few terms by
    bisection over the bytes, where a dict of every term had to be parsed first: on
    every cold recall, for every segment: opening one segment of 1M terms took 0.80-0.85 s
    with the dict, 17-21 ms now (BENCHMARKS.md, "BM25 vocabularies saved sorted").
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
        are held, never the scores (at a first index of 1M chunks the last merge
        made 43M entries: 173 MB an array)."""
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
        saved, as a reader holds them: a writer kept every segment it built or merged
        in its own memory (at 1M chunks over half a GB, for as long as the backlog
        embeds).  Its ids and vocabulary stay as they are: the same, and in use."""
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


# The segments each folder's manifest named when last opened in this process, with
# their files' sizes and times.  A committed segment's files never change (a new one
# gets a new name), so a long-lived reader (the MCP server) that follows the table
# through version bumps (vectors filled in) reuses what it loaded instead of reading
# it again; files found changed or gone (damage) are loaded, and checked, anew.
SEGMENT_ARRAY_FILES = ("ids.npy", "data.npy", "indices.npy", "indptr.npy", "tf.npy", "lengths.npy")
_OPENED: dict[Path, dict[str, tuple[tuple[tuple[int, int], ...], Segment]]] = {}


def _files_signature(folder: Path) -> tuple[tuple[int, int], ...]:
    files = (*SEGMENT_ARRAY_FILES, *Vocabulary.files_in(folder))
    return tuple((stat.st_size, stat.st_mtime_ns) for stat in (os.stat(folder / f) for f in files))


def _opened_segment(folder: Path, name: str) -> tuple[tuple[tuple[int, int], ...], Segment]:
    """The segment ``name`` with the signature of the files it was read from, both taken
    now: a writer's merge may remove the folder right after (a reader that stats it
    again later meets FileNotFoundError, as the MCP server did during a 1M first index)."""
    signature = _files_signature(folder / name)
    known = _OPENED.get(folder, {}).get(name)
    if known is not None and known[0] == signature:
        return known
    return signature, Segment.load(folder / name)


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


def _stored_mask(segments: Sequence[Segment], still_stored: Callable[[Sequence[str]], Container[str]]) -> np.ndarray:
    """Which of ``segments``' ids, in turn, the table still holds.  Its own function:
    the ids as Python strings are gone before the merge allocates its arrays (at a
    first index of 1M chunks the indexer's peak in its last merge fell from 1.30 to
    1.18-1.21 GiB with this)."""
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

