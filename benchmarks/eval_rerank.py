"""What a second stage earns over the fused ranking, on every dev set, in process.

For each question of each set (corpora built by eval_recall.py under
benchmarks/.work), recall's top ``--candidates`` with the rerank stage named by
``--reranker`` (as ``FUNES_RERANKER`` names it, e.g. ``maxsim``) and without it;
each ordering is scored by the kit (text match: R@10, MRR@10; weight 0 is the fused ranking, 1 the stage alone)
and by the evidence an agent reads (*1k*: whether the gold text is within the first
1,000 tokens of the agent format `funes recall` prints for that ordering's first
hits, benchmarks/evidence.py); a blend ``w·stage + (1−w)·fused`` (both min–max
normalised over the candidates) is chosen leave-one-session-out (grouped by the
gold's session): each fold takes the weight with the best sum over the sets of each
set's mean R@10 + MRR@10 + 1k outside the fold, so that no set outvotes another by
its number of questions, and the evidence an agent reads counts beside the rank of
the first right hit.  A hit is judged by the text the CLI's ``--json`` gives the
kit: its passage, and a tool call's result after it.
The stage's own time per query is reported (warm: past each set's first
:data:`WARM_UP` questions).  With ``--answer-weights``, the candidates are captured
again under each of those weights of a candidate holding the kind of answer its
question asks for (``Ranking.answer_weight``, retrieval/answer_types.py; the shipped
weight is always one) and each fold chooses that weight and the stage's together, by
the same rule: the last two weights of the ranking, chosen jointly, left out by
session.  ``--dense-weights`` does the same for the fusion's dense weight (BM25
taking the rest), over every pair of the two lists.  With ``--write``, the stage and
the weight most folds chose (with how many folds chose each) and each set's
left-out figures are recorded as the default in
``benchmarks/recall_choice.json`` ("rerank"), which
``tests/retrieval/test_recall_choice.py`` holds the code to and the table of
"Recall quality" reads (eval_recall.py); with ``--answer-weights`` (0 among them:
the ranking without the answer-type weight, what it is measured against) also the
answer-type weight most folds chose ("answer_types"), and with ``--dense-weights``
the dense weight most folds chose ("rerank", "dense_weight"); a choice of either
that recall does not ship is refused.  ``--write`` also replaces the section
"Recall rerank stage (dev sets)" of BENCHMARKS.md with the run's table and its
folds' picks.

    nice -n 5 .venv/bin/python benchmarks/eval_rerank.py --reranker maxsim-static --write
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from eval_recall import CHOICE, eval_dir  # noqa: E402
from evidence import cli_memory, gold_shown  # noqa: E402
from recall_ablation import DEV_SETS  # noqa: E402
from report import machine, write_section  # noqa: E402

CORPORA = {"coding": "corpus-coding-dev", "coding2": "corpus-coding-dev2", "locomo": "corpus-dev"}
WARM_UP = 5  # the first calls of a set, not timed as warm
WEIGHTS = [round(w, 2) for w in np.linspace(0, 1, 11)]
SHOWN_WEIGHTS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 1.0)  # the table's columns, besides the chosen weight
SECTION = "Recall rerank stage (dev sets)"
NOTES = """In process, on the memories "Recall quality" builds: each set's top 30 candidates of recall
as it ships, captured once per answer-type weight and fusion dense weight listed, each
ordering judged by the text `funes recall --json` hands the kit (a hit's passage, and a
tool call's result after it) and by *1k*, whether the gold text is within the first
1,000 tokens of that ordering's first hits rendered in the agent format as `funes
recall` prints them (neighbours and a call's result included). R@10 / MRR@10 / 1k by
the stage's weight w over the ranking as it ships (0: the fused ranking; 1: the stage
alone). *Left out by session*: each fold (every gold session of the three sets left out
in turn) takes the answer-type weight, the fusion's dense weight and the stage's weight
with the best sum over the sets of each set's mean R@10 + MRR@10 + 1k on the rest, and is
scored on the session left out. The stage's own time is warm (past each set's first five
questions) on shared cores. The setting most folds chose ships (`Ranking.answer_weight`,
`Fusion`, `WordPieceMaxSim.blend_weight`), recorded in `benchmarks/recall_choice.json`
and held by `tests/retrieval/test_recall_choice.py`; why, and what was tried: "Decisions",
"Late interaction".
"""


class Timed:
    """The stage, timing each call."""

    def __init__(self, stage):
        self.stage, self.model_id, self.ms = stage, stage.model_id, []

    def score(self, query, passages):
        started = time.perf_counter()
        out = self.stage.score(query, passages)
        self.ms.append((time.perf_counter() - started) * 1000)
        return out


def normalised(values: np.ndarray) -> np.ndarray:
    span = values.max() - values.min()
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


def run_set(sc, corpus: Path, reranker: str, candidates: int, answer_weight: float | None = None,
            dense_weight: float | None = None) -> tuple[list[dict], list[float]]:
    """Per question: its gold, group and its metrics at each of :data:`WEIGHTS` of the
    stage over the candidates ranked as recall ships or with another
    ``answer_weight`` or fusion ``dense_weight`` (BM25 taking the rest)."""
    from funes.reranking import load_reranker
    from funes.retrieval.search import Recaller

    os.environ["FUNES_CACHE_DIR"] = str(corpus / "home" / ".funes" / "cache")
    stage, reason = load_reranker(reranker)
    if stage is None:
        raise SystemExit(f"no reranker {reranker}: {reason}")
    timed = Timed(stage)
    recaller = Recaller.open(cli_memory(corpus), rerank=False)
    recaller.reranker = timed
    if answer_weight is not None:
        recaller.ranking = dataclasses.replace(recaller.ranking, answer_weight=answer_weight)
    if dense_weight is not None:
        recaller.fusion = dataclasses.replace(recaller.fusion, lexical_weight=round(1 - dense_weight, 6),
                                              dense_weight=dense_weight)
    rows = []
    for q in sc.read_jsonl(corpus / "qrels.jsonl"):
        result = recaller.recall(q["question"], k=candidates, candidates=candidates)
        rows.append({"q": q, "group": f"{corpus.name}:{q['gold'][0]['session_id']}",
                     "at": per_weight(sc, q["gold"], result)})
    return rows, timed.ms[WARM_UP:]


def per_weight(sc, gold: list[dict], result) -> dict[float, dict]:
    """One question's metrics at each of :data:`WEIGHTS`: the kit's over the candidates
    ordered by the blend, and 1k over the agent format of its first ``DEFAULT_K``
    (the default `funes recall`, neighbours and a call's result as it shows them)."""
    from funes.retrieval.bounds import CHARS_PER_TOKEN, DEFAULT_K
    from funes.retrieval.format import format_recall
    from funes.retrieval.search import RecallResult, rank_key

    hits = result.hits
    if not hits:
        empty = {**sc.question_metrics(*sc.judge(gold, [], "text")), "1k": 0.0}
        return {w: empty for w in WEIGHTS}
    shown = [{"session_id": h.session_id, "text": h.shown_text()} for h in hits]
    fused = normalised(np.array([h.scores["fused"] for h in hits]))
    stage = normalised(np.array([h.scores["rerank"] for h in hits]))
    rendered: dict[tuple[int, ...], float] = {}  # a first k's 1k, rendered once
    out = {}
    for weight in WEIGHTS:
        blended = weight * stage + (1 - weight) * fused
        for hit, score in zip(hits, blended):
            hit.score = float(score)
        order = sorted(range(len(hits)), key=lambda i: rank_key(hits[i]))
        metrics = sc.question_metrics(*sc.judge(gold, [shown[i] for i in order], "text"))
        first = tuple(order[:DEFAULT_K])
        if first not in rendered:
            output = format_recall(RecallResult(query=result.query, hits=[hits[i] for i in first],
                                                memory_label=result.memory_label, reranker=result.reranker,
                                                reranker_note=None, elapsed_ms=0.0))
            rendered[first] = float(gold_shown(sc, gold, output[:1_000 * CHARS_PER_TOKEN]))
        out[weight] = {**metrics, "1k": rendered[first]}
    return out


MEASURES = ("R@10", "MRR@10", "1k")


def mean(per: list[dict]) -> dict:
    return {k: statistics.fmean(m[k] for m in per) for k in MEASURES}


def stage_table(report: dict, chosen_weight: float) -> str:
    """The section's table (a row per set) and its folds' picks, from the run's report."""
    columns = sorted({*SHOWN_WEIGHTS, chosen_weight})

    def figures(m: dict) -> str:
        return " / ".join(f"{m[k]:.3f}" for k in MEASURES)

    lines = ["| set | " + " | ".join(f"w {w:g}" for w in columns) + " | left out by session | stage p50 / p95 |",
             "| --- |" + " --- |" * (len(columns) + 2)]
    for name, s in report["sets"].items():
        lines.append(f"| {DEV_SETS.get(name, name)} | " + " | ".join(figures(s["blends"][w]) for w in columns)
                     + f" | {figures(s['left_out'])} | {s['stage_ms_p50']} / {s['stage_ms_p95']} ms |")
    picks = report.get("folds_by_answer_dense_and_stage_weight")
    if picks:
        shown = "; ".join(f"{n} {'picks' if n == 1 else 'pick'} {' / '.join(setting.split(', '))}"
                          for setting, n in picks.items())
        lines += ["", f"Folds' picks (answer-type weight / dense weight / stage weight), {sum(picks.values())} "
                      f"folds: {shown}."]
    else:
        counts = report["folds_by_weight"]
        shown = "; ".join(f"{n} {'picks' if n == 1 else 'pick'} {w:g}" for w, n in counts.items())
        lines += ["", f"Folds' picks of the stage's weight, {sum(counts.values())} folds: {shown}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / ".work")
    ap.add_argument("--sets", default=",".join(CORPORA))
    ap.add_argument("--reranker", default="maxsim")
    ap.add_argument("--candidates", type=int, default=30)
    ap.add_argument("--answer-weights", type=lambda text: [float(w) for w in text.split(",")], default=[],
                    help="choose the answer-type weight together with the stage's, over the shipped one and "
                         "these (comma-separated)")
    ap.add_argument("--dense-weights", type=lambda text: [float(w) for w in text.split(",")], default=[],
                    help="choose the fusion's dense weight (BM25 taking the rest) together with the stage's, over "
                         "the shipped one and these (comma-separated)")
    ap.add_argument("--write", action="store_true",
                    help=f"record the stage and its chosen weight as the default in {CHOICE.name}")
    args = ap.parse_args(argv)
    kit = eval_dir(args.eval_dir)
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(kit))
    import score as sc

    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.ranking import DEFAULT as RANKING

    # One capture of every set's candidates per (answer-type weight, dense weight), the
    # shipped ones first: their capture is the tables' and ties go to them.
    answer_weights = [RANKING.answer_weight, *dict.fromkeys(w for w in args.answer_weights if w != RANKING.answer_weight)]
    dense_weights = [FUSION.dense_weight, *dict.fromkeys(w for w in args.dense_weights if w != FUSION.dense_weight)]
    if args.write and len(answer_weights) > 1 and 0.0 not in answer_weights:
        ap.error("--write with --answer-weights records the answer-type weight against none: list 0 among them")
    ranked = [(aw, dw) for aw in answer_weights for dw in dense_weights]
    captures = {key: {name: run_set(sc, args.work / CORPORA[name], args.reranker, args.candidates, *key)
                      for name in args.sets.split(",")} for key in ranked}
    sets = captures[ranked[0]]
    report = {"reranker": args.reranker, "candidates": args.candidates, "sets": {}}
    for name, (rows, ms) in sets.items():
        report["sets"][name] = {
            "n": len(rows), "blends": {w: mean([r["at"][w] for r in rows]) for w in WEIGHTS},
            "stage_ms_p50": round(statistics.median(ms), 1), "stage_ms_p95": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1)}
        if len(ranked) > 1:
            report["sets"][name]["by_answer_and_dense_weight"] = {
                ", ".join(map(str, key)): {w: mean([r["at"][w] for r in captures[key][name][0]]) for w in WEIGHTS} for key in ranked}

    # Leave one session out: the setting with the best sum over the sets of each set's
    # mean R@10 + MRR@10 + 1k outside the fold, applied to the left-out session's questions.
    def objective(setting: tuple[tuple[float, float], float], left_out: str) -> float:
        key, weight = setting
        total = 0.0
        for rows, _ in captures[key].values():
            rest = [r["at"][weight] for r in rows if r["group"] != left_out]
            if rest:
                total += sum(sum(m[k] for k in MEASURES) for m in rest) / len(rest)
        return round(total, 6)

    settings = [(key, w) for key in ranked for w in WEIGHTS]
    chosen = {}  # ties: the stage's lesser say, then the ranking listed first
    for group in sorted({r["group"] for rows, _ in sets.values() for r in rows}):
        chosen[group] = max(settings, key=lambda st: (objective(st, group), -st[1], -ranked.index(st[0])))
    for name, (rows, _) in sets.items():  # every capture lists a set's questions in one order
        report["sets"][name]["left_out"] = mean([captures[key][name][0][i]["at"][w]
                                                 for i, row in enumerate(rows) for key, w in [chosen[row["group"]]]])
    report["folds_by_weight"] = {w: n for w, n in sorted(Counter(w for _, w in chosen.values()).items())}
    picks = Counter((*key, w) for key, w in chosen.values())
    if len(ranked) > 1:
        report["folds_by_answer_dense_and_stage_weight"] = {", ".join(map(str, pick)): n
                                                           for pick, n in picks.most_common()}
    print(json.dumps(report, indent=1, default=str))
    if args.write:
        # The setting most folds chose (ties: the stage's lesser say).
        answer_weight, dense_weight, weight = max(sorted(picks, key=lambda pick: pick[2]), key=picks.__getitem__)
        if (answer_weight, dense_weight) != ranked[0]:
            raise SystemExit(f"most folds chose answer-type weight {answer_weight} and dense weight {dense_weight} "
                             f"with the stage at {weight}; recall ships {ranked[0][0]} and {ranked[0][1]}: set "
                             "Ranking.answer_weight and Fusion's weights, and run this again")
        from funes.late_interaction import MAXSIM_TOKENS

        recorded = json.loads(CHOICE.read_text(encoding="utf-8"))
        recorded["rerank"] = {
            "stage": args.reranker, "blend_weight": weight, "tokens": MAXSIM_TOKENS,
            "candidates": args.candidates, "folds_by_weight": {str(w): n for w, n in report["folds_by_weight"].items()},
            "answer_weights": answer_weights, "dense_weights": dense_weights,
            "measured": {name: {"fused": {m: round(v, 4) for m, v in s["blends"][0.0].items()},
                                "leave_one_out": {m: round(v, 4) for m, v in s["left_out"].items()}}
                         for name, s in report["sets"].items()}}
        if len(dense_weights) > 1:
            recorded["fusion"] = dataclasses.asdict(FUSION)  # its dense weight, as the folds chose it
            recorded["rerank"]["dense_weight"] = {
                "weight": dense_weight, "folds": {str(dw): n for dw, n in sorted(Counter(
                    pick[1] for pick in picks.elements()).items())}}
        if len(answer_weights) > 1:
            recorded["ranking"] = dataclasses.asdict(RANKING)  # its answer-type weight, as the folds chose it
            recorded["answer_types"] = {
                "weight": answer_weight, "stage_weight": weight,
                "folds": {str(aw): n for aw, n in sorted(Counter(pick[0] for pick in picks.elements()).items())},
                "measured": {name: {"without": {m: round(v, 4) for m, v in
                                                s["by_answer_and_dense_weight"][f"0.0, {dense_weight}"][weight].items()},
                                    "leave_one_out": {m: round(v, 4) for m, v in s["left_out"].items()}}
                             for name, s in report["sets"].items()}}
        CHOICE.write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
        command = " ".join(["benchmarks/eval_rerank.py", *(argv if argv is not None else sys.argv[1:])])
        write_section(SECTION, f"Measured with `{command}` on {machine()}; 1-minute load average at the end "
                      f"{os.getloadavg()[0]:.1f}.\n\n{NOTES}\n{stage_table(report, weight)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
