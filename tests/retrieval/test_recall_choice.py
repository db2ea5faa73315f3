"""The default ranking is the one measured on the dev sets.

``benchmarks/eval_recall.py --ablation --write`` records the settings it measured
as the default, with their figures, in ``benchmarks/recall_choice.json`` (and the
tables in BENCHMARKS.md).  A change to any of them without measuring it again
fails here: rerun the benchmark, which rewrites both."""

import dataclasses
import json

from funes.memory import lexical
from funes.retrieval.fusion import DEFAULT as FUSION
from funes.retrieval.passage import PASSAGE_CHARS
from funes.retrieval.ranking import DEFAULT as RANKING
from paths import ROOT

CHOICE = ROOT / "benchmarks" / "recall_choice.json"


def _recorded():
    return json.loads(CHOICE.read_text(encoding="utf-8"))


def test_the_default_fusion_and_ranking_are_the_measured_ones():
    recorded = _recorded()
    assert dataclasses.asdict(FUSION) == recorded["fusion"]
    assert dataclasses.asdict(RANKING) == recorded["ranking"]


def test_the_bm25_representation_is_the_measured_one():
    recorded = _recorded()
    assert lexical.TOKENIZER == recorded["tokenizer"]
    assert lexical.BM25_PARAMS == recorded["bm25"]
    assert lexical.DOCUMENT == recorded["document"]


def test_what_a_hit_shows_is_the_measured_passage():
    assert _recorded()["passage"] == {"chars": PASSAGE_CHARS, "tool_calls": "arguments"}


def test_the_default_rerank_stage_is_the_measured_one():
    """``benchmarks/eval_rerank.py --write`` records the stage's weight most
    leave-one-session-out folds chose over all three dev sets (with the answer-type
    weight and the fusion's dense weight, chosen with it, by R@10 + MRR@10 + gold
    within the first 1,000 tokens), and what it scored left out: never below the
    ranking without the stage by more than one standard error on any of the three,
    the bar every left-out estimate here meets."""
    from funes.late_interaction import MAXSIM_TOKENS
    from funes.reranking import DEFAULT_RERANKER, load_reranker

    recorded = _recorded()["rerank"]
    stage, reason = load_reranker(DEFAULT_RERANKER)
    assert reason is None
    assert (recorded["stage"], recorded["blend_weight"], recorded["tokens"]) == (
        DEFAULT_RERANKER, stage.blend_weight, MAXSIM_TOKENS)
    assert set(recorded["measured"]) == {"coding", "coding2", "locomo"}
    from funes.retrieval.ranking import DEFAULT as RANKING

    assert recorded["answer_weights"][0] == RANKING.answer_weight
    dense = recorded["dense_weight"]
    assert FUSION.dense_weight == recorded["dense_weights"][0] == dense["weight"] == float(
        max(dense["folds"], key=dense["folds"].get))
    for name, figures in recorded["measured"].items():
        for metric in ("R@10", "MRR@10", "1k"):  # 1k: gold within the output's first 1,000 tokens
            assert figures["leave_one_out"][metric] >= figures["fused"][metric] - STANDARD_ERROR[name]


def test_the_answer_type_weight_is_the_one_the_folds_chose():
    """``eval_rerank.py --answer-weights … --write`` records the weight of a candidate
    holding the kind of answer its question asks for that most leave-one-session-out
    folds chose over all three dev sets, with the rerank stage's weight chosen with
    it, and what the two scored left out against no such weight in sample: never
    below it by more than one standard error on any of R@10, MRR@10 and gold within
    1k, the bar of every left-out estimate here (one question at the top of coding
    dev2 moves its MRR@10 by 0.017)."""
    recorded = _recorded()["answer_types"]
    folds = recorded["folds"]
    assert RANKING.answer_weight == recorded["weight"] == float(max(folds, key=folds.get))
    assert recorded["stage_weight"] == _recorded()["rerank"]["blend_weight"]
    assert set(recorded["measured"]) == {"coding", "coding2", "locomo"}
    for name, figures in recorded["measured"].items():
        for metric in ("R@10", "MRR@10", "1k"):
            assert figures["leave_one_out"][metric] >= figures["without"][metric] - STANDARD_ERROR[name]


def test_the_record_says_what_the_default_scored_on_every_dev_set():
    measured = _recorded()["measured"]
    assert set(measured) == {"coding", "coding2", "locomo"}
    for figures in measured.values():
        for estimate in ("in_process", "leave_one_out"):
            assert 0.0 < figures[estimate]["R@10"] <= 1.0 and 0.0 < figures[estimate]["MRR@10"] <= 1.0


# One standard error of R@10 on each dev set, about 0.45 / sqrt(its questions).
STANDARD_ERROR = {"coding": 0.045, "coding2": 0.06, "locomo": 0.015}


def test_the_tiers_embedded_by_default_are_the_measured_ones():
    """``eval_recall.py --tiers --write`` records what each tier's vectors scored; the
    default leaves out only tiers whose vectors did not raise recall by more than noise
    on any set: in sample (the shipped weights) a third of the set's standard error,
    and never less than 0.015 (coding dev2's 58 questions move R@10 by 0.017 a
    question); left out, where each fold picks the ranking weights again, one
    standard error, as for int8 below."""
    from funes.embedding import DENSE_TIERS, EVERY_TIER

    recorded = _recorded()["dense_tiers"]
    assert tuple(recorded["tiers"]) == DENSE_TIERS
    assert set(recorded["measured"]) == {"coding", "coding2", "locomo"}
    for name, runs in recorded["measured"].items():
        every, policy = runs["every tier (all rows have vectors)"], runs[POLICY_RUN[DENSE_TIERS]]
        bars = {"in_process": max(0.015, STANDARD_ERROR[name] / 3), "leave_one_out": STANDARD_ERROR[name]}
        for estimate in set(policy) & set(bars):
            assert policy[estimate]["R@10"] >= every[estimate]["R@10"] - bars[estimate]
            assert policy[estimate]["MRR@10"] >= every[estimate]["MRR@10"] - bars[estimate]
    assert set(DENSE_TIERS) <= set(EVERY_TIER)


def test_the_tiers_embedded_at_int8_are_the_measured_ones():
    """``eval_recall.py --tiers --precisions int8 --write`` records what a memory created
    now scores with the tiers it embeds at int8; in sample it is held to 0.015 on every
    set, left out (each fold picks the ranking weights again, so a question's rank
    moves more) to one standard error of coding R@10, about 0.045."""
    from funes.embedding import DENSE_TIERS, INT8_TIERS

    recorded = _recorded()["dense_tiers"]
    assert tuple(recorded["int8_tiers"]) == INT8_TIERS
    assert set(INT8_TIERS) <= set(DENSE_TIERS)
    for runs in recorded["measured"].values():
        fp32, int8 = runs[POLICY_RUN[DENSE_TIERS]], runs[INT8_RUN]
        for estimate, bar in (("in_process", 0.015), ("leave_one_out", 0.045)):
            assert int8[estimate]["R@10"] >= fp32[estimate]["R@10"] - bar
            assert int8[estimate]["MRR@10"] >= fp32[estimate]["MRR@10"] - bar


INT8_RUN = "int8 for tiers 1 + 3, fp32 queries (new memories)"
# The ablation row (benchmarks/recall_tiers.py TIER_SETTINGS) of each policy.
POLICY_RUN = {(1, 2, 3): "every tier (all rows have vectors)", (1,): "tier 1 only (text, thinking)",
              (1, 2): "tiers 1 + 2 (tool results left out)", (1, 3): "tiers 1 + 3 (tool calls left out)"}
