"""Fusion of the BM25 and dense rankings: convex (the default), weighted RRF, one side only."""

import pytest

from funes.errors import UsageError
from funes.retrieval.fusion import DEFAULT, ENV, METHODS, Fusion


def test_the_default_is_bm25_led_convex_fusion():
    assert DEFAULT == Fusion("convex", 0.5, 0.5)
    assert DEFAULT.uses_lexical and DEFAULT.uses_dense


def test_convex_normalises_bm25_by_the_best_score_and_keeps_cosine_as_is():
    lexical = [("a", 10.0), ("b", 5.0)]
    dense = [("b", 0.8), ("a", 0.2)]
    fused = dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense))
    assert fused["a"] == pytest.approx(0.6 * 1.0 + 0.4 * 0.2)
    assert fused["b"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.8)


def test_convex_keeps_score_gaps_that_rank_fusion_discards():
    # "a" is a far better BM25 match than "b"; dense mildly prefers "b".  Ranks
    # make the two a tie for RRF, scores keep BM25's confidence.
    lexical = [("a", 20.0), ("b", 2.0)]
    dense = [("b", 0.41), ("a", 0.40)]
    assert [c for c, _ in Fusion("convex").fuse(lexical, dense)][0] == "a"
    rrf = dict(Fusion("rrf", 1.0, 1.0).fuse(lexical, dense))
    assert rrf["a"] == pytest.approx(rrf["b"])


def test_a_candidate_missing_from_one_list_gets_that_lists_floor():
    lexical = [("a", 8.0), ("b", 4.0)]
    dense = [("c", 0.9), ("a", 0.5)]
    fused = dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense, pool=2))
    # "c" was not among BM25's top 2 (a full list): it scores at most BM25's floor.
    assert fused["c"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.9)
    # "b" was not among dense's top 2: the lowest returned cosine.
    assert fused["b"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.5)


def test_a_bm25_candidate_the_vector_search_left_out_is_scored_by_its_own_cosine():
    lexical = [("a", 8.0), ("b", 4.0), ("t", 4.0)]
    dense = [("c", 0.9), ("a", 0.5)]
    # "b" has a vector, only not among the vector search's best: its own cosine, below
    # the floor a candidate without one ("t", a tool call the memory never embeds) keeps.
    fused = dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense, pool=3, cosines={"a": 0.5, "b": 0.1}))
    assert fused["b"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.1)
    assert fused["t"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.5)
    # A candidate both retrievers returned keeps the cosine the search gave it.
    assert fused["a"] == pytest.approx(0.6 * 1.0 + 0.4 * 0.5)
    # Its own cosine wins over the rank rule for a row owed a vector (it has one by now).
    assert dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense, pool=3, pending={"b"}, cosines={"b": 0.1}))["b"] \
        == pytest.approx(0.6 * 0.5 + 0.4 * 0.1)
    # Only convex fusion reads scores: the other methods ignore the cosines.
    assert Fusion.named("rrf").fuse(lexical, dense, cosines={"b": 0.1}) == Fusion.named("rrf").fuse(lexical, dense)


def test_a_short_bm25_list_means_the_others_matched_no_term():
    lexical = [("a", 8.0)]
    dense = [("c", 0.9), ("a", 0.5)]
    fused = dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense, pool=10))
    assert fused["c"] == pytest.approx(0.4 * 0.9)


def test_one_empty_side_leaves_the_other_sides_order():
    lexical = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    assert [c for c, _ in Fusion("convex").fuse(lexical, [])] == ["a", "b", "c"]
    dense = [("z", 0.7), ("y", 0.6)]
    assert [c for c, _ in Fusion("convex").fuse([], dense)] == ["z", "y"]
    assert Fusion("convex").fuse([], []) == []


def test_ties_break_by_chunk_id_so_results_are_deterministic():
    lexical = [("b", 1.0), ("a", 1.0)]
    assert [c for c, _ in Fusion("convex").fuse(lexical, [])] == ["a", "b"]
    assert [c for c, _ in Fusion.named("rrf").fuse([("b", 1.0)], [("a", 1.0)])] == ["a", "b"]


def test_weighted_rrf():
    lexical = [("a", 9.0), ("b", 1.0)]
    dense = [("b", 0.9), ("a", 0.1)]
    fused = dict(Fusion("rrf", 1.0, 0.5, rrf_k=10).fuse(lexical, dense))
    assert fused["a"] == pytest.approx(1 / 11 + 0.5 / 12)
    assert fused["b"] == pytest.approx(1 / 12 + 0.5 / 11)
    # A zero weight drops that side.
    assert dict(Fusion("rrf", 1.0, 0.0).fuse(lexical, [("c", 1.0)])) == pytest.approx({"a": 1 / 61, "b": 1 / 62})


def test_lexical_and_dense_only_pass_one_side_through():
    lexical = [("a", 3.0), ("b", 1.0)]
    dense = [("c", 0.9)]
    only_bm25 = Fusion.named("lexical")
    assert only_bm25.fuse(lexical, dense) == [("a", 3.0), ("b", 1.0)]
    assert not only_bm25.uses_dense and only_bm25.uses_lexical
    only_dense = Fusion.named("dense")
    assert only_dense.fuse(lexical, dense) == [("c", 0.9)]
    assert not only_dense.uses_lexical and only_dense.uses_dense


def test_presets_by_name_and_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert Fusion.named(None) is DEFAULT
    assert Fusion.named("convex") is DEFAULT
    assert Fusion.named("RRF") == Fusion("rrf", 1.0, 1.0, 60)
    monkeypatch.setenv(ENV, "lexical")
    assert Fusion.named(None).method == "lexical"
    assert Fusion.named("dense").method == "dense"  # an explicit name wins
    assert set(METHODS) == {"convex", "rrf", "lexical", "dense"}


@pytest.mark.parametrize("bad", ["borda", "bm25"])
def test_unknown_methods_are_usage_errors(bad):
    with pytest.raises(UsageError, match="unknown fusion"):
        Fusion.named(bad)
    with pytest.raises(UsageError):
        Fusion(bad)


def test_a_candidate_owed_a_vector_gets_the_cosine_at_its_bm25_rank():
    lexical = [("a", 8.0), ("p", 6.0), ("q", 4.0), ("b", 2.0)]
    dense = [("c", 0.9), ("a", 0.7), ("b", 0.3)]
    fused = dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense, pool=4, pending={"p", "q", "c"}))
    # "p" is BM25's second: the dense list's second cosine; "q" is fourth, past the
    # dense list's end: its last.
    assert fused["p"] == pytest.approx(0.6 * 0.75 + 0.4 * 0.7)
    assert fused["q"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.3)
    # A candidate the vector search returned keeps its own cosine, pending or not.
    assert fused["c"] == pytest.approx(0.6 * 0.25 + 0.4 * 0.9)
    # Not pending (a row the memory never embeds): the floor, as before.
    assert dict(Fusion("convex", 0.6, 0.4).fuse(lexical, dense, pool=4))["p"] == pytest.approx(0.6 * 0.75 + 0.4 * 0.3)


def test_pending_changes_nothing_without_a_dense_list_or_outside_convex():
    lexical = [("a", 3.0), ("p", 2.0)]
    assert Fusion("convex").fuse(lexical, [], pending={"p"}) == Fusion("convex").fuse(lexical, [])
    dense = [("a", 0.9)]
    assert Fusion.named("rrf").fuse(lexical, dense, pending={"p"}) == Fusion.named("rrf").fuse(lexical, dense)


def test_only_convex_weighs_pending_candidates():
    assert [m for m in METHODS if Fusion.named(m).weighs_pending] == ["convex"]
