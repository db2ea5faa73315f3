"""The default ranking is the one measured on the dev sets.

``benchmarks/eval_recall.py --ablation --write`` records the settings it measured
as the default, with their figures, in ``benchmarks/recall_choice.json`` (and the
tables in BENCHMARKS.md).  A change to any of them without measuring it again
fails here: rerun the benchmark, which rewrites both."""

import dataclasses
import json
from pathlib import Path

from funes.memory import lexical
from funes.retrieval.fusion import DEFAULT as FUSION
from funes.retrieval.passage import PASSAGE_CHARS
from funes.retrieval.ranking import DEFAULT as RANKING

CHOICE = Path(__file__).resolve().parent.parent / "benchmarks" / "recall_choice.json"


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


def test_the_record_says_what_the_default_scored_on_both_dev_sets():
    measured = _recorded()["measured"]
    assert set(measured) == {"coding", "locomo"}
    for figures in measured.values():
        for estimate in ("in_process", "leave_one_out"):
            assert 0.0 < figures[estimate]["R@10"] <= 1.0 and 0.0 < figures[estimate]["MRR@10"] <= 1.0
