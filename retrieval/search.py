"""Recall: a free-text question → the verbatim passages that answer it.

embed the query with the memory's pinned model → BM25 (bm25s, over each chunk
with its context: see funes.memory.lexical) and vector search → fusion (by
default a convex combination of normalised scores: see retrieval/fusion.py) →
ranking by what each candidate is and where, one hit per block (see
retrieval/ranking.py) → the passage each candidate shows (its block around the
chunk that matched, a tool call as its arguments: see retrieval/passage.py), each
passage once a session → the rerank stage over the top candidates (late
interaction by default: funes/late_interaction.py; a tool result's chunk read with
its call's head) → recency (a tie-breaker unless a half-life is asked for) →
neighbours (±N turns by seq) → hits with their full provenance and the score of
every stage.

A :class:`Recaller` loads its models once, so a batch, an MCP server or an
agent's ``ask`` pay for them once.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from funes.embedding import awaiting_vector_sql
from funes.errors import positive_number
from funes.memory.reader import Memory, cosines
from funes.provenance import decode_commands, decode_files
from funes.retrieval.bounds import DEFAULT_K, check_counts, checked_query
from funes.retrieval.filters import Filters
from funes.retrieval.fusion import DEFAULT, Fusion
from funes.retrieval.passage import one_line, passage, passage_pieces
from funes.retrieval.ranking import DEFAULT as DEFAULT_RANKING
from funes.retrieval.ranking import RANKING_COLUMNS
from funes.retrieval.ranking import Ranking, block_key

# How many each retriever contributes to fusion.
POOL = 100
# The pool rows' flag: still owed a vector under the memory's policy.
PENDING = "_pending"
NEIGHBOR_PREVIEW = 160
NEIGHBOR_COLUMNS = ("id", "seq", "role", "block_type", "turn_uuid", "text", "block_idx")
# Candidates past the first k whose neighbours a recall reads beside its passages and
# its stage: as many as a passage shown twice usually drops.
NEIGHBOR_SLACK = 4


@dataclass
class Neighbor:
    seq: int
    role: str
    block_type: str
    turn_uuid: str
    text: str


@dataclass
class Hit:
    id: str
    text: str
    harness: str
    session_id: str
    turn_uuid: str
    parent_uuid: str | None
    seq: int
    ts: str
    role: str
    block_type: str
    tool_name: str | None
    block_idx: int
    split_idx: int
    workdir: str
    cwd: str | None
    repo: str | None
    branch: str | None
    source_path: str | None
    score: float
    scores: dict[str, float | int | None] = field(default_factory=dict)
    neighbors: list[Neighbor] = field(default_factory=list)
    # A tool call's result (its first piece), shown with the call: what came of it.
    result: Neighbor | None = None
    # The hit's turn's provenance (funes/provenance.py): files touched, commands run;
    # a tool_result's exit status.
    files: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    exit_code: int | None = None
    # What moved on since the turn in the checkout the query ran in (retrieval/stale.py);
    # None when it was not checked or could not be told.
    stale: Any = None

    def to_json(self, memory_label: str) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("neighbors", "result", "stale")}
        out["text"] = self.shown_text()
        out["stale"] = self.stale.to_json() if self.stale is not None else None
        out["memory"] = memory_label
        out["neighbors"] = [n.__dict__ for n in self.neighbors]
        out["result"] = self.result.__dict__ if self.result is not None else None
        return out

    def shown_text(self) -> str:
        """What the hit shows: its passage, and a tool call's result after it."""
        return self.text if self.result is None else f"{self.text}\n{self.result.text}"


@dataclass
class RecallResult:
    query: str
    hits: list[Hit]
    memory_label: str
    reranker: str | None  # model id when the rerank stage ran
    reranker_note: str | None  # why it did not, when it did not
    elapsed_ms: float
    # Share of chunks with a vector, when counted (None: counting scans the whole
    # vector column, which a cold recall does not pay for).
    dense_coverage: float | None = None


def _scaled(values: list[float]) -> list[float]:
    """``values`` min–max scaled to [0, 1] (all 0 when they are equal)."""
    low, high = min(values), max(values)
    return [(value - low) / (high - low) if high > low else 0.0 for value in values]


def _age_days(ts: str, now: datetime) -> float | None:
    if not ts:
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (now - moment).total_seconds() / 86400.0)


class Recaller:
    def __init__(self, memory: Memory, *, embedder: Any = None, reranker: Any = None,
                 reranker_note: str | None = None, fusion: Fusion = DEFAULT, ranking: Ranking = DEFAULT_RANKING):
        """``embedder`` may be a :class:`~concurrent.futures.Future` of one (still loading),
        ``reranker`` a Future of ``(reranker, note)`` (:func:`loading_reranker`)."""
        self.memory = memory
        self._embedder = embedder
        self._reranker = reranker
        self._reranker_note = reranker_note
        self.fusion = fusion
        self.ranking = ranking
        # One helper thread for the parts of a recall that run beside the rest (a
        # thread starts with the first of them).
        self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="funes-recall")

    def _loaded_reranker(self) -> None:
        if isinstance(self._reranker, Future):
            self._reranker, self._reranker_note = self._reranker.result()

    @property
    def reranker(self) -> Any:
        """The rerank stage once loaded, or None (:attr:`reranker_note` says why)."""
        self._loaded_reranker()
        return self._reranker

    @reranker.setter
    def reranker(self, stage: Any) -> None:
        self._reranker, self._reranker_note = stage, None

    @property
    def reranker_note(self) -> str | None:
        self._loaded_reranker()
        return self._reranker_note

    @property
    def embedder(self) -> Any:
        """The query embedder, once its loading (started by :meth:`open`, or here for a
        memory that held no vector when opened) is done."""
        if self._embedder is None and self.fusion.uses_dense:
            from funes.embedding import loading_query_embedder

            self._embedder = loading_query_embedder()
        if isinstance(self._embedder, Future):
            self._embedder = self._embedder.result()
        return self._embedder

    def follow(self, latest: Memory) -> None:
        """Read ``latest`` from now on if it is a newer version (or, for a Hub memory,
        a newer commit) of this recaller's memory: a long-lived recaller (an MCP
        server) sees the turns the hooks index and the pushes others make, with
        its models still loaded."""
        if latest.location.uri == self.memory.location.uri and latest.version == self.memory.version:
            return
        from funes.embedding import IDENTITY

        latest.require_rows()
        latest.check_identity(IDENTITY.to_metadata())
        self.memory = latest

    @classmethod
    def open(cls, memory: Memory, *, rerank: bool = True, fusion: Fusion | None = None,
             embedder: Any = None) -> Recaller:
        """Load the query embedder (checked against the memory's model) and, when
        available, the reranker.  ``fusion`` None: ``$FUNES_FUSION`` or the default.
        ``embedder``: one already loading (:func:`loading_query_embedder`), else its
        loading starts here, unless the fusion is BM25-only or the memory holds no
        vector yet (a first index in its lexical pass: the model's first export,
        seconds of torch beside that indexer, would buy nothing)."""
        from funes.embedding import IDENTITY, loading_query_embedder

        fusion = fusion or Fusion.named(None)
        memory.require_rows()
        memory.check_identity(IDENTITY.to_metadata())
        if not fusion.uses_dense:
            embedder = None
        elif embedder is None and not memory.known_without_vectors():
            embedder = loading_query_embedder()
        if not rerank:
            return cls(memory, embedder=embedder, reranker_note="disabled for this call", fusion=fusion)
        from funes.retrieval.rerank import loading_reranker

        return cls(memory, embedder=embedder, reranker=loading_reranker(), fusion=fusion)

    # ------------------------------------------------------------------ the pipeline
    def recall(self, query: str, *, k: int = DEFAULT_K, candidates: int = 30, neighbors: int = 1,
               filters: Filters | None = None, half_life: float | None = None) -> RecallResult:
        started = time.perf_counter()
        query = checked_query(query)
        check_counts(k=k, candidates=candidates, neighbors=neighbors)
        if half_life is not None:
            positive_number("half_life", half_life, "days")
        filters = filters or Filters()
        filters = filters.bound(self.memory)  # a session prefix as hits print it names its session
        where = filters.where()
        pool = max(POOL, candidates, k)

        allowed = None
        if where:
            allowed = self.memory.scan(["id"], where).column("id").to_numpy(zero_copy_only=False).astype("<U16")
        # The query's embedding, the vector search and the read of its candidates run
        # beside BM25 and the read of its own (torch and Lance release the GIL): a warm
        # recall waits for the longer of the two, not their sum.
        searches_dense = self.fusion.uses_dense and (allowed is None or len(allowed)) \
            and not self.memory.known_without_vectors()
        searching_dense = self._helper.submit(self._dense_pool, query, pool, where) if searches_dense else None
        # The ranking reads a few columns of the whole pool (and, when both retrievers
        # answer and the memory may have a backlog, which BM25 candidates are still owed
        # a vector: fusion scores those by their BM25 rank); only its finalists are read
        # whole (by row id: no second scan).
        asks = searches_dense and self.fusion.weighs_pending and not self.memory.known_without_backlog()
        flags = {PENDING: awaiting_vector_sql(self.memory.dense_tiers)} if asks else None
        lexical: list[tuple[str, float]] = []
        if self.fusion.uses_lexical and (allowed is None or len(allowed)):
            lexical = self.memory.lexical().search(query, pool, allowed)
        # A chunk both retrievers found is read by both: skipping it here would mean
        # waiting for the dense side, the two reads in series again.  With the dense
        # side, BM25's candidates are read with their vectors: one the vector search
        # did not return is scored by its own cosine (retrieval/fusion.py).
        columns = (*RANKING_COLUMNS, "vector") if searching_dense is not None else RANKING_COLUMNS
        pool_rows = self.memory.rows([chunk for chunk, _ in lexical], columns, row_ids=True, computed=flags)
        dense: list[tuple[str, float]] = []
        own_cosines: dict[str, float] = {}
        if searching_dense is not None:
            dense, dense_rows, asked = searching_dense.result()
            vectors = {chunk: row.pop("vector") for chunk, row in pool_rows.items()}
            own_cosines = cosines(asked, {chunk: vector for chunk, vector in vectors.items() if chunk not in dense_rows})
            pool_rows = {**dense_rows, **pool_rows}
        fused = self.fusion.fuse(lexical, dense, pool, {chunk for chunk, row in pool_rows.items() if row.get(PENDING)},
                                 own_cosines)
        # Only a ranking that weighs a long block by its chunks counts them.
        splits = self.memory.split_counts(pool_rows.values()) if self.ranking.split_exponent else None
        fused = self.ranking.rank(fused, pool_rows, splits, query)[: max(candidates, k)]
        rows = self.memory.rows_at([pool_rows[chunk]["_rowid"] for chunk, _ in fused])
        lexical_rank = {chunk: (rank, score) for rank, (chunk, score) in enumerate(lexical)}
        dense_rank = {chunk: (rank, score) for rank, (chunk, score) in enumerate(dense)}

        hits: list[Hit] = []
        for chunk, fused_score in fused:
            row = rows[chunk]
            lex = lexical_rank.get(chunk)
            den = dense_rank.get(chunk)
            hit = Hit(
                id=chunk, text=row["text"], harness=row["harness"] or "", session_id=row["session_id"],
                turn_uuid=row["turn_uuid"], parent_uuid=row["parent_uuid"], seq=int(row["seq"] or 0),
                ts=row["ts"] or "", role=row["role"] or "", block_type=row["block_type"] or "",
                tool_name=row["tool_name"], block_idx=int(row["block_idx"] or 0),
                split_idx=int(row["split_idx"] or 0), workdir=row["workdir"] or "", cwd=row["cwd"],
                repo=row["repo"], branch=row["branch"], source_path=row["source_path"], score=fused_score,
                files=[{"path": f.path, "actions": list(f.actions)} for f in decode_files(row["files"])],
                commands=decode_commands(row["commands"]), exit_code=row["exit_code"],
                scores={
                    "bm25": None if lex is None else round(lex[1], 4),
                    "bm25_rank": None if lex is None else lex[0] + 1,
                    "dense": None if den is None else round(den[1], 4),
                    "dense_rank": None if den is None else den[0] + 1,
                    "fused": round(fused_score, 6),
                    "rerank": None,
                    "recency": 1.0,
                },
            )
            hits.append(hit)
        hits = hits[:candidates] if candidates >= k else hits[:k]
        # The neighbours of the first k candidates and a few more (a passage shown twice
        # drops a hit) are read beside the passages and the stage; a hit the stage or a
        # half-life brings up from further down has its own read at the end.
        reading_neighbors = self._helper.submit(self._neighbor_rows, hits[:k + NEIGHBOR_SLACK], neighbors) \
            if neighbors else None
        # Each candidate shows its passage before the stage reads them: two blocks of a
        # session can hold one text (a subagent's report, and the Task result that hands
        # it back), and a passage already a candidate's adds nothing.
        hits = self._distinct_passages(hits, rows)

        reranked = False
        if self.reranker is not None and hits:
            # A tool result is read with the head of the call that made it, as its BM25
            # document is: "what did the test run print" names the command, not the output.
            # It reads the chunk that ranked, not the passage shown around it.
            heads = self.memory.call_heads([rows[hit.id] for hit in hits])
            chunks = [rows[hit.id]["text"] or "" for hit in hits]
            passages = [f"{heads[hit.id]}\n{chunk}" if hit.id in heads else chunk for hit, chunk in zip(hits, chunks)]
            scores = [float(score) for score in self.reranker.score(query, passages)]
            # A stage with a blend weight keeps that share of its say (both scores
            # min–max scaled over the candidates); a cross-encoder's logit decides alone.
            weight = getattr(self.reranker, "blend_weight", None)
            if weight is not None:
                stage, kept = _scaled(scores), _scaled([h.score for h in hits])
            for position, (hit, score) in enumerate(zip(hits, scores, strict=True)):
                # As many decimals as the fused score: the two read from --json blend
                # back to the ranking shown (benchmarks/eval_rerank.py does).
                hit.scores["rerank"] = round(score, 6)
                hit.score = (1.0 / (1.0 + math.exp(-score)) if weight is None  # a logit → (0, 1)
                             else weight * stage[position] + (1 - weight) * kept[position])
            reranked = True

        now = datetime.now(timezone.utc)
        if half_life:
            for hit in hits:
                age = _age_days(hit.ts, now)
                decay = 1.0 if age is None else 0.5 ** (age / half_life)
                hit.scores["recency"] = float(f"{decay:.6g}")  # significant digits: decays get tiny
                hit.score *= decay
        # Recency breaks ties (newest first) unless a half-life made it a factor.
        hits.sort(key=rank_key)
        hits = hits[:k]
        for hit in hits:
            hit.scores["final"] = round(hit.score, 6)
        self._attach_results(hits, rows)
        if reading_neighbors is not None:
            self._attach_neighbors(hits, neighbors, *reading_neighbors.result())
        return RecallResult(
            query=query, hits=hits, memory_label=self.memory.location.label,
            reranker=getattr(self.reranker, "model_id", None) if reranked else None,
            reranker_note=None if reranked else self.reranker_note,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    def _dense_pool(self, query: str, pool: int, where: str | None,
                    ) -> tuple[list[tuple[str, float]], dict[str, dict[str, Any]], np.ndarray]:
        """The ``pool`` chunks nearest the query's embedding (``(chunk id, cosine)``),
        their rows as the ranking reads them (none is owed a vector: each has one),
        and the query's embedding."""
        vector = self.embedder.embed([query])[0]
        nearest = self.memory.nearest_rows(vector, pool, where, RANKING_COLUMNS)
        return ([(row["id"], 1.0 - distance) for row, distance in nearest], {row["id"]: row for row, _ in nearest},
                vector)

    def _distinct_passages(self, hits: list[Hit], rows: dict[str, dict[str, Any]]) -> list[Hit]:
        """``hits`` showing their passages, each passage once a session (the first hit
        keeps it; whitespace aside, as the ranking keeps each chunk's text once)."""
        self._show_passages(hits, rows)
        seen: set[tuple[str, str]] = set()
        out = []
        for hit in hits:
            key = (hit.session_id, one_line(hit.text))
            if key not in seen:
                seen.add(key)
                out.append(hit)
        return out

    def _show_passages(self, hits: list[Hit], rows: dict[str, dict[str, Any]]) -> None:
        """Each hit's text becomes the passage of its block around it (retrieval/passage.py),
        from the splits around it, read by id."""
        pieces = passage_pieces(self.memory.block_splits, [rows[hit.id] for hit in hits])
        for hit in hits:
            row = rows[hit.id]
            chunk = (int(row["char_start"] or 0), row["text"] or "")
            hit.text = passage(pieces.get(block_key(row), [chunk]), chunk, hit.block_type)

    def _attach_results(self, hits: list[Hit], rows: dict[str, dict[str, Any]]) -> None:
        """A tool call's hit carries the first piece of its result: a call alone
        (a command, a path) does not say what came of it."""
        results = self.memory.call_results([rows[hit.id] for hit in hits if hit.block_type == "tool_use"],
                                           ("turn_uuid", "role"))
        for hit in hits:
            if (row := results.get(hit.id)) is not None:
                hit.result = Neighbor(seq=int(row["seq"] or 0), role=row["role"] or "", block_type=row["block_type"],
                                      turn_uuid=row["turn_uuid"], text=row["text"] or "")

    def _neighbor_rows(self, hits: list[Hit], span: int,
                       ) -> tuple[dict[str, set[int]], dict[str, list[dict[str, Any]]]]:
        """The turns within ``span`` of each of ``hits`` (``{session_id: seqs}``) and
        their first chunks by session, in session order."""
        seqs: dict[str, set[int]] = {}
        for hit in hits:
            seqs.setdefault(hit.session_id, set()).update(range(hit.seq - span, hit.seq + span + 1))
        return seqs, self.memory.turn_rows(seqs, NEIGHBOR_COLUMNS)

    def _attach_neighbors(self, hits: list[Hit], span: int, read: dict[str, set[int]],
                          rows_of: dict[str, list[dict[str, Any]]]) -> None:
        """Each hit's neighbours from ``rows_of`` (the turns ``read``), the turns
        not read yet read now."""
        missing: dict[str, set[int]] = {}
        for hit in hits:
            wanted = set(range(hit.seq - span, hit.seq + span + 1)) - read.get(hit.session_id, set())
            if wanted:
                missing.setdefault(hit.session_id, set()).update(wanted)
        if missing:
            rows_of = {**rows_of}
            for session, rows in self.memory.turn_rows(missing, NEIGHBOR_COLUMNS).items():
                rows_of[session] = sorted([*rows_of.get(session, []), *rows],
                                          key=lambda r: (r["seq"], r["block_idx"]))
        for hit in hits:
            hit.neighbors = [
                Neighbor(seq=int(r["seq"]), role=r["role"] or "", block_type=r["block_type"] or "",
                         turn_uuid=r["turn_uuid"], text=r["text"][:NEIGHBOR_PREVIEW])
                for r in rows_of[hit.session_id]
                if r["seq"] != hit.seq and abs(r["seq"] - hit.seq) <= span
            ]


def rank_key(hit: Hit) -> tuple[float, str, str]:
    """Recall's order of hits: by score (to nine decimals), ties newest first, then by id."""
    return (-round(hit.score, 9), _neg_ts(hit.ts), hit.id)


def _neg_ts(ts: str) -> str:
    """Sort key putting newer timestamps first in an ascending sort."""
    return "".join(chr(0x10FFFF - ord(c)) for c in ts) if ts else "\U0010ffff"

