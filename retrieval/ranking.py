"""From fused scores to the hits a recall shows: what a chunk is, and where it is.

Fusion (retrieval/fusion.py) scores chunks by how well their words and meaning
match the query.  This stage adjusts those scores by what the chunk *is*, facts
read from its row, and then makes ten hits show ten different places:

* **tool traffic** (``tool_use``, ``tool_result``) weighs ``tool_weight`` of its
  score: in a coding session most chunks are tool calls and their output (61 %
  of the coding dev set's chunks are tool results), while what was decided,
  broken and fixed is mostly said in the assistant's text and thinking (90 of
  its 140 gold turns);
* **a chunk that asks** (text ending in ``?``) weighs ``question_weight``: a
  question shares the words of a later question about the same thing but rarely
  holds its answer, which is usually the turn after it (LoCoMo's "How long have
  you been creating art?" before "Since I was 17");
* **a long block** (one split into ``n`` chunks) may weigh ``n ** -split_exponent``
  (a file read or a long log offers a match in each of its chunks, so its best
  chunk scores high by chance more often than a short turn); off by default:
  left out by session over every dev set, 12 of 13 coding folds chose no such
  weight, and much of what coding questions ask sits in long tool output;
* **what the question asks for**: a candidate holding the kind of answer the
  question asks for (a version, a port, a number, a path, an error, a time, the
  user's own words: retrieval/answer_types.py) weighs ``1 + answer_weight``: of the chunks that
  share a question's words, the one with ``Next.js 15.5.2`` in it answers "which
  Next version", the one saying "let me check the version" does not;
* **the session** adds ``session_weight`` × the best adjusted score among the
  candidates of the chunk's session: what a question asks about usually happened
  in one session, and a session that matches in several places is likelier to
  be it;
* **one hit per block**: the best chunk of a block stands for it (its other
  splits overlap it and add nothing a ``get`` would not show), and a text that
  repeats one already shown verbatim (a rejected tool call, the same command run
  twice) is left out.

The weights were chosen by ``benchmarks/eval_recall.py`` on both dev sets
(LoCoMo chat and real coding sessions) with leave-one-out estimates beside the
in-sample figures (BENCHMARKS.md); ``tests/retrieval/test_recall_choice.py`` pins them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from funes.retrieval.answer_types import asked_types, holds_answer
from funes.retrieval.passage import one_line

# Row columns the ranking reads.
RANKING_COLUMNS = ("id", "session_id", "turn_uuid", "block_idx", "split_idx", "block_type", "text", "role",
                   "tool_name", "is_subagent")
TOOL_BLOCKS = ("tool_use", "tool_result")


@dataclass(frozen=True)
class Ranking:
    tool_weight: float = 0.8
    question_weight: float = 0.7
    split_exponent: float = 0.0
    session_weight: float = 0.3
    answer_weight: float = 0.4

    def rank(self, fused: Sequence[tuple[str, float]], rows: Mapping[str, Mapping[str, Any]],
             splits: Mapping[tuple[str, str, int], int] | None = None, query: str = "") -> list[tuple[str, float]]:
        """``(chunk id, score)`` best first, one per block, ties by chunk id.

        ``rows``: the candidates' rows (:data:`RANKING_COLUMNS`; a chunk without one
        was deleted since it was indexed and is dropped); ``splits``: chunks per
        block, keyed by :func:`block_key` (a block not in it counts as one);
        ``query``: the question, for the kinds of answer it asks for."""
        asked = asked_types(query) if self.answer_weight else ()
        adjusted: dict[str, float] = {}
        for chunk, score in fused:
            row = rows.get(chunk)
            if row is None:
                continue
            if asked and holds_answer(row, asked):
                score *= 1 + self.answer_weight
            if row["block_type"] in TOOL_BLOCKS:
                score *= self.tool_weight
            elif row["block_type"] == "text" and (row["text"] or "").rstrip().endswith("?"):
                score *= self.question_weight
            if self.split_exponent and splits:
                score *= splits.get(block_key(row), 1) ** -self.split_exponent
            adjusted[chunk] = score
        if self.session_weight:
            best: dict[str, float] = {}
            for chunk, score in adjusted.items():
                session = rows[chunk]["session_id"]
                best[session] = max(best.get(session, 0.0), score)
            adjusted = {chunk: score + self.session_weight * best[rows[chunk]["session_id"]]
                        for chunk, score in adjusted.items()}
        out: list[tuple[str, float]] = []
        shown: set[Any] = set()
        for chunk, score in sorted(adjusted.items(), key=lambda item: (-item[1], item[0])):
            row = rows[chunk]
            block, text = block_key(row), one_line(row["text"] or "")
            if block in shown or (row["session_id"], text) in shown:
                continue
            shown.update((block, (row["session_id"], text)))
            out.append((chunk, score))
        return out


def block_key(row: Mapping[str, Any]) -> tuple[str, str, int]:
    return (row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0))


DEFAULT = Ranking()
