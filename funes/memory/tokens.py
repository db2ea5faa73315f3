"""Tokens and term counts: what BM25 makes of a text.

:func:`tokenize` splits a text into word tokens (:data:`TOKENIZER`): identifiers
whole and in parts, lower-cased, stop words dropped, stemmed.  An index build counts
its documents' tokens with numpy instead (:func:`count_terms`, :class:`TermCounts`),
each distinct line tokenized once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Tokenisation (part of the BM25 manifest: a memory indexed with other settings is rebuilt).
# ``identifiers``: a run of word characters joined by ``.`` ``/`` ``:`` ``-`` (a
# path, ``ash.codegen``, ``spotter-gqc``) is kept whole and also split at those
# characters, at ``_`` and at case and digit changes, so ``resolveWorkspaceRoot``
# is found by "workspace root" and by itself.
TOKENIZER = {"stopwords": "en_plus", "stemmer": "english", "pattern": r"\w+(?:[./:\-]\w+)*", "lower": True,
             "identifiers": "whole+parts", "min_length": 2}

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


def _bm25s_stopwords() -> frozenset[str]:
    """bm25s's English stop words (``en_plus``), read from its ``stopwords`` module
    alone: importing the package imports scipy, which a query never needs."""
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
