"""Recall while a memory's backlog fills: a chunk still owed its vector is ranked by
its keywords, not sunk below the chunks whose vectors happen to be in already
(retrieval/fusion.py; BENCHMARKS.md "Recall while vectors are pending")."""

import numpy as np
import pytest

from hub_helpers import chunk

QUERY = "websocket reconnect test flaky"
# The chunk BM25 ranks first (it holds every query word in the fewest words) ...
BEST_MATCH = "The websocket reconnect test is flaky."
# ... and one that says the same at more length, whose vector is in.
LONGER = "The websocket reconnect test is flaky on the CI runners when the proxy restarts mid-handshake."
UNRELATED = ["We renamed the billing cron job and moved it to the nightly queue.",
             "The invoice PDF renderer pads the table header with two spaces.",
             "Dark mode colours now come from the design tokens file.",
             "The README lists the supported Python versions.",
             "Upgrading the ORM changed how nullable foreign keys are migrated.",
             "The logo SVG was optimised, saving forty kilobytes."]


def _memory_with_a_backlog(*, policy_tier: int = 1, block_type: str = "text", tool_name: str | None = None):
    """Every row embedded except the best keyword match, stored as ``policy_tier``, and
    one text the backlog still owes a vector that matches no query word (so the memory
    has a backlog whatever ``policy_tier`` is)."""
    from funes.embedding import load_embedder
    from funes.indexing import open_writer
    from funes.memory.location import local_memory

    embedded = [chunk("s-longer", 1, LONGER)] + [chunk(f"s-other-{n}", 1, text) for n, text in enumerate(UNRELATED)]
    pending = chunk("s-best", 1, BEST_MATCH, tier=policy_tier, block_type=block_type, tool_name=tool_name)
    embedder = load_embedder("cpu")
    with open_writer(local_memory()) as writer:
        writer.add_chunks(embedded, np.asarray(embedder.embed([c.text for c in embedded]), dtype=np.float32))
        writer.add_chunks([pending, chunk("s-waiting", 1, "The changelog for 2.3 mentions the export format.")])
    return pending.id


def _recall():
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.retrieval.search import Recaller

    # Every row is a hit (k 8), so the hits show the whole dense list.
    return Recaller.open(Memory.open(local_memory()), rerank=False).recall(QUERY, k=8, neighbors=0).hits


def _cosines(hits) -> list[float]:
    return sorted((h.scores["dense"] for h in hits if h.scores["dense"] is not None), reverse=True)


def test_a_chunk_still_owed_its_vector_ranks_where_its_keywords_put_it():
    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.ranking import DEFAULT as RANKING

    pending_id = _memory_with_a_backlog()
    hits = _recall()
    assert hits[0].id == pending_id, [h.text for h in hits]
    best = hits[0].scores
    assert best["bm25_rank"] == 1 and best["dense"] is None  # found by keywords, no vector of its own
    # Scored as if its vector stood where its keywords do: the top cosine, beside BM25's
    # best (then the ranking's bonus for the best hit of its session, itself).
    fused = FUSION.lexical_weight + FUSION.dense_weight * _cosines(hits)[0]
    assert best["fused"] == pytest.approx(fused * (1 + RANKING.session_weight), abs=1e-4)


def test_a_tool_call_the_policy_leaves_to_bm25_keeps_the_floor(isolated_env):
    """Tool calls are never embedded by default (funes.embedding.DENSE_TIERS): the
    ranking's weights were chosen with them at the dense list's floor, and they stay there."""
    from funes.embedding import DENSE_TIERS

    assert 2 not in DENSE_TIERS
    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.ranking import DEFAULT as RANKING

    call_id = _memory_with_a_backlog(policy_tier=2, block_type="tool_use", tool_name="Bash")
    hits = _recall()
    call = next(h.scores for h in hits if h.id == call_id)
    assert call["bm25_rank"] == 1 and call["dense"] is None
    fused = FUSION.lexical_weight + FUSION.dense_weight * _cosines(hits)[-1]
    assert call["fused"] == pytest.approx(fused * RANKING.tool_weight * (1 + RANKING.session_weight), abs=1e-4)


def test_a_memory_knows_from_its_saved_counts_when_nothing_awaits_a_vector():
    """A recall asks which candidates are still owed a vector only while some row is:
    a memory whose backlog is done says so from the counts its writer saved."""
    from funes.embedding import load_embedder
    from funes.indexing import embed_backlog, open_writer
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    with open_writer(local_memory()) as writer:
        writer.add_chunks([chunk("s-1", n, text) for n, text in enumerate(UNRELATED)])
    assert not Memory.open(local_memory()).known_without_backlog()
    with open_writer(local_memory()) as writer:
        assert embed_backlog(writer, load_embedder("cpu")) == len(UNRELATED)
    assert Memory.open(local_memory()).known_without_backlog()
