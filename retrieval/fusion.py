"""Combining the lexical and dense rankings.

Equal-weight reciprocal rank fusion (k=60), the Rust funes's choice, scores
*below* BM25 alone on the LoCoMo dev split (0.555 vs 0.570 R@10), because
MiniLM alone is much weaker than BM25 there and RRF gives its ranks the same
say.  The methods here were compared on the dev split (benchmarks/eval_recall.py,
results in BENCHMARKS.md); ``DEFAULT`` is the one chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Ranking = Sequence[tuple[str, float]]  # (chunk id, score), best first


@dataclass(frozen=True)
class Fusion:
    """How to fuse: ``method`` is ``rrf`` (weighted reciprocal rank) or ``convex``
    (weighted sum of scores normalised per query: BM25 by the query's best BM25
    score, cosine similarity as is)."""

    method: str = "rrf"
    lexical_weight: float = 1.0
    dense_weight: float = 1.0
    rrf_k: int = 60

    def fuse(self, lexical: Ranking, dense: Ranking) -> list[tuple[str, float]]:
        if self.method == "rrf":
            scores = _rrf(lexical, dense, self.lexical_weight, self.dense_weight, self.rrf_k)
        elif self.method == "convex":
            scores = _convex(lexical, dense, self.lexical_weight, self.dense_weight)
        else:
            raise ValueError(f"unknown fusion method {self.method!r}")
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _rrf(lexical: Ranking, dense: Ranking, w_lex: float, w_dense: float, k: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for weight, ranking in ((w_lex, lexical), (w_dense, dense)):
        if weight <= 0:
            continue
        for rank, (chunk, _score) in enumerate(ranking):
            scores[chunk] = scores.get(chunk, 0.0) + weight / (k + rank + 1)
    return scores


def _convex(lexical: Ranking, dense: Ranking, w_lex: float, w_dense: float) -> dict[str, float]:
    scores: dict[str, float] = {}
    best = max((score for _, score in lexical), default=0.0)
    if best > 0 and w_lex > 0:
        for chunk, score in lexical:
            scores[chunk] = scores.get(chunk, 0.0) + w_lex * score / best
    if w_dense > 0:
        for chunk, similarity in dense:
            scores[chunk] = scores.get(chunk, 0.0) + w_dense * similarity
    return scores


DEFAULT = Fusion()
