"""The tier, precision and backlog ablations behind ``eval_recall.py --tiers`` and
``--backlog``: the shipped ranking over each dev set's memory as if it held vectors
only for some tiers, at another precision, or with a backlog still owed vectors."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_ablation import DEV_SETS, cell, dev_sets, group_of  # noqa: E402


# Which tiers' vectors a memory holds (None: all; funes.traces.model.TIER_OF_BLOCK:
# 1 text and thinking, 2 tool calls, 3 tool results), for --tiers.
TIER_SETTINGS = (
    ("every tier (all rows have vectors)", None),
    ("none (BM25 only)", frozenset()),
    ("tier 1 only (text, thinking)", frozenset({1})),
    ("tiers 1 + 2 (tool results left out)", frozenset({1, 2})),
    ("tiers 1 + 3 (tool calls left out)", frozenset({1, 3})),
    ("tiers 2 + 3 (text and thinking left out)", frozenset({2, 3})),
)
TIERS_SECTION = "Recall by embedded tier and precision (dev sets)"
TIERS_NOTES = """\
Which tiers' vectors pay.  Every question of every dev set is asked again in
process with the shipped fusion and ranking (`recall_ablation.py`: without the
rerank stage and without a tool call's result in its hit, so every figure is
below the CLI's in "Recall quality"), as if the memory held vectors only for the
tiers named: the other rows are left out of the vector search and found by BM25
alone, as in a memory whose backlog stopped there (the vectors that exist are
fp32, a tool result's read after its call's head as the product embeds it).
LoCoMo has text only, so every setting that keeps tier 1 is one run there.
Chunks: coding dev tier 1 (text, thinking) 12 %, tier 2 (tool calls) 26 %, tier
3 (tool results) 61 %; coding dev2 14 %, 35 %, 51 %.
*Tool calls' vectors* (every tier against tiers 1 + 3), in sample: coding dev
R@10 −0.010, MRR@10 +0.005; coding dev2 +0.017 (one question, session
8a2518dd), MRR@10 −0.020; left out, where each fold picks the ranking weights
again, +0.005 / +0.014 and +0.017 / +0.038.  Within one standard error on every
set (coding dev R@10 about 0.045, coding dev2 0.06), against a third to a
half more chunks to embed: they stay out by default (`funes index --embed-all` embeds
them).  *Tool results' vectors* (tiers 1 + 3 against 1 + 2): coding dev R@10
+0.045 and MRR@10 +0.028, tool-output questions 0.576 → 0.722, tool-result gold
0.562 → 0.750; coding dev2 +0.052 / +0.062, tool-result gold 0.595 → 0.714;
without them the fusion's dense share lifts text over tool output: they stay.
*Text and thinking vectors* (tiers 1 + 3 against 2 + 3): coding dev +0.018 /
+0.050, coding dev2 +0.017 / +0.027, LoCoMo +0.034 / +0.010: they stay, first
in the backlog (then tool results, newest first within a tier).  The default,
tiers 1 + 3 (`funes.embedding.DENSE_TIERS`, pinned in
`benchmarks/recall_choice.json`), scores 0.755 / 0.496 on coding dev, 0.641 /
0.421 on coding dev2 and 0.797 / 0.576 on LoCoMo in process.  The leave-one-out
estimates (`--tiers-cv`) choose the ranking grid again without each fold (243
settings a row on the coding sets; about 25 minutes for the whole command); the
per-fold rows are at the shipped weights.
*int8* (`funes.embedding.quantise_onnx`: the fused BERT graph, one QAttention a
layer, dynamic per-channel int8, derived locally from the fp32 export, one text a
run: `CPU_BATCH_SIZE`), against every row's fp32 vector.  *What a memory created
now stores* (`funes.embedding.INT8_TIERS`: text, thinking and tool results at
int8, queries fp32) against the same tiers at fp32: coding dev 0.755 / 0.494
against 0.755 / 0.496 in sample, 0.752 / 0.462 against 0.752 / 0.472 left out;
coding dev2 0.641 / 0.416 against 0.641 / 0.421, 0.658 / 0.389 against 0.649 /
0.394; LoCoMo 0.794 / 0.577 against 0.797 / 0.576, 0.796 / 0.570 against 0.793
/ 0.576.  Text embeds a third faster at int8 (BENCHMARKS "Embedding", the bulk
backlog: 84 against 63 chunks/s on tier 1 of the 300k day-zero memory), which is
what bounds how soon a first index's text is searchable by meaning: shipped.  A
memory keeps the stamp it was created with.  *Every document at int8* (tool
calls too) with fp32 queries: coding dev 0.745 / 0.501, coding dev2 0.658 /
0.395, LoCoMo 0.794 / 0.577; with int8 queries too, 0.745 / 0.496, 0.641 /
0.396 and 0.795 / 0.577.
"""


def tier_ablation(kit: Path, corpora: dict[str, Path], precisions: Sequence[str] = (),
                  cross_validate: bool = False) -> dict:
    """The shipped ranking with vectors only for some tiers (rows without one found by
    BM25 only, as in a memory whose backlog stopped there), and with documents and
    queries embedded at other precisions: in process, per set, with the per-fold
    figures (and with ``cross_validate`` the leave-one-out estimate: the ranking
    grid chosen again without each fold, 243 settings a tier setting on coding)."""
    import recall_ablation as ra

    from funes.embedding import DENSE_TIERS, INT8_TIERS
    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.ranking import DEFAULT as RANKING

    out: dict = {}
    for name, dev, sc in dev_sets(kit, corpora, "tier ablation"):
        grouping = group_of(name)
        groups = sorted({grouping(q) for q in dev.qrels})
        settings: list[tuple[str, frozenset[int] | None, str | None, str | None]] = [
            (label, tiers, None, None) for label, tiers in TIER_SETTINGS]
        for precision in precisions:
            embedder = embedder_at(precision)
            dev.reembedded(precision, embedder)
            settings += [(f"{precision} documents, fp32 queries", None, precision, None),
                         (f"{precision} documents, {precision} queries", None, precision, precision)]
            if precision == "int8":  # what a memory created now stores (funes.embedding.INT8_TIERS)
                dev.reembedded("new memories", embedder, frozenset(INT8_TIERS))
                settings.append((new_memory_run(INT8_TIERS), frozenset(DENSE_TIERS), "new memories", None))
        present = frozenset(row["tier"] for row in dev.rows.values())
        runs, measured = {}, {}
        for label, tiers, vectors, queries in settings:
            # A set without some tier (LoCoMo has text only) scores a setting that
            # differs only in that tier the same: measured once.
            searched = present if tiers is None else tiers & present
            if (searched, vectors, queries) in measured:
                runs[label] = measured[searched, vectors, queries]
                continue
            dev.dense_tiers, dev.vector_set, dev.query_set = tiers, vectors, queries
            per_q = ra.per_question(sc, dev, dev.hits("product", FUSION, RANKING))
            folds = {g: ra.summary(dev, per_q, {q["qid"] for q in dev.qrels if grouping(q) == g})["overall"]
                     for g in groups}
            runs[label] = measured[searched, vectors, queries] = {
                "summary": ra.summary(dev, per_q), "folds": folds,
                "cv": ra.cross_validate(sc, dev, grouping)["summary"] if cross_validate else None}
        chunks = {}
        for row in dev.rows.values():
            chunks[row["tier"]] = chunks.get(row["tier"], 0) + 1
        out[name] = {"runs": runs, "chunks_by_tier": dict(sorted(chunks.items()))}
    return out


BACKLOG_SECTION = "Recall while vectors are pending (dev sets)"
# (label, the share of each default tier embedded, newest first) per set: a first
# index fills text and thinking, then tool results (funes.indexing, the backlog).
_CODING_BACKLOG = (("text 10 % embedded, tool results pending", {1: 0.1}),
                   ("text 50 % embedded, tool results pending", {1: 0.5}),
                   ("text embedded, tool results pending", {1: 1.0}),
                   ("text embedded, tool results 50 % embedded", {1: 1.0, 3: 0.5}))
BACKLOG_STATES = {
    "coding": _CODING_BACKLOG,
    "coding2": _CODING_BACKLOG,
    "locomo": (("text 10 % embedded", {1: 0.1}), ("text 50 % embedded", {1: 0.5})),
}
BACKLOG_NOTES = """How recall fares while a memory's backlog fills (a first index of a big
history spends minutes to an hour there).  In process, as `--tiers` does
(`recall_ablation.py`: the fused ranking and the shipped `Ranking`, without the
rerank stage and without a tool call's result in its hit, so every figure is
below the CLI's in "Recall quality"), with the default tiers
(`funes.embedding.DENSE_TIERS`) and of each only the newest share holding a
vector, as the backlog fills them; the other rows of those tiers are *pending*,
left out of the vector search.  Two ways to score a pending candidate that BM25
returned: at the dense list's floor (its lowest returned cosine, the form this
replaced) or at the dense list's cosine at the candidate's BM25 rank
(`funes.retrieval.fusion`, as shipped).  A memory with every vector in scores
the same either way (no row is pending), and rows a memory never embeds (tool
calls) keep the floor in both.  Leave-one-out: the ranking grid chosen again
without each fold (`--tiers-cv`'s).

In sample, by BM25 rank scores above the floor in every state of both coding
sets (R@10 +0.010 to +0.078; MRR@10 above or within 0.002), and the floor sinks a coding memory below BM25
alone where its text is a tenth embedded (coding dev 0.677 against 0.702,
coding dev2 0.511 against 0.537) or half (coding dev2 0.494 against 0.537),
where by BM25 rank it stays level or above (0.705, 0.546, 0.572).  LoCoMo (text
only) moves by 0.010 or less either way.  Left out, by BM25 rank scores below
the floor on the coding sets only where a tenth of the text is embedded (coding
dev 0.712 / 0.382 against 0.717 / 0.426; coding dev2 R@10 0.503 against 0.520,
MRR@10 0.377 against 0.366), and LoCoMo within 0.005.

Measured at bc7ff37 with a scratch script over the same ablation and not
shipped: *every* candidate without a vector scored by its BM25 rank, tool calls
too, cost a complete coding memory (tiers 1 + 3) R@10 / MRR@10 0.777 / 0.427 in
sample and 0.752 / 0.414 left out against 0.797 / 0.443 and 0.787 / 0.431, so
only rows the backlog owes are scored so.  A pending row given instead the mean
cosine of the BM25 candidates that have one: with the oldest 50 % / 90 % of text
and tool results pending, 0.787 / 0.432 and 0.757 / 0.386 in sample, 0.767 /
0.429 and 0.737 / 0.390 left out, against 0.782 / 0.435, 0.757 / 0.399, 0.767 /
0.420 and 0.762 / 0.409 by BM25 rank.  And for the backlog's size: vectors for
the first chunk of each tool result only (the others are 69 % of tool-result
chunks and 80 % of their characters in the 300k day-zero history; 2,098 of
2,717 on coding) scored 0.790 / 0.436 in sample and 0.767 / 0.431 left out, a
loss of 0.020 R@10 left out, beyond the 0.015 the tier policy is held to
(tests/retrieval/test_recall_choice.py): tool results keep a vector for every
chunk.
"""


def backlog_ablation(kit: Path, corpora: dict[str, Path]) -> dict:
    """Each set's :data:`BACKLOG_STATES` scored with pending rows at the floor and by
    their BM25 rank, in sample and left out, with BM25 alone and every vector in as
    the bounds."""
    import recall_ablation as ra

    from funes.embedding import DENSE_TIERS
    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.ranking import DEFAULT as RANKING

    out: dict = {}
    for name, dev, sc in dev_sets(kit, corpora, "backlog ablation"):
        grouping = group_of(name)
        tiers = frozenset(DENSE_TIERS)
        states = [("BM25 only (no vector yet)", frozenset(), frozenset(), False),
                  ("every vector in", tiers, frozenset(), False)]
        for label, shares in BACKLOG_STATES[name]:
            pending = dev.backlog(tiers, shares)
            states += [(f"{label}; pending at the floor (before)", tiers, pending, True),
                       (f"{label}; pending by BM25 rank (now)", tiers, pending, False)]
        runs = {}
        for label, searched, pending, at_floor in states:
            dev.dense_tiers, dev.pending, dev.pending_at_floor = searched, pending, at_floor
            dev.vector_set = dev.query_set = None
            per_q = ra.per_question(sc, dev, dev.hits("product", FUSION, RANKING))
            runs[label] = {"summary": ra.summary(dev, per_q), "pending": len(pending),
                           "cv": ra.cross_validate(sc, dev, grouping)["summary"]}
        out[name] = runs
    return out


def backlog_tables(result: dict) -> list[str]:
    lines = []
    for name, runs in result.items():
        lines += [f"**{DEV_SETS[name]}**, R@10 / MRR@10:", "",
                  "| state | rows pending | in sample | leave-one-out |", "| --- | --- | --- | --- |"]
        lines += [f"| {label} | {run['pending']:,} | {cell(run['summary'])} | {cell(run['cv'])} |"
                  for label, run in runs.items()]
        lines += [""]
    return lines


def new_memory_run(int8_tiers) -> str:
    """The ablation row of what a memory created now stores: the default tiers, those
    of ``int8_tiers`` at int8 (the rest fp32), queried at fp32."""
    return f"int8 for tiers {' + '.join(map(str, int8_tiers))}, fp32 queries (new memories)"


def embedder_at(precision: str):
    """The product's CPU embedder at ``precision`` (its int8 model derived from the
    cached fp32 export, as a memory stamped int8 gets it)."""
    from funes.embedding import PRECISIONS, OnnxEmbedder

    if precision not in PRECISIONS:
        raise SystemExit(f"unknown precision {precision!r}: {', '.join(PRECISIONS)}")
    return OnnxEmbedder(precision=precision)


def tier_choice(result: dict) -> dict:
    """The tiers embedded by default and those embedded at int8, with what every
    setting scored (for recall_choice.json)."""
    from funes.embedding import DENSE_TIERS, INT8_TIERS

    return {"tiers": list(DENSE_TIERS), "int8_tiers": list(INT8_TIERS), "measured": {
        name: {label: {"in_process": {m: round(run["summary"]["overall"][m], 4) for m in ("R@10", "MRR@10")},
                       **({"leave_one_out": {m: round(run["cv"]["overall"][m], 4) for m in ("R@10", "MRR@10")}}
                          if run["cv"] else {})}
               for label, run in found["runs"].items()} for name, found in result.items()}}


def tier_tables(result: dict) -> list[str]:
    lines = []
    for name, found in result.items():
        runs = found["runs"]
        tiers = ", ".join(f"tier {t}: {n:,}" for t, n in found["chunks_by_tier"].items())
        first = next(iter(runs.values()))
        groups = list(first["folds"])
        categories = sorted(first["summary"]["by_category"])
        blocks = list(first["summary"]["by_block"])
        lines += [f"**{DEV_SETS[name]}** ({tiers} chunks), shipped ranking, in process, R@10 / MRR@10:", "",
                  "| vectors for | in sample | leave-one-out | " + " | ".join(
                      f"{c} ({first['summary']['by_category'][c]['n']})" for c in categories)
                  + (" | " + " | ".join(f"gold {b} R@10 ({first['summary']['by_block'][b]['n']})" for b in blocks)
                     if len(blocks) > 1 else "") + " |",
                  "|" + " --- |" * (3 + len(categories) + (len(blocks) if len(blocks) > 1 else 0))]
        for label, run in runs.items():
            by = run["summary"]["by_category"]
            row = (f"| {label} | {cell(run['summary'])} | {cell(run['cv'])} | "
                   + " | ".join(cell(by.get(c), "c") for c in categories))
            if len(blocks) > 1:
                row += " | " + " | ".join(f"{run['summary']['by_block'][b]['R@10']:.3f}" for b in blocks)
            lines.append(row + " |")
        lines += ["", f"Per {'session' if name == 'coding' else 'conversation'} (fold), R@10 / MRR@10:", "",
                  "| vectors for | " + " | ".join(f"{g[:8]} ({first['folds'][g]['n']})" for g in groups) + " |",
                  "|" + " --- |" * (len(groups) + 1)]
        for label, run in runs.items():
            lines.append(f"| {label} | " + " | ".join(
                f"{run['folds'][g]['R@10']:.3f} / {run['folds'][g]['MRR@10']:.3f}" for g in groups) + " |")
        lines += [""]
    return lines
