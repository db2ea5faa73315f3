"""The in-process ablation behind ``eval_recall.py --ablation``: each dev-set memory
is read once (rows and stored vectors), every BM25 representation is indexed once
in memory, every query's BM25 and vector candidates (100 each) are computed once
per representation, and then the product's own :class:`Fusion` and
:class:`Ranking` rank them under each setting, scored by the kit's scorer.

Dense candidates are brute-force cosine over the stored vectors, which is what
Lance does for a memory this small (no vector index below 25,000 rows); BM25 is
the product's :class:`LexicalIndex` over documents built by the product's
:func:`documents_from_rows` (or, for the "before" rows, by
:func:`previous_documents` and :func:`previous_tokenize`, the scheme this work
replaced, kept here only to measure against).  A hit's text is what the product
shows, the passage of its block (:func:`funes.retrieval.passage.passage`, over the
block's chunks as read from the table), or for the rows measured before it, the
bare chunk.

Cross-validation: leave one group out (a coding session; a LoCoMo conversation),
pick the setting of :func:`ranking_grid` with the best R@10 + MRR@10 on the other
groups, score it on the held-out one; the held-out questions' scores are pooled.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

POOL = 100
BLOCK_TYPES = ("text", "thinking", "tool_use", "tool_result")
DEV_SETS = {"coding": "coding dev (100 questions, 6 real sessions)",
            "coding2": "coding dev2 (58 questions, 7 other real sessions)",
            "locomo": "LoCoMo dev (1,018 questions)"}
# set → the kit's folder of a coding set
CODING_KITS = {"coding": "coding-dev", "coding2": "coding-dev2"}


def previous_tokenize(texts: Sequence[str]) -> list[list[str]]:
    """The tokenizer before this work: bm25s's ``\\w\\w+`` words, no identifier parts."""
    import bm25s
    import Stemmer

    return bm25s.tokenize(list(texts), lower=True, token_pattern=r"(?u)\b\w\w+\b", stopwords="en_plus",
                          stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False)


def previous_documents(rows: Sequence[dict]) -> dict[str, str]:
    """The documents before this work: the heads (400 characters) of the two chunks
    before a chunk in its session, whatever their type, within 8 turns, then its own
    text three times."""
    from funes.memory.documents import text_head

    out: dict[str, str] = {}
    for session in _sessions(rows).values():
        for position, row in enumerate(session):
            context = [text_head(r["text"] or "", 400) for r in session[max(0, position - 2):position]
                       if row["seq"] - r["seq"] <= 8 and r["text"]]
            out[row["id"]] = "\n".join(context + [row["text"] or ""] * 3)
    return out


def _sessions(rows: Sequence[dict]) -> dict[str, list[dict]]:
    by: dict[str, list[dict]] = {}
    for row in rows:
        by.setdefault(row["session_id"], []).append(row)
    for session in by.values():
        session.sort(key=lambda r: (r["seq"] or 0, r["block_idx"] or 0, r["split_idx"] or 0, r["id"]))
    return by


@dataclass
class DevSet:
    """A built dev-set memory, its questions and the candidates per representation."""

    name: str
    qrels: list[dict]
    rows: dict[str, dict]
    vectors: np.ndarray
    ids: list[str]
    query_vectors: np.ndarray
    splits: dict[tuple[str, str, int], int]
    # The head of the call behind each tool result, where the memory's writers embed a
    # result after its call (empty where they do not): what a re-embed reads with it.
    call_heads: dict[str, str] = field(default_factory=dict)
    _lexical: dict[str, list[list[tuple[str, float]]]] = field(default_factory=dict)
    _dense: dict[tuple, list[list[tuple[str, float]]]] = field(default_factory=dict)
    # What :meth:`dense` searches: rows with a vector of these tiers (None: every row),
    # over document vectors ``vector_set`` (a key of :attr:`alternative_vectors`; None:
    # the stored ones) against queries embedded by ``query_set`` (likewise).
    dense_tiers: frozenset[int] | None = None
    # Rows of those tiers still owed a vector (a backlog): left out of the vector
    # search and handed to fusion as pending, as the product does.
    pending: frozenset[str] = frozenset()
    # Score them at the dense list's floor instead of by BM25 rank (the form funes
    # replaced: BENCHMARKS.md "Recall while vectors are pending"), for comparison.
    pending_at_floor: bool = False
    vector_set: str | None = None
    query_set: str | None = None
    alternative_vectors: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    _pieces: dict[tuple[str, str, int], list[tuple[int, str]]] | None = None
    _positions: dict[str, int] | None = None

    @classmethod
    def load(cls, name: str, corpus: Path, kit: Path) -> DevSet:
        home = corpus / "home" / ".funes"
        os.environ.setdefault("FUNES_CACHE_DIR", str(home / "cache"))
        os.environ["HF_HUB_OFFLINE"] = "1"
        sys.path.insert(0, str(kit))
        import score as sc

        from funes.embedding import load_embedder
        from funes.indexing import embedding_input
        from funes.memory.location import location_for
        from funes.memory.schema import ROW_COLUMNS
        from funes.memory.reader import Memory
        from funes.retrieval.ranking import block_key

        qrels = sc.read_jsonl(corpus / "qrels.jsonl")
        memory = Memory.open(location_for(str(home / "memory")))
        table = memory.scan([*ROW_COLUMNS, "vector"])
        rows = table.drop(["vector"]).to_pylist()
        splits: dict[tuple[str, str, int], int] = {}
        for row in rows:
            splits[block_key(row)] = splits.get(block_key(row), 0) + 1
        # Every row's fp32 vector: the stored ones where the memory stores fp32, the
        # rows its policy leaves to BM25 (tool calls) or stores at int8 (tool results)
        # embedded here, so that the settings compare against one reference.
        stored = table.column("vector").to_pylist()
        embedder = load_embedder("cpu")
        redo = [i for i, (row, vector) in enumerate(zip(rows, stored, strict=True))
                if vector is None or row["tier"] in memory.int8_tiers]
        # A result is embedded after its call where the memory's writers embed it so.
        calls = memory.call_heads([r for r in rows if r["block_type"] == "tool_result"]) \
            if memory.results_read_calls else {}
        if redo:
            fresh = embedder.embed([embedding_input(rows[i]["text"] or "", rows[i]["block_type"], rows[i]["tool_name"],
                                                    calls.get(rows[i]["id"])) for i in redo])
            for i, vector in zip(redo, fresh, strict=True):
                stored[i] = vector
        vectors = np.asarray(stored, np.float32)
        query_vectors = embedder.embed([q["question"] for q in qrels])
        return cls(name, qrels, {r["id"]: r for r in rows}, vectors, [r["id"] for r in rows], query_vectors, splits,
                   calls)

    def lexical(self, representation: str) -> list[list[tuple[str, float]]]:
        """BM25 candidates per question: ``product`` (what ships), ``previous``
        (before this work) or ``previous documents`` (old documents, new tokens)."""
        if representation not in self._lexical:
            from funes.memory import lexical
            from funes.memory.documents import documents_from_rows

            rows = list(self.rows.values())
            documents = documents_from_rows(rows) if representation == "product" else previous_documents(rows)
            shipped = lexical.tokenize
            if representation == "previous":
                lexical.tokenize = previous_tokenize
            try:
                index = lexical.LexicalIndex(None, [], 0).with_transient(list(documents), list(documents.values()))
                self._lexical[representation] = [index.search(q["question"], POOL) for q in self.qrels]
            finally:
                lexical.tokenize = shipped
        return self._lexical[representation]

    def dense(self) -> list[list[tuple[str, float]]]:
        """Vector candidates per question, as a memory holding vectors only for the
        rows of :attr:`dense_tiers` would return them (rows without one are left to
        BM25, as in the product), less the :attr:`pending` ones."""
        key = (self.dense_tiers, self.pending, self.vector_set, self.query_set)
        if key not in self._dense:
            vectors = self.alternative_vectors[self.vector_set][0] if self.vector_set else self.vectors
            queries = self.alternative_vectors[self.query_set][1] if self.query_set else self.query_vectors
            similarity = queries @ vectors.T
            if self.dense_tiers is not None:
                searched = np.array([(self.rows[i]["tier"] or 0) in self.dense_tiers for i in self.ids])
                similarity[:, ~searched] = -np.inf
            if self.pending:
                similarity[:, np.array([i in self.pending for i in self.ids])] = -np.inf
            pool = min(POOL, int(np.isfinite(similarity[0]).sum()))
            out = []
            for row in similarity:
                top = np.argpartition(-row, pool - 1)[:pool] if pool else np.array([], dtype=int)
                top = top[np.argsort(-row[top], kind="stable")]
                out.append([(self.ids[i], float(row[i])) for i in top])
            self._dense[key] = out
        return self._dense[key]

    def cosines(self, question: int, candidates: Sequence[tuple[str, float]]) -> dict[str, float]:
        """Question ``question``'s cosine to each of ``candidates`` that :meth:`dense`
        could return (a vector of :attr:`dense_tiers`, not pending), as recall reads
        BM25's candidates with their vectors."""
        vectors = self.alternative_vectors[self.vector_set][0] if self.vector_set else self.vectors
        queries = self.alternative_vectors[self.query_set][1] if self.query_set else self.query_vectors
        if self._positions is None:
            self._positions = {chunk: n for n, chunk in enumerate(self.ids)}
        held = [chunk for chunk, _ in candidates if chunk not in self.pending
                and (self.dense_tiers is None or (self.rows[chunk]["tier"] or 0) in self.dense_tiers)]
        return {chunk: float(vectors[self._positions[chunk]] @ queries[question]) for chunk in held}

    def backlog(self, tiers: frozenset[int], embedded: Mapping[int, float]) -> frozenset[str]:
        """The rows of ``tiers`` a backlog still owes a vector once ``embedded[tier]``
        (a share) of each tier has one, filled newest first as the product's backlog
        is (a tier not named: none embedded yet)."""
        pending: set[str] = set()
        for tier in tiers:
            rows = sorted((r for r in self.rows.values() if r["tier"] == tier),
                          key=lambda r: (r["ts"] or "", r["id"]), reverse=True)
            pending.update(r["id"] for r in rows[round(len(rows) * embedded.get(tier, 0.0)):])
        return frozenset(pending)

    def reembedded(self, name: str, embedder, tiers: frozenset[int] | None = None) -> None:
        """The rows of ``tiers`` (None: every row) and every question embedded again
        by ``embedder`` (what the product would store and ask with: a tool result after
        its call's head, as :meth:`load` reads it), the other rows keeping their fp32
        vectors, kept as :attr:`alternative_vectors` ``name``."""
        from funes.indexing import embedding_input

        chosen = [n for n, i in enumerate(self.ids) if tiers is None or self.rows[i]["tier"] in tiers]
        vectors = self.vectors.copy()
        if chosen:
            rows = [self.rows[self.ids[n]] for n in chosen]
            vectors[chosen] = embedder.embed([embedding_input(row["text"] or "", row["block_type"], row["tool_name"],
                                                              self.call_heads.get(row["id"])) for row in rows])
        self.alternative_vectors[name] = (vectors, embedder.embed([q["question"] for q in self.qrels]))

    def hits(self, representation: str, fusion, ranking, shown: str = "passage") -> dict[str, list[dict]]:
        """Top-10 hits per question; ``ranking`` None: the fused order as it is
        (no ranking stage, as before this work); ``shown``: what a hit's text is,
        the product's ``passage`` (retrieval/passage.py) or the bare ``chunk``."""
        lexical = self.lexical(representation) if fusion.uses_lexical else [[] for _ in self.qrels]
        dense = self.dense() if fusion.uses_dense else [[] for _ in self.qrels]
        out = {}
        for n, (question, lex, den) in enumerate(zip(self.qrels, lexical, dense, strict=True)):
            cosines = self.cosines(n, lex) if fusion.uses_dense else {}
            fused = fusion.fuse(lex, den, POOL, () if self.pending_at_floor else self.pending, cosines)
            ranked = fused if ranking is None else ranking.rank(fused, self.rows, self.splits, question["question"])
            out[question["qid"]] = [{"session_id": self.rows[c]["session_id"], "text": self.shown(c, shown)}
                                    for c, _ in ranked[:10]]
        return out

    def shown(self, chunk: str, shown: str = "passage") -> str:
        """The text a hit on ``chunk`` shows (see :meth:`hits`)."""
        from funes.retrieval.passage import passage
        from funes.retrieval.ranking import block_key

        row = self.rows[chunk]
        if shown == "chunk":
            return row["text"]
        if self._pieces is None:
            blocks: dict[tuple[str, str, int], list[dict]] = {}
            for r in self.rows.values():
                blocks.setdefault(block_key(r), []).append(r)
            self._pieces = {key: [(int(r["char_start"] or 0), r["text"] or "")
                                  for r in sorted(found, key=lambda r: r["split_idx"] or 0)]
                            for key, found in blocks.items()}
        return passage(self._pieces[block_key(row)], (int(row["char_start"] or 0), row["text"] or ""),
                       row["block_type"])


def per_question(kit_score, dev: DevSet, hits: dict[str, list[dict]]) -> dict[str, dict]:
    """The kit's metrics per question, plus the gold turns matched in the top 10 per block type
    (``gold_<type>`` = (matched, total))."""
    out = {}
    for question in dev.qrels:
        n_gold, ranked = kit_score.judge(question["gold"], hits.get(question["qid"], []), "text")
        metrics = kit_score.question_metrics(n_gold, ranked)
        matched = set().union(*ranked[:10]) if ranked else set()
        for block in BLOCK_TYPES:
            golds = [i for i, g in enumerate(question["gold"]) if g.get("block", "text") == block]
            metrics[f"gold_{block}"] = (sum(i in matched for i in golds), len(golds))
        out[question["qid"]] = metrics
    return out


def summary(dev: DevSet, per_q: dict[str, dict], qids: set[str] | None = None) -> dict:
    """Means overall and per category, and R@10 per gold block type."""
    questions = [q for q in dev.qrels if qids is None or q["qid"] in qids]

    def mean(group: list[dict]) -> dict:
        return {m: sum(per_q[q["qid"]][m] for q in group) / len(group) for m in ("R@1", "R@5", "R@10", "MRR@10",
                                                                                    "nDCG@10")} | {"n": len(group)}

    categories: dict[str, list[dict]] = {}
    for question in questions:
        categories.setdefault(str(question.get("category_name") or question.get("category")), []).append(question)
    blocks = {}
    for block in BLOCK_TYPES:
        matched = sum(per_q[q["qid"]][f"gold_{block}"][0] for q in questions)
        total = sum(per_q[q["qid"]][f"gold_{block}"][1] for q in questions)
        if total:
            blocks[block] = {"R@10": matched / total, "n": total}
    return {"overall": mean(questions), "by_category": {c: mean(g) for c, g in sorted(categories.items())},
            "by_block": blocks}


def ranking_grid(dev: DevSet) -> list[tuple[float, object]]:
    """(dense weight, Ranking) settings the cross-validation chooses among.  On a
    set with no tool blocks and no split blocks (LoCoMo) the tool and long-block
    weights change nothing, so only their neutral values are tried there."""
    from funes.retrieval.ranking import TOOL_BLOCKS, Ranking

    tools = any(r["block_type"] in TOOL_BLOCKS for r in dev.rows.values())
    split = any(n > 1 for n in dev.splits.values())
    grid = []
    for dense, question, tool, exponent, session in itertools.product(
            (0.3, 0.4, 0.5), (1.0, 0.8, 0.7), (1.0, 0.9, 0.8) if tools else (1.0,),
            (0.0, 0.1, 0.2) if split else (0.0,), (0.0, 0.2, 0.3)):
        grid.append((dense, Ranking(tool_weight=tool, question_weight=question, split_exponent=exponent,
                                    session_weight=session)))
    return grid


def cross_validate(kit_score, dev: DevSet, group_of: Callable[[dict], str]) -> dict:
    """Leave-one-group-out over :func:`ranking_grid` with the shipped representation."""
    from funes.retrieval.fusion import Fusion

    settings = ranking_grid(dev)
    scored = [per_question(kit_score, dev, dev.hits("product", Fusion("convex", 1 - w, w), ranking))
              for w, ranking in settings]
    groups = sorted({group_of(q) for q in dev.qrels})
    held: dict[str, dict] = {}
    picks = {}
    for group in groups:
        train = [q["qid"] for q in dev.qrels if group_of(q) != group]
        best = max(range(len(settings)), key=lambda i: sum(scored[i][q]["R@10"] + scored[i][q]["MRR@10"]
                                                           for q in train))
        picks[group] = settings[best]
        held.update({q["qid"]: scored[best][q["qid"]] for q in dev.qrels if group_of(q) == group})
    return {"summary": summary(dev, held), "picks": picks, "settings": len(settings)}


def _neutral(dev: DevSet, dense: float, ranking) -> tuple:
    """The setting ``(dense, ranking)`` as it acts on ``dev``: the tool and long-block
    weights are no-ops on a set without tool blocks or split blocks (LoCoMo)."""
    from funes.retrieval.ranking import TOOL_BLOCKS

    tools = any(r["block_type"] in TOOL_BLOCKS for r in dev.rows.values())
    split = any(n > 1 for n in dev.splits.values())
    return (dense, ranking.question_weight, ranking.session_weight,
            ranking.tool_weight if tools else 1.0, ranking.split_exponent if split else 0.0)


def pooled_cross_validate(kit_score, devs: Sequence[tuple[DevSet, Callable[[dict], str]]]) -> dict:
    """Leave one session (coding) or conversation (LoCoMo) out of every set at once.

    Each fold chooses the setting of the full :func:`ranking_grid` with the best sum,
    over the sets, of each set's mean R@10 + MRR@10 on its questions outside the fold
    (a mean per set, so LoCoMo's 1,018 questions do not outvote 58 coding ones), and
    scores that setting on the fold.  Also the in-sample choice on everything, and the
    shipped default's in-sample figures, per set."""
    from funes.retrieval.fusion import DEFAULT as FUSION, Fusion
    from funes.retrieval.ranking import DEFAULT as RANKING

    settings = max((ranking_grid(dev) for dev, _ in devs), key=len)
    scored: list[list[dict]] = []  # [set][setting] → per question
    for dev, _group in devs:
        cache: dict[tuple, dict] = {}
        per_setting = []
        for dense, ranking in settings:
            key = _neutral(dev, dense, ranking)
            if key not in cache:
                cache[key] = per_question(kit_score, dev, dev.hits("product", Fusion("convex", 1 - dense, dense),
                                                                   ranking))
            per_setting.append(cache[key])
        scored.append(per_setting)
        print(f"[{dev.name}] {len(cache)} distinct settings scored", file=sys.stderr, flush=True)

    def objective(index: int, left_out: tuple[int, str] | None) -> float:
        total = 0.0
        for position, (dev, group_of) in enumerate(devs):
            kept = [q["qid"] for q in dev.qrels if left_out is None or (position, group_of(q)) != left_out]
            if kept:
                total += sum(scored[position][index][q]["R@10"] + scored[position][index][q]["MRR@10"]
                             for q in kept) / len(kept)
        return total

    shipped_key = (FUSION.dense_weight, RANKING)
    shipped = next(i for i, (w, r) in enumerate(settings) if (w, r) == shipped_key)
    best_in_sample = max(range(len(settings)), key=lambda i: objective(i, None))
    out: dict = {"settings": len(settings), "sets": {}, "picks": {},
                 "in_sample_choice": settings[best_in_sample], "shipped": settings[shipped]}
    held: list[dict[str, dict]] = [{} for _ in devs]
    for position, (dev, group_of) in enumerate(devs):
        for group in sorted({group_of(q) for q in dev.qrels}):
            best = max(range(len(settings)), key=lambda i: objective(i, (position, group)))
            out["picks"][f"{dev.name}/{group}"] = settings[best]
            held[position].update({q["qid"]: scored[position][best][q["qid"]]
                                   for q in dev.qrels if group_of(q) == group})
    for position, (dev, _group) in enumerate(devs):
        out["sets"][dev.name] = {"shipped": summary(dev, scored[position][shipped]),
                                 "in_sample_choice": summary(dev, scored[position][best_in_sample]),
                                 "left_out": summary(dev, held[position])}
    return out


ANSWER_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7)


def answer_weight_cross_validate(kit_score, devs: Sequence[tuple[DevSet, Callable[[dict], str]]]) -> dict:
    """The weight of a candidate holding the kind of answer its question asks for
    (:attr:`Ranking.answer_weight`, retrieval/answer_types.py), every other setting
    as shipped, left out by session (coding) or conversation (LoCoMo) over every set
    at once, as :func:`pooled_cross_validate` chooses: each fold takes the weight of
    :data:`ANSWER_WEIGHTS` with the best sum over the sets of each set's mean R@10 +
    MRR@10 outside the fold.  Also each weight's in-sample figures per set, and how
    many questions of each set ask for a kind of answer, and what reading the
    candidates for it costs (:func:`answer_check_ms`)."""
    import dataclasses

    from funes.retrieval.answer_types import asked_types
    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.ranking import DEFAULT as RANKING

    scored = [[per_question(kit_score, dev, dev.hits("product", FUSION, dataclasses.replace(RANKING, answer_weight=w)))
               for w in ANSWER_WEIGHTS] for dev, _group in devs]

    def objective(index: int, left_out: tuple[int, str]) -> float:
        total = 0.0
        for position, (dev, group_of) in enumerate(devs):
            kept = [q["qid"] for q in dev.qrels if (position, group_of(q)) != left_out]
            if kept:
                total += sum(scored[position][index][q]["R@10"] + scored[position][index][q]["MRR@10"]
                             for q in kept) / len(kept)
        return total

    picks: dict[str, float] = {}
    held: list[dict[str, dict]] = [{} for _ in devs]
    for position, (dev, group_of) in enumerate(devs):
        for group in sorted({group_of(q) for q in dev.qrels}):
            best = max(range(len(ANSWER_WEIGHTS)), key=lambda i: objective(i, (position, group)))
            picks[f"{dev.name}/{group}"] = ANSWER_WEIGHTS[best]
            held[position].update({q["qid"]: scored[position][best][q["qid"]]
                                   for q in dev.qrels if group_of(q) == group})
    return {"weights": ANSWER_WEIGHTS, "picks": picks,
            "sets": {dev.name: {"asking": sum(bool(asked_types(q["question"])) for q in dev.qrels),
                                "questions": len(dev.qrels), "check_ms": answer_check_ms(dev),
                                "by_weight": [summary(dev, scored[position][i]) for i in range(len(ANSWER_WEIGHTS))],
                                "left_out": summary(dev, held[position])}
                     for position, (dev, _group) in enumerate(devs)}}


def answer_check_ms(dev: DevSet, repeats: int = 20) -> dict[str, float]:
    """What the ranking's answer-type check costs a recall whose question asks for a
    kind: the search of each candidate of its fused pool (both retrievers' top
    :data:`POOL`, merged) for the kinds asked, timed over the set's questions that ask (best of ``repeats``
    each, so a descheduled run does not count); p50 / p95 ms, and the pool's mean size."""
    import statistics
    import time

    from funes.retrieval.answer_types import asked_types, holds_answer
    from funes.retrieval.fusion import DEFAULT as FUSION

    lexical, dense = dev.lexical("product"), dev.dense()
    times, sizes = [], []
    for question, lex, den in zip(dev.qrels, lexical, dense, strict=True):
        kinds = asked_types(question["question"])
        if not kinds:
            continue
        rows = [dev.rows[chunk] for chunk, _ in FUSION.fuse(lex, den, POOL, dev.pending)]
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for row in rows:
                holds_answer(row, kinds)
            best = min(best, time.perf_counter() - started)
        times.append(best * 1000)
        sizes.append(len(rows))
    if not times:
        return {}
    return {"p50": round(statistics.median(times), 2), "p95": round(statistics.quantiles(times, n=20)[-1], 2)
            if len(times) > 1 else round(times[0], 2), "pool": round(statistics.mean(sizes))}


def group_of(name: str):
    return (lambda q: q["gold"][0]["session_id"]) if name in CODING_KITS else (lambda q: q["conv"])


def dev_sets(kit: Path, corpora: dict[str, Path], what: str):
    """(name, loaded :class:`DevSet`, the kit's scorer module) per set."""
    sys.path.insert(0, str(kit))
    import score as sc

    for name, corpus in corpora.items():
        print(f"[{name}] {what} …", file=sys.stderr, flush=True)
        yield name, DevSet.load(name, corpus, kit), sc


def cell(summary: dict | None, key: str = "overall") -> str:
    if not summary:
        return "—"
    o = summary[key] if key == "overall" else summary
    return f"{o['R@10']:.3f} / {o['MRR@10']:.3f}"
