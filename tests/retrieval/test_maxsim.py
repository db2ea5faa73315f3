"""Late interaction (FUNES_RERANKER=maxsim): the shipped MiniLM's token vectors
rerank recall's candidates, with no model of its own."""

import numpy as np
import pytest

from funes.reranking import MAXSIM, MaxSimReranker, load_reranker


def test_the_passage_holding_the_querys_rare_identifier_rises(memory_home, monkeypatch):
    monkeypatch.setenv("FUNES_RERANKER", "maxsim")
    stage, reason = load_reranker()
    assert reason is None and isinstance(stage, MaxSimReranker) and stage.model_id == MAXSIM
    passages = ["We talked about retries in the HTTP client and how long to back off.",
                "ingest_batch raised QuotaLedgerOverflow when the ledger passed 4096 rows.",
                ""]
    scores = stage.score("where did QuotaLedgerOverflow come from?", passages)
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert scores[1] > scores[0] > scores[2] == 0.0
    assert stage.score("anything", []).shape == (0,)


def test_recall_orders_its_hits_by_the_blend_of_stage_and_fused_score(memory_home, monkeypatch):
    from funes.retrieval.access import open_memory
    from funes.retrieval.rerank import shared_reranker
    from funes.retrieval.search import Recaller

    monkeypatch.setenv("FUNES_RERANKER", "maxsim")
    shared_reranker.cache_clear()
    try:
        # k as large as the candidate pool: every candidate the blend scaled is shown.
        result = Recaller.open(open_memory(None)).recall("why did the test depend on dictionary order", k=30,
                                                         candidates=30)
    finally:
        shared_reranker.cache_clear()
    assert result.reranker == MAXSIM and result.reranker_note is None
    stage = [hit.scores["rerank"] for hit in result.hits]
    fused = [hit.scores["fused"] for hit in result.hits]
    assert None not in stage and len(stage) > 2

    def scaled(values):
        return [(v - min(values)) / (max(values) - min(values)) for v in values]

    # 0.7 of the stage's say, 0.3 of the fused ranking's, each scaled over the candidates.
    expected = [0.7 * s + 0.3 * f for s, f in zip(scaled(stage), scaled(fused))]
    assert [hit.scores["final"] for hit in result.hits] == pytest.approx(expected, abs=1e-3)
    assert expected == sorted(expected, reverse=True)
    assert result.hits[0].text == "The test depends on dict ordering; sort the keys."
