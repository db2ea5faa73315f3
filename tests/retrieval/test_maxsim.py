"""Late interaction: the shipped MiniLM's word pieces (the default stage) or its
contextual token vectors (FUNES_RERANKER=maxsim) rerank recall's candidates, with
no model of their own."""

import shutil

import numpy as np
import pytest

from funes.late_interaction import MAXSIM, WORD_PIECE_MAXSIM, MaxSimReranker, WordPieceMaxSim
from funes.reranking import load_reranker


@pytest.mark.parametrize(("name", "kind"), [(WORD_PIECE_MAXSIM, WordPieceMaxSim), (MAXSIM, MaxSimReranker)])
def test_the_passage_holding_the_querys_rare_identifier_rises(memory_home, monkeypatch, name, kind):
    monkeypatch.setenv("FUNES_RERANKER", name)
    stage, reason = load_reranker()
    assert reason is None and isinstance(stage, kind) and stage.model_id == name
    passages = ["We talked about retries in the HTTP client and how long to back off.",
                "ingest_batch raised QuotaLedgerOverflow when the ledger passed 4096 rows.",
                ""]
    scores = stage.score("where did QuotaLedgerOverflow come from?", passages)
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert scores[1] > scores[0] > scores[2] == 0.0
    assert stage.score("anything", []).shape == (0,)


def test_word_pieces_are_the_default_stage(monkeypatch):
    monkeypatch.delenv("FUNES_RERANKER", raising=False)
    stage, reason = load_reranker()
    assert reason is None and stage.model_id == WORD_PIECE_MAXSIM


@pytest.mark.parametrize(("name", "weight"), [(WORD_PIECE_MAXSIM, WordPieceMaxSim.blend_weight),
                                              (MAXSIM, MaxSimReranker.blend_weight)])
def test_recall_orders_its_hits_by_the_blend_of_stage_and_fused_score(memory_home, monkeypatch, name, weight):
    from funes.retrieval.access import open_memory
    from funes.retrieval.rerank import shared_reranker
    from funes.retrieval.search import Recaller

    monkeypatch.setenv("FUNES_RERANKER", name)
    shared_reranker.cache_clear()
    try:
        # k as large as the candidate pool: every candidate the blend scaled is shown.
        result = Recaller.open(open_memory(None)).recall("why did the test depend on dictionary order", k=30,
                                                         candidates=30)
    finally:
        shared_reranker.cache_clear()
    assert result.reranker == name and result.reranker_note is None
    stage = [hit.scores["rerank"] for hit in result.hits]
    fused = [hit.scores["fused"] for hit in result.hits]
    assert None not in stage and len(stage) > 2

    def scaled(values):
        return [(v - min(values)) / (max(values) - min(values)) for v in values]

    # The stage's weight of the say, the rest the fused ranking's, each scaled over the candidates.
    expected = [weight * s + (1 - weight) * f for s, f in zip(scaled(stage), scaled(fused))]
    assert [hit.scores["final"] for hit in result.hits] == pytest.approx(expected, abs=1e-3)
    assert expected == sorted(expected, reverse=True)
    assert result.hits[0].text == "The test depends on dict ordering; sort the keys."


def test_damaged_weights_leave_the_fused_ranking_and_say_why(memory_home, monkeypatch, tmp_path):
    """A truncated weights file: no stage, a one-line reason, and recall still answers."""
    import funes.embedding
    from funes.retrieval.access import open_memory
    from funes.retrieval.fusion import Fusion
    from funes.retrieval.rerank import shared_reranker
    from funes.retrieval.search import Recaller

    shipped = funes.embedding.shipped_model_dir()
    damaged = tmp_path / "model"
    damaged.mkdir()
    shutil.copy(shipped / "tokenizer.json", damaged / "tokenizer.json")
    (damaged / "model.safetensors").write_bytes((shipped / "model.safetensors").read_bytes()[:4096])
    monkeypatch.setattr(funes.embedding, "shipped_model_dir", lambda: damaged)
    monkeypatch.delenv("FUNES_RERANKER", raising=False)
    shared_reranker.cache_clear()
    try:
        result = Recaller.open(open_memory(None), fusion=Fusion.named("lexical")).recall("dictionary order")
    finally:
        shared_reranker.cache_clear()
    assert result.hits and result.reranker is None
    assert "model.safetensors" in result.reranker_note and "\n" not in result.reranker_note


def test_the_stage_reads_a_tool_result_after_the_head_of_its_call(memory_home):
    """As BM25 reads it (funes/memory/documents.py): "what did the test run print"
    names the command, which only the call holds."""
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    class Reading:
        model_id, blend_weight, passages = "reading", 0.4, []

        def score(self, query, passages):
            self.passages += passages
            return np.zeros(len(passages), dtype=np.float32)

    recaller = Recaller.open(open_memory(None))
    recaller.reranker = stage = Reading()
    result = recaller.recall("what did the test run print", k=30, candidates=30)
    memory = recaller.memory
    texts = memory.texts([hit.id for hit in result.hits])
    documents = memory.documents([hit.id for hit in result.hits])
    results = [hit for hit in result.hits if hit.block_type == "tool_result"]
    assert results and len(stage.passages) == len(result.hits)
    expected = []
    for hit in result.hits:
        own = texts[hit.id]
        if hit.block_type == "tool_result" and not documents[hit.id].startswith(f"{hit.tool_name} {own}"):
            head = documents[hit.id].split(f"\n{hit.tool_name} {own[:40]}")[0]
            expected.append(f"{head}\n{own}")
        else:
            expected.append(own)
    assert sorted(stage.passages) == sorted(expected)
    assert any(p != texts[h.id] for p, h in zip(expected, result.hits)), "no tool result with its call in reach"
