"""Second-stage rescoring of the fused candidates, measured on both dev sets (issue 10,
round 3): signals BM25 lacks, added to the fused score before the shipped ranking
stage, and a linear model over a handful of interpretable features.

Each dev-set memory is read as ``eval_recall.py --ablation`` reads it
(:class:`recall_ablation.DevSet`: the product's BM25 documents and stored vectors,
100 candidates from each, the product's convex fusion), so run ``eval_recall.py``
once first to build the corpora and memories.  Hits show what the product shows
(the passage of their block) and are scored by the kit's scorer.

* **bonus rows**: the shipped :class:`Ranking` with ``w × feature`` added to each
  candidate's fused score (before the type weights and the session term):
  query-term *coverage* (share of the query's distinct tokens, as the product's
  tokenizer makes them, found in the chunk, or in the passage it shows), the same
  weighted by IDF over the memory's chunks, *proximity* (matched terms / the
  smallest token window holding them all) and *bigrams* (share of the query's
  adjacent token pairs found adjacent in the chunk); also coverage as a factor;
* **linear model**: an L2 logistic regression over the candidates of both sets
  (each set weighing the same), label = the candidate's passage matches a gold
  turn, features in :data:`FEATURES` (the fused score is left out: it is a
  linear function of the first three); candidates are ranked by its score, one per
  block as the product does.  Leave one group out over the 11 groups of both sets
  together (6 coding sessions, 5 LoCoMo conversations): fit on the other ten,
  score the held-out one.

    .venv/bin/python benchmarks/recall_rescore.py --eval-dir ../shared/eval
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_ablation as ra  # noqa: E402
from report import REPO  # noqa: E402

FEATURES = ("bm25/best", "has bm25", "cosine", "tool_use", "tool_result", "thinking", "question",
            "log splits", "coverage", "idf coverage", "session best", "log chars", "1/(1+session rank)")
CORPORA = {"coding": "corpus-coding-dev", "locomo": "corpus-dev"}


class Features:
    """Per-candidate lexical signals over one dev set, tokens memoised per chunk."""

    def __init__(self, dev: ra.DevSet):
        from funes.memory import lexical

        self.dev, self.lexical = dev, lexical
        self._tokens: dict[tuple[str, str], list[str]] = {}
        df: dict[str, int] = {}
        for chunk in dev.rows:
            for token in set(self.tokens(chunk)):
                df[token] = df.get(token, 0) + 1
        self.df, self.n = df, len(dev.rows)

    def tokens(self, chunk: str, field: str = "chunk") -> list[str]:
        if (chunk, field) not in self._tokens:
            row = self.dev.rows[chunk]
            if field == "passage":
                text = self.dev.shown(chunk)
            else:
                text = row["text"] or ""
                text = self.lexical.call_text(text) if row["block_type"] == "tool_use" else text
            self._tokens[(chunk, field)] = self.lexical.tokenize([text])[0]
        return self._tokens[(chunk, field)]

    def idf(self, token: str) -> float:
        df = self.df.get(token, 0)
        return math.log1p((self.n - df + 0.5) / (df + 0.5))

    def of(self, query: list[str], chunk: str, field: str = "chunk") -> dict[str, float]:
        tokens = self.tokens(chunk, field)
        present = set(tokens)
        distinct = list(dict.fromkeys(query))
        matched = [t for t in distinct if t in present]
        weight = sum(self.idf(t) for t in distinct) or 1.0
        out = {"coverage": len(matched) / len(distinct) if distinct else 0.0,
               "idf coverage": sum(self.idf(t) for t in matched) / weight, "proximity": 0.0}
        if len(matched) >= 2:  # smallest window of positions holding every matched term
            positions = [(i, t) for i, t in enumerate(tokens) if t in set(matched)]
            counts: dict[str, int] = {}
            low, have, best = 0, 0, None
            for high, (at, token) in enumerate(positions):
                counts[token] = counts.get(token, 0) + 1
                have += counts[token] == 1
                while have == len(matched):
                    span = at - positions[low][0] + 1
                    best = span if best is None else min(best, span)
                    counts[positions[low][1]] -= 1
                    have -= counts[positions[low][1]] == 0
                    low += 1
            out["proximity"] = len(matched) / best
        pairs = set(zip(query, query[1:]))
        out["bigrams"] = len(pairs & set(zip(tokens, tokens[1:]))) / len(pairs) if pairs else 0.0
        return out


def ranked(dev: ra.DevSet, fused: list[tuple[str, float]], ranking, bonus: dict[str, float]) -> list[str]:
    """The shipped ranking stage over fused scores plus ``bonus``."""
    return [c for c, _ in ranking.rank([(c, s + bonus.get(c, 0.0)) for c, s in fused], dev.rows, dev.splits)]


def one_per_block(dev: ra.DevSet, scored: list[tuple[str, float]]) -> list[str]:
    """Best first, one chunk per block and one per identical text in a session, as the product keeps."""
    from funes.retrieval.ranking import block_key

    out, shown = [], set()
    for chunk, _ in sorted(scored, key=lambda item: (-item[1], item[0])):
        row = dev.rows[chunk]
        block, text = block_key(row), " ".join((row["text"] or "").split())
        if block not in shown and (row["session_id"], text) not in shown:
            shown.update((block, (row["session_id"], text)))
            out.append(chunk)
    return out


def as_hits(dev: ra.DevSet, chunks: dict[str, list[str]]) -> dict[str, list[dict]]:
    return {qid: [{"session_id": dev.rows[c]["session_id"], "text": dev.shown(c)} for c in found[:10]]
            for qid, found in chunks.items()}


def candidates(dev: ra.DevSet) -> list[list[tuple[str, float]]]:
    from funes.retrieval.fusion import DEFAULT as FUSION

    return [FUSION.fuse(lex, den, ra.POOL) for lex, den in zip(dev.lexical("product"), dev.dense(), strict=True)]


def matrix(kit_score, dev: ra.DevSet, feats: Features, fused_all) -> list[tuple[dict, np.ndarray, np.ndarray, list]]:
    """Per question: (question, features × candidates, labels, chunk ids)."""
    from funes.retrieval.ranking import block_key

    out = []
    for question, lex, den, fused in zip(dev.qrels, dev.lexical("product"), dev.dense(), fused_all, strict=True):
        query = feats.lexical.tokenize([question["question"]])[0]
        best = max((s for _, s in lex), default=1.0) or 1.0
        lexical = {c: s / best for c, s in lex}
        dense = dict(den)
        lex_missing = 0.0 if len(lex) < ra.POOL else min(lexical.values(), default=0.0)
        dense_missing = min(dense.values(), default=0.0)
        session_best: dict[str, float] = {}
        for chunk, score in fused:
            session = dev.rows[chunk]["session_id"]
            session_best[session] = max(session_best.get(session, 0.0), score)
        session_rank = {s: i for i, s in enumerate(sorted(session_best, key=lambda s: -session_best[s]))}
        x, y = [], []
        for chunk, _ in fused:
            row = dev.rows[chunk]
            kind, f = row["block_type"], feats.of(query, chunk)
            x.append([lexical.get(chunk, lex_missing), float(chunk in lexical), dense.get(chunk, dense_missing),
                      kind == "tool_use", kind == "tool_result", kind == "thinking",
                      kind == "text" and (row["text"] or "").rstrip().endswith("?"),
                      math.log(dev.splits.get(block_key(row), 1)), f["coverage"], f["idf coverage"],
                      session_best[row["session_id"]], math.log1p(len(row["text"] or "")),
                      1.0 / (1 + session_rank[row["session_id"]])])
            judged = kit_score.judge(question["gold"], [{"session_id": row["session_id"],
                                                          "text": dev.shown(chunk)}], "text")[1]
            y.append(1.0 if judged and judged[0] else 0.0)
        out.append((question, np.asarray(x, float), np.asarray(y), [c for c, _ in fused]))
    return out


def logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray, l2: float = 1.0, steps: int = 50) -> np.ndarray:
    """L2-regularised logistic regression by Newton steps on standardised features;
    returns coefficients on the raw features (the intercept does not change a ranking)."""
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        gradient = z.T @ (weight * (p - y)) - penalty * beta
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1] / scale


def main(argv: list[str] | None = None) -> int:
    from eval_recall import eval_dir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", help="the evaluation kit (default $FUNES_EVAL_DIR, else ../shared/eval)")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / ".work", help="where eval_recall.py built them")
    args = ap.parse_args(argv)
    kit = eval_dir(args.eval_dir)
    sys.path.insert(0, str(kit))
    import score as sc

    from funes.retrieval.ranking import DEFAULT as RANKING
    from funes.retrieval.ranking import Ranking

    devs = {name: ra.DevSet.load(name, args.work / folder, kit) for name, folder in CORPORA.items()}
    group_of = {"coding": lambda q: q["gold"][0]["session_id"], "locomo": lambda q: q["conv"]}

    def line(label: str, per_q: dict[str, dict[str, dict]]) -> str:
        cells = []
        for name, dev in devs.items():
            overall = ra.summary(dev, per_q[name])["overall"]
            folds = []
            for group in sorted({group_of[name](q) for q in dev.qrels}):
                qids = {q["qid"] for q in dev.qrels if group_of[name](q) == group}
                o = ra.summary(dev, per_q[name], qids)["overall"]
                folds.append(f"{o['R@10']:.2f}/{o['MRR@10']:.2f}")
            cells.append(f"{overall['R@10']:.3f} / {overall['MRR@10']:.3f} ({' '.join(folds)})")
        return f"| {label} | " + " | ".join(cells) + " |"

    print("| run | coding R@10 / MRR@10 (per session) | LoCoMo R@10 / MRR@10 (per conversation) |")
    print("| --- | --- | --- |")
    fused = {name: candidates(dev) for name, dev in devs.items()}
    feats = {name: Features(dev) for name, dev in devs.items()}
    queries = {name: [feats[name].lexical.tokenize([q["question"]])[0] for q in dev.qrels]
               for name, dev in devs.items()}

    def bonus_run(feature: str, weight: float, field: str = "chunk", factor: bool = False,
                  ranking: Ranking = RANKING) -> dict:
        out = {}
        for name, dev in devs.items():
            found = {}
            for question, query, pool in zip(dev.qrels, queries[name], fused[name], strict=True):
                if feature:
                    values = {c: feats[name].of(query, c, field)[feature] for c, _ in pool}
                    bonus = ({c: s * (values[c] ** weight - 1) for c, s in pool} if factor
                             else {c: weight * values[c] for c, _ in pool})
                else:
                    bonus = {}
                found[question["qid"]] = ranked(dev, pool, ranking, bonus)
            out[name] = ra.per_question(sc, dev, as_hits(dev, found))
        return out

    print(line("shipped", bonus_run("", 0.0)), flush=True)
    for feature, weights in (("coverage", (0.1, 0.2, 0.3)), ("idf coverage", (0.1, 0.2, 0.3)),
                             ("proximity", (0.05, 0.1)), ("bigrams", (0.05, 0.1, 0.2))):
        for weight in weights:
            print(line(f"+ {weight} x {feature} of the chunk", bonus_run(feature, weight)), flush=True)
    for weight in (0.1, 0.2, 0.5):
        print(line(f"+ {weight} x coverage of the passage", bonus_run("coverage", weight, "passage")), flush=True)
    for power in (0.25, 0.5):
        print(line(f"x idf coverage^{power}", bonus_run("idf coverage", power, factor=True)), flush=True)

    data = {name: matrix(sc, dev, feats[name], fused[name]) for name, dev in devs.items()}
    items = [(name, q, x, y, ids) for name in data for (q, x, y, ids) in data[name]]

    def fit(train) -> np.ndarray:
        x = np.vstack([t[2] for t in train])
        y = np.concatenate([t[3] for t in train])
        sets = {t[0] for t in train}
        per_set = {s: sum(len(t[3]) for t in train if t[0] == s) for s in sets}
        weight = np.concatenate([np.full(len(t[3]), len(y) / (len(sets) * per_set[t[0]])) for t in train])
        return logistic(x, y, weight)

    def score_with(coef: np.ndarray, subset) -> dict[str, dict[str, dict]]:
        out: dict[str, dict[str, dict]] = {name: {} for name in devs}
        for name, q, x, _y, ids in subset:
            hits = as_hits(devs[name], {q["qid"]: one_per_block(devs[name], list(zip(ids, x @ coef)))})
            out[name].update({k: v for k, v in ra.per_question(sc, devs[name], hits).items() if k == q["qid"]})
        return out

    coef = fit(items)
    print(line("linear model, in sample", score_with(coef, items)), flush=True)
    held: dict[str, dict[str, dict]] = {name: {} for name in devs}
    groups = sorted({(t[0], group_of[t[0]](t[1])) for t in items})
    for name, group in groups:
        fold = [t for t in items if t[0] == name and group_of[name](t[1]) == group]
        scored = score_with(fit([t for t in items if not (t[0] == name and group_of[name](t[1]) == group)]), fold)
        held[name].update(scored[name])
    print(line("linear model, leave one group out (11 groups of both sets)", held))
    print()
    print("Coefficients (all data, on the raw features): "
          + ", ".join(f"{f} {c:+.2f}" for f, c in zip(FEATURES, coef, strict=True)))
    for name, dev in devs.items():
        s = ra.summary(dev, held[name])
        print(f"\n{name}, linear model left out, per category: "
              + "; ".join(f"{c} {v['R@10']:.3f} / {v['MRR@10']:.3f}" for c, v in s["by_category"].items())
              + " | per gold block R@10: " + "; ".join(f"{b} {v['R@10']:.3f}" for b, v in s["by_block"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
