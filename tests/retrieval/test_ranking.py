"""The ranking stage after fusion: what a chunk is and where it is, one hit per block."""

import pytest

from funes.retrieval.ranking import Ranking


def _row(chunk, text, *, session="s", turn="t", block=0, split=0, block_type="text", role="assistant",
         tool_name=None):
    return chunk, {"id": chunk, "session_id": session, "turn_uuid": turn, "block_idx": block, "split_idx": split,
                   "block_type": block_type, "text": text, "role": role, "tool_name": tool_name, "is_subagent": False}


NEUTRAL = Ranking(tool_weight=1.0, question_weight=1.0, split_exponent=0.0, session_weight=0.0, answer_weight=0.0)


def test_one_hit_stands_for_each_block_and_a_repeated_text_is_shown_once():
    rows = dict([
        _row("a0", "first piece of a long log", split=0),
        _row("a1", "second piece of the same log", split=1),
        _row("b", "The user rejected this tool use.", turn="u1"),
        _row("c", "The user rejected this tool use.", turn="u2"),
        _row("d", "The user rejected this tool use.", turn="u3", session="other"),
    ])
    fused = [("a1", 0.9), ("a0", 0.8), ("b", 0.7), ("c", 0.6), ("d", 0.5)]
    assert [c for c, _ in NEUTRAL.rank(fused, rows)] == ["a1", "b", "d"]


def test_tool_traffic_and_questions_weigh_less_than_what_was_said():
    rows = dict([
        _row("said", "The lock was held by a stale build."),
        _row("out", "Waiting for lock on the build directory", turn="t2", block_type="tool_result"),
        _row("asked", "Why does the build wait for a lock?", turn="t3"),
    ])
    fused = [("out", 1.0), ("asked", 1.0), ("said", 0.85)]
    ranking = Ranking(tool_weight=0.8, question_weight=0.7, split_exponent=0.0, session_weight=0.0)
    ranked = dict(ranking.rank(fused, rows))
    assert list(ranked) == ["said", "out", "asked"]
    assert ranked["out"] == pytest.approx(0.8) and ranked["asked"] == pytest.approx(0.7)


def test_a_long_block_weighs_less_per_chunk_and_a_session_that_matches_often_more():
    rows = dict([
        _row("file", "a chunk of a file read in full", turn="read", block_type="text"),
        _row("reply", "a short reply", turn="r", session="s2"),
        _row("near", "another match in the same session", turn="n", session="s2"),
    ])
    splits = {("s", "read", 0): 32}
    long_block = Ranking(tool_weight=1.0, question_weight=1.0, split_exponent=0.1, session_weight=0.0)
    ranked = dict(long_block.rank([("file", 1.0), ("reply", 0.8)], rows, splits))
    assert ranked["file"] == pytest.approx(32 ** -0.1)
    session = Ranking(tool_weight=1.0, question_weight=1.0, split_exponent=0.0, session_weight=0.3)
    ranked = session.rank([("file", 0.9), ("reply", 0.8), ("near", 0.5)], rows)
    assert [c for c, _ in ranked] == ["file", "reply", "near"]
    assert dict(ranked)["reply"] == pytest.approx(0.8 + 0.3 * 0.8)
    assert dict(ranked)["file"] == pytest.approx(0.9 + 0.3 * 0.9)


def test_a_candidate_deleted_since_it_was_indexed_is_dropped():
    rows = dict([_row("kept", "still here")])
    assert [c for c, _ in NEUTRAL.rank([("gone", 1.0), ("kept", 0.5)], rows)] == ["kept"]


def test_a_candidate_holding_the_kind_of_answer_asked_for_weighs_more():
    rows = dict([
        _row("talk", "Let me check which Next.js version the scaffold installed.", turn="t1"),
        _row("output", "   ▲ Next.js 15.5.2\n   - Local: http://localhost:3001", turn="t2"),
    ])
    fused = [("talk", 1.0), ("output", 0.8)]
    question = "Which Next.js version did the scaffold install?"
    answers = Ranking(tool_weight=1.0, question_weight=1.0, split_exponent=0.0, session_weight=0.0,
                      answer_weight=0.4)
    ranked = answers.rank(fused, rows, query=question)
    assert [c for c, _ in ranked] == ["output", "talk"]
    assert dict(ranked)["output"] == pytest.approx(0.8 * 1.4) and dict(ranked)["talk"] == pytest.approx(1.0)
    # a question that asks for no kind of answer, or no weight for it, ranks by the fused scores
    assert [c for c, _ in answers.rank(fused, rows, query="What did the scaffold do?")] == ["talk", "output"]
    unweighted = Ranking(tool_weight=1.0, question_weight=1.0, split_exponent=0.0, session_weight=0.0,
                         answer_weight=0.0)
    assert [c for c, _ in unweighted.rank(fused, rows, query=question)] == ["talk", "output"]


def test_a_question_about_what_the_user_asked_weighs_the_users_own_words_more():
    """The agent's talk about a request shares its words; the user's turn, or the
    user's answer to the agent's question tool, is what was asked."""
    rows = dict([
        _row("talk", "I'll make the avatar fall back to the initials of the username.", turn="t1"),
        _row("typed", "Use the initials from the username if name isn't present", turn="t0", role="user"),
        _row("answered", 'User has answered your questions: "Fallback?"="username initials"', turn="t2",
             block_type="tool_result", role="tool", tool_name="AskUserQuestion"),
    ])
    fused = [("talk", 1.0), ("typed", 0.8), ("answered", 0.75)]
    answers = Ranking(tool_weight=1.0, question_weight=1.0, split_exponent=0.0, session_weight=0.0,
                      answer_weight=0.4)
    ranked = answers.rank(fused, rows, query="What fallback did I ask for in the avatar letters?")
    assert [c for c, _ in ranked] == ["typed", "answered", "talk"]
    assert [c for c, _ in answers.rank(fused, rows, query="What fallback did the avatar get?")] == [
        "talk", "typed", "answered"]
