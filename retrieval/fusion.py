"""Combining the lexical (BM25) and dense (MiniLM cosine) rankings.

Equal-weight reciprocal rank fusion (k=60), the Rust funes's choice, scores
*below* BM25 alone on the LoCoMo dev split (R@10 0.555 vs 0.570), because
MiniLM alone is much weaker than BM25 there and RRF gives its ranks the same
say.  A convex combination of the two *scores* keeps how much better the best
BM25 match is than the tenth, which ranks discard:

    fused = 0.5 · bm25 / best bm25 of the query  +  0.5 · cosine

BM25's share spans 0 to 0.5 across a query's candidates, the cosines' far less
(a coding dev question's 30 candidates, dev-046, lie between 0.39 and 0.61), so
keyword matches still lead.

A candidate BM25 found that the vector search did not return, but that has a
vector, gets its own cosine (``cosines``: the search's pool is cut at its top
100, so the candidate's cosine is known, only not among the best); any other
candidate one retriever did not return gets that retriever's lowest returned
score (what it is known not to exceed), or 0 from BM25 when BM25 returned
fewer than it was asked for (then every chunk it left out matched no query
term).  The floor is the most a left-out candidate could score: at that bound
a keyword match whose meaning lies elsewhere passes a passage both retrievers
agree on.  Its own cosine raised MRR@10 in process on every dev set (BENCHMARKS.md
"Decisions", "A candidate's own cosine").

The methods were compared on the LoCoMo dev split by ``benchmarks/eval_recall.py``
(results in BENCHMARKS.md): convex fusion beat weighted RRF at every weight tried.
The dense weight is chosen with what follows it as recall runs it (the ranking
stage, retrieval/ranking.py, and the rerank stage), leave one session out over
every dev set (``benchmarks/eval_rerank.py --dense-weights``; BENCHMARKS.md
"Decisions", "Ranking and fusion").

The floor has one exception, in ``convex``: a candidate still *owed* a vector,
so without a cosine of its own (a memory's backlog: the
row's tier is one the memory embeds, its vector not computed yet): the vector
search could not return it, and the floor would sink it below rows of the same
kind that happen to be embedded already.  It gets the cosine the dense list holds
at its BM25 rank instead (as if it stood as high by meaning as by keywords).  On
coding dev2, a memory with half its text and all its tool output awaiting
vectors, the state of a first index's first minutes, scored R@10 / MRR@10 0.494 /
0.304 with the floor, below BM25 alone (0.537 / 0.353), and 0.572 / 0.375 so
(in process, without the rerank stage); see BENCHMARKS.md "Recall while vectors
are pending".  Rows a memory's policy never
embeds (tool calls, by default) keep the floor: the weights were chosen with it.

``--fusion`` (or ``FUNES_FUSION``) picks one of :data:`METHODS`: ``convex``
(the default), ``rrf`` (equal-weight RRF, k=60), ``lexical`` (BM25 only: no
query embedding) or ``dense`` (vectors only).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from funes.errors import UsageError

Ranking = Sequence[tuple[str, float]]  # (chunk id, score), best first

METHODS = ("convex", "rrf", "lexical", "dense")
ENV = "FUNES_FUSION"


@dataclass(frozen=True)
class Fusion:
    """How to fuse: ``method`` is one of :data:`METHODS`; the weights apply to
    ``convex`` and ``rrf``; ``rrf_k`` to ``rrf``."""

    method: str = "convex"
    lexical_weight: float = 0.5
    dense_weight: float = 0.5
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UsageError(f"unknown fusion {self.method!r}: choose one of {', '.join(METHODS)}")

    @classmethod
    def named(cls, name: str | None) -> Fusion:
        """The preset called ``name`` (None or empty: ``$FUNES_FUSION``, else the default)."""
        name = (name or os.environ.get(ENV) or "").strip().lower()
        if not name:
            return DEFAULT
        if name == "rrf":
            return cls("rrf", 1.0, 1.0)
        if name in METHODS:
            return cls(name) if name != "convex" else DEFAULT
        raise UsageError(f"unknown fusion {name!r}: choose one of {', '.join(METHODS)}")

    @property
    def uses_lexical(self) -> bool:
        return self.method != "dense"

    @property
    def uses_dense(self) -> bool:
        return self.method != "lexical"

    @property
    def weighs_pending(self) -> bool:
        """Whether :meth:`fuse` scores candidates still owed a vector differently."""
        return self.method == "convex"

    def fuse(self, lexical: Ranking, dense: Ranking, pool: int | None = None,
             pending: Collection[str] = (), cosines: Mapping[str, float] | None = None,
             ) -> list[tuple[str, float]]:
        """``(chunk id, fused score)`` best first, ties by chunk id.

        ``pool``: how many each retriever was asked for; a BM25 list shorter than
        that holds every chunk with a positive score (None: assume it was cut).
        ``pending``: candidates still owed a vector (``convex`` scores them by the
        dense list's cosine at their BM25 rank, see the module docstring).
        ``cosines``: the query's cosine to BM25 candidates that have a vector
        (``convex`` scores one the dense list left out by it, not the floor)."""
        if self.method == "lexical":
            scores = dict(lexical)
        elif self.method == "dense":
            scores = dict(dense)
        elif self.method == "rrf":
            scores = _rrf(lexical, dense, self.lexical_weight, self.dense_weight, self.rrf_k)
        else:
            complete = pool is not None and len(lexical) < pool
            scores = _convex(lexical, dense, self.lexical_weight, self.dense_weight, complete, pending, cosines or {})
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _rrf(lexical: Ranking, dense: Ranking, w_lex: float, w_dense: float, k: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for weight, ranking in ((w_lex, lexical), (w_dense, dense)):
        if weight <= 0:
            continue
        for rank, (chunk, _score) in enumerate(ranking):
            scores[chunk] = scores.get(chunk, 0.0) + weight / (k + rank + 1)
    return scores


def _convex(lexical: Ranking, dense: Ranking, w_lex: float, w_dense: float, lexical_complete: bool,
            pending: Collection[str], cosines: Mapping[str, float]) -> dict[str, float]:
    best = max((score for _, score in lexical), default=0.0)
    lex = {chunk: score / best for chunk, score in lexical} if best > 0 else {}
    den = dict(dense)
    lex_missing = 0.0 if lexical_complete or not lex else min(lex.values())
    den_missing = min(den.values()) if den else 0.0
    if den:
        listed = [score for _, score in dense]
        for rank, (chunk, _score) in enumerate(lexical):
            if chunk in den:
                continue
            if chunk in cosines:
                den[chunk] = cosines[chunk]
            elif chunk in pending:
                den[chunk] = listed[min(rank, len(listed) - 1)]
    scores: dict[str, float] = {}
    for chunk in (*lex, *den):
        if chunk not in scores:
            scores[chunk] = (w_lex * lex.get(chunk, lex_missing) if lex else 0.0) + (
                w_dense * den.get(chunk, den_missing) if den else 0.0)
    return scores


DEFAULT = Fusion()
