"""Recall quality on both dev sets through the product's own CLI, end to end, an
in-process ablation with leave-one-out estimates, and warm latency.

The dev sets (``--sets``, all by default):

* ``locomo``: the kit's LoCoMo dev split (5 conversations laid out as Claude
  Code, Codex and pi transcripts, 1,018 questions), built by ``build_corpus.py``;
* ``coding``: ``coding-dev/`` (100 questions over 6 real Claude Code and Codex
  sessions, gold in text, thinking, tool calls and tool results), built by
  ``coding-dev/build_home.py``;
* ``coding2``: ``coding-dev2/`` (58 questions over 7 other Claude Code sessions of
  two other projects), built by ``coding-dev2/build_home.py``.

For each, this

1. builds the corpus into ``<work>/corpus-<set>`` (agent homes, ``qrels.jsonl``);
2. runs ``funes index --yes`` and then ``funes recall --batch … --json``
   (the default rerank stage) once per variant through the kit's ``harness.py``, scoring with
   ``--match text`` (hits are judged by their verbatim text);
3. with ``--baselines``, runs the kit's baselines (LoCoMo: ``baselines.py``'s
   BM25, MiniLM and RRF over the bare turns; coding: ``bm25_baseline.py``, BM25
   over every whole block);
4. with ``--ablation``, reruns every question in process
   (``recall_ablation.py``) under the settings of :data:`ABLATION` (each lever
   added in turn, and alternatives to the shipped one), and cross-validates the
   ranking weights: leave one coding session / LoCoMo conversation out, choose
   on the rest, score the held-out one;
5. measures evidence per token: in process with `funes recall`'s defaults and
   each variant's fusion, the share of questions whose gold text is within the
   first 1,000 and 2,000 tokens (characters / 4) of the agent-format output, and
   its mean size (BENCHMARKS.md, "What vectors earn");
6. times warm in-process recall on the built memory (p50/p95), and optionally
   (``--scale N``) on a memory of N chunks made by replicating the LoCoMo corpus;
7. prints the tables (first one row a set for the default: its figures, gold
   within 1k, the left-out figures ``eval_rerank.py --write`` recorded in
   ``benchmarks/recall_choice.json``, the goal) and, with ``--write``, replaces the
   section ``## Recall quality (dev sets)`` of BENCHMARKS.md; with ``--ablation``
   also records the settings measured as the default in ``recall_choice.json``,
   which ``tests/retrieval/test_recall_choice.py`` holds the code to;
8. with ``--tiers``, reruns every question in process with the shipped ranking
   as if the memory held vectors only for some tiers (the rest found by BM25
   only), and with ``--precisions int8`` with documents (and queries) embedded
   at another precision, each with its per-fold figures and leave-one-out
   estimate, into the section ``## Recall by embedded tier and precision``;
9. with ``--answer-cv``, reruns every question in process with the shipped
   ranking, without the rerank stage, under each weight of a candidate holding the
   kind of answer its question asks for (retrieval/answer_types.py) and chooses it
   leave one session / conversation out over every set at once: a report (what
   ships is chosen with the stage, ``eval_rerank.py --answer-weights … --write``).

The CLI variants are real recall options: ``--fusion convex`` (the default),
``rrf`` (equal-weight reciprocal rank fusion), ``lexical`` (BM25 only) and
``dense`` (vectors only); the ranking stage (retrieval/ranking.py) runs in all.

The kit lives in ``../shared/eval`` beside the repository unless ``--eval-dir``
or ``$FUNES_EVAL_DIR`` says otherwise.  LoCoMo is CC BY-NC 4.0 and the coding
transcripts are others' data: corpora and results stay in the work folder
(``benchmarks/.work/``, git-ignored) and are never committed.

    .venv/bin/python benchmarks/eval_recall.py                       # both sets, CLI variants
    .venv/bin/python benchmarks/eval_recall.py --baselines --ablation --scale 100000 --write
    .venv/bin/python benchmarks/eval_recall.py --variants '' --no-latency --tiers --precisions int8 --write
    .venv/bin/python benchmarks/eval_recall.py --variants '' --no-latency --answer-cv
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_ablation import CODING_KITS, DEV_SETS, cell, dev_sets, group_of  # noqa: E402
from recall_tiers import (BACKLOG_NOTES, BACKLOG_SECTION, TIERS_NOTES, TIERS_SECTION,  # noqa: E402
                          backlog_ablation, backlog_tables, tier_ablation, tier_choice, tier_tables)
from evidence import evidence, evidence_table  # noqa: E402
from report import REPO, machine, write_section  # noqa: E402

SECTION = "Recall quality (dev sets)"
CHOICE = REPO / "benchmarks" / "recall_choice.json"
METRICS = ("R@1", "R@5", "R@10", "MRR@10", "nDCG@10")
# name → fusion
VARIANTS = {"convex": "convex", "rrf": "rrf", "lexical": "lexical", "dense": "dense"}
BASELINES = ("bm25", "dense", "hybrid")
# The section's prose: how the figures below are made.  Every figure it names is in
# the tables this script writes under it; what ships and why is under "Decisions".
NOTES = """\
Every question is asked as an agent asks it: `funes index --yes`, then `funes
recall --batch … --json` with recall's defaults (the fused ranking and its rerank
stage, late interaction over the shipped MiniLM's word pieces; no cross-encoder can
be fetched here; recency only breaks ties), scored by the kit with `--match text`
over each set's whole corpus: a hit counts when the text it shows holds a gold
turn's.  *Gold within 1k*: the share of questions whose gold text is within the
first 1,000 tokens (characters / 4) of the default agent-format output, what the MCP
tool returns, with its mean size in tokens (`benchmarks/evidence.py`).  *Left out by
session*: each set's R@10, MRR@10 and gold within 1k (in process) when the ranking's
last three weights (the answer-type weight, the fusion's dense weight and the rerank
stage's) are chosen without the question's session, by the best sum over the sets of
each set's mean R@10 + MRR@10 + gold within 1k, as `benchmarks/eval_rerank.py
--answer-weights … --dense-weights … --write` last recorded them in
`benchmarks/recall_choice.json`; the ranking grid's weights are chosen left out, by
R@10 + MRR@10, under "Decisions", "Ranking and fusion".  One standard error is about
0.045 of R@10 and 0.04 of MRR@10 with 100 coding questions, 0.065 and 0.05 with 58,
and 0.015 with LoCoMo's 1,018.  What ships, why, and what was tried: "Decisions".
"""
# Each set's goal (BENCHMARKS.md, "Where things stand").
GOALS = {"coding": "R@10 ≥ 0.70, MRR@10 ≥ 0.50, gold within 1k ≥ 0.80",
         "coding2": "R@10 ≥ 0.70, MRR@10 ≥ 0.50, gold within 1k ≥ 0.80",
         "locomo": "R@10 ≥ 0.78, MRR@10 ≥ 0.58, never below 0.782 / 0.561"}


def eval_dir(arg: str | None) -> Path:
    folder = Path(arg or os.environ.get("FUNES_EVAL_DIR") or REPO.parent / "shared" / "eval").resolve()
    if not (folder / "harness.py").is_file():
        raise SystemExit(f"no evaluation kit in {folder}: pass --eval-dir or set FUNES_EVAL_DIR")
    return folder


def funes_cmd() -> str:
    script = Path(sys.executable).with_name("funes")
    return shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m funes.cli"


def build_corpus(kit: Path, corpus: Path, dev_set: str, dataset: Path | None, force: bool) -> None:
    """The kit's own builder: build_corpus.py (LoCoMo dev split) or coding-dev/build_home.py."""
    if (corpus / "qrels.jsonl").is_file() and not force:
        return
    if dev_set in CODING_KITS:
        cmd = [sys.executable, str(kit / CODING_KITS[dev_set] / "build_home.py"), "--out", str(corpus), "--force"]
    else:
        cmd = [sys.executable, str(kit / "build_corpus.py"), "--out", str(corpus), "--split", "dev", "--force"]
        if dataset:
            cmd += ["--dataset", str(dataset)]
    subprocess.run(cmd, check=True, capture_output=True)


def kit_env(corpus: Path) -> list[str]:
    home = corpus / "home"
    return ["--env", f"FUNES_HOME={home / '.funes'}", "--env", "FUNES_NO_DAGSTER_RECORD=1",
            "--env", "HF_HUB_OFFLINE=1", "--env", "FUNES_FUSION=", "--env", "FUNES_RERANKER="]


def run_variant(kit: Path, corpus: Path, results: Path, name: str, index: bool) -> dict:
    fusion = VARIANTS[name]
    out = results / f"{name}.jsonl"
    cmd = [sys.executable, str(kit / "harness.py"), "--corpus", str(corpus), "--out", str(out), "--match", "text",
           "--batch-cmd", f"{funes_cmd()} recall --batch {{queries}} -k {{k}} --json"
                          f" --neighbors 0 --fusion {fusion}", *kit_env(corpus)]
    if index:
        cmd += ["--index-cmd", f"{funes_cmd()} index --yes"]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"harness failed for {name}:\n{proc.stderr[-3000:]}")
    timing = {"wall_s": round(time.monotonic() - started, 1)}
    for line in proc.stderr.splitlines():
        if match := re.match(r"index: ([\d.]+) s wall", line):
            timing["index_s"] = float(match.group(1))
        if match := re.match(r"recall \(batch\): ([\d.]+) s wall", line):
            timing["recall_s"] = float(match.group(1))
    return {"results": out, "match": "text", "timing": timing}


def run_baselines(kit: Path, corpus: Path, results: Path, dataset: Path | None, dev_set: str) -> dict[str, dict]:
    """The kit's baselines: baselines.py's BM25, MiniLM and RRF over the bare LoCoMo
    turns; for the coding set, coding-dev/bm25_baseline.py (stdlib BM25 over every
    whole block)."""
    folder = results / "baselines"
    if dev_set in CODING_KITS:
        out = folder / "bm25-blocks.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(kit / CODING_KITS[dev_set] / "bm25_baseline.py"), "--corpus", str(corpus),
                        "--out", str(out)], check=True, capture_output=True)
        return {"kit bm25 (whole blocks)": {"results": out, "match": "text", "timing": {}}}
    cmd = [sys.executable, str(kit / "baselines.py"), "--corpus", str(corpus), "--out-dir", str(folder),
           "--scopes", "split"]
    if dataset:
        cmd += ["--dataset", str(dataset)]
    subprocess.run(cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True)
    return {f"kit {m}": {"results": folder / f"{m}-split.jsonl", "match": "uuid", "timing": {}} for m in BASELINES}


def score_runs(kit: Path, corpus: Path, runs: dict[str, dict]) -> None:
    sys.path.insert(0, str(kit))
    import score as sc  # the kit's scorer

    qrels = sc.read_jsonl(corpus / "qrels.jsonl")
    for run in runs.values():
        results = sc.load_results(run["results"])
        run["all"] = sc.score(qrels, results, run["match"])


# Evidence per token: the gold within the first N tokens (characters / 4) of the
# default agent-format output, what an agent calling `recall` reads first.
def latency(memory: Path, cache: Path, queries: list[str], fusion: str = "convex") -> dict:
    """Warm in-process recall of every query (k 10, no rerank, no neighbours) on the
    memory folder ``memory``: p50/p95 in ms."""
    os.environ.setdefault("FUNES_CACHE_DIR", str(cache))  # the ONNX export the index run made
    os.environ["HF_HUB_OFFLINE"] = "1"
    from funes.memory.location import location_for
    from funes.memory.reader import Memory
    from funes.retrieval.fusion import Fusion
    from funes.retrieval.search import Recaller

    recaller = Recaller.open(Memory.open(location_for(str(memory))), rerank=False, fusion=Fusion.named(fusion))
    for query in queries[:20]:  # warm: index loaded, model compiled, pages cached
        recaller.recall(query, k=10, neighbors=0)
    times = []
    for query in queries:
        started = time.perf_counter()
        recaller.recall(query, k=10, neighbors=0)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"n": len(times), "chunks": recaller.memory.count(), "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1)}


def scaled_memory(corpus: Path, work: Path, target: int) -> Path:
    """A memory of about ``target`` chunks: the corpus memory's rows copied under
    new session ids (vectors copied too), BM25 built and the table maintained
    (so the vector index exists past its threshold), as a big memory would be."""
    import pyarrow as pa

    from funes.chunking import chunk_id
    from funes.embedding import IDENTITY
    from funes.memory.location import location_for
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter

    folder = work / f"scaled-{target}"
    location = location_for(str(folder / "memory"))
    if (folder / "memory").exists():
        if Memory.open(location).count() >= target:
            return folder
        import shutil

        shutil.rmtree(folder)
    source = Memory.open(location_for(str(corpus / "home" / ".funes" / "memory")))
    rows = source.dataset.to_table()
    copies = max(1, -(-target // rows.num_rows))
    keys = list(zip(*(rows.column(c).to_pylist() for c in ("session_id", "turn_uuid", "block_idx", "split_idx")),
                    strict=True))
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        for copy in range(copies):
            # Ids as the indexer gives them (recall reads a passage's splits by id).
            sessions = [f"{session}-{copy}" for session, _, _, _ in keys]
            ids = [chunk_id(f"{session}-{copy}", turn, int(block or 0), int(split or 0))
                   for session, turn, block, split in keys]
            table = rows
            for column, values in (("id", ids), ("session_id", sessions)):
                table = table.set_column(table.schema.get_field_index(column), column, pa.array(values))
            writer.table.add(table.select(writer.table.schema.names))
        writer.sync_lexical()
        writer.maintain()
    return folder




def _ablation_settings():
    from funes.retrieval.fusion import DEFAULT as FUSION, Fusion
    from funes.retrieval.ranking import DEFAULT as RANKING, Ranking

    return [
        ("before this work: `\\w\\w+` tokens, context = any two chunks before, no ranking stage",
         "previous", FUSION, None, "chunk"),
        ("+ identifiers whole and in parts", "previous documents", FUSION, None, "chunk"),
        ("+ documents by block type (the shipped representation)", "product", FUSION, None, "chunk"),
        ("+ one hit per block", "product", FUSION, Ranking(1.0, 1.0, 0.0, 0.0), "chunk"),
        ("+ tool calls and results x0.8", "product", FUSION, Ranking(0.8, 1.0, 0.0, 0.0), "chunk"),
        ("+ blocks of n chunks x n^-0.1", "product", FUSION, Ranking(0.8, 1.0, 0.1, 0.0), "chunk"),
        ("+ texts that end in a question x0.7", "product", FUSION, Ranking(0.8, 0.7, 0.1, 0.0), "chunk"),
        ("+ 0.3 x the session's best (the ranking of round 1)", "product", FUSION, Ranking(0.8, 0.7, 0.1, 0.3),
         "chunk"),
        ("- the long-block weight (every set, leave one session out)", "product", FUSION, RANKING, "chunk"),
        ("+ a hit shows its block around the chunk (≤ 1,200 characters), a tool call as its arguments (shipped)",
         "product", FUSION, RANKING, "passage"),
        ("shipped, dense weight 0.3", "product", Fusion("convex", 0.7, 0.3), RANKING, "passage"),
        ("shipped, dense weight 0.5", "product", Fusion("convex", 0.5, 0.5), RANKING, "passage"),
        ("shipped, dense weight 0.5 and tool traffic unweighted", "product", Fusion("convex", 0.5, 0.5),
         dataclasses.replace(RANKING, tool_weight=1.0), "passage"),
        ("shipped, equal-weight RRF", "product", Fusion.named("rrf"), RANKING, "passage"),
        ("shipped, BM25 only", "product", Fusion.named("lexical"), RANKING, "passage"),
        ("shipped, vectors only", "product", Fusion.named("dense"), RANKING, "passage"),
        ("shipped ranking stage over the previous representation", "previous", FUSION, RANKING, "passage"),
    ]


def ablation(kit: Path, corpora: dict[str, Path]) -> dict:
    """In-process runs of :func:`_ablation_settings` and the cross-validation, per set."""
    import recall_ablation as ra

    sys.path.insert(0, str(kit))
    import score as sc

    out: dict = {"runs": {}, "cv": {}, "folds": {}}
    for name, corpus in corpora.items():
        print(f"[{name}] ablation …", file=sys.stderr, flush=True)
        dev = ra.DevSet.load(name, corpus, kit)
        first = None
        for label, representation, fusion, ranking, shown in _ablation_settings():
            per_q = ra.per_question(sc, dev, dev.hits(representation, fusion, ranking, shown))
            out["runs"].setdefault(label, {})[name] = ra.summary(dev, per_q)
            if label.startswith("before"):
                first = per_q
            if label.endswith("(the ranking of round 1)"):
                round1 = per_q
            if label.endswith("(shipped)"):
                shipped = per_q
        grouping = group_of(name)
        out["cv"][name] = ra.cross_validate(sc, dev, grouping)
        folds = {}
        for group in sorted({grouping(q) for q in dev.qrels}):
            qids = {q["qid"] for q in dev.qrels if grouping(q) == group}
            folds[group] = {"before": ra.summary(dev, first, qids)["overall"],
                            "round 1": ra.summary(dev, round1, qids)["overall"],
                            "shipped": ra.summary(dev, shipped, qids)["overall"]}
        out["folds"][name] = folds
    return out


def summary_table(cli: dict[str, dict[str, dict]], evidences: dict[tuple[str, str], dict]) -> list[str]:
    """One row a set for the default (``convex``) run: its figures through the CLI, gold
    within 1k, the left-out figures :data:`CHOICE` records, and the goal."""
    rows = [(name, runs["convex"]) for name, runs in cli.items() if "convex" in runs]
    if not rows:
        return []
    recorded = json.loads(CHOICE.read_text(encoding="utf-8")) if CHOICE.is_file() else {}
    left_out = {name: figures.get("leave_one_out")
                for name, figures in recorded.get("rerank", {}).get("measured", {}).items()}
    lines = ["| dev set | " + " | ".join(METRICS) + " | gold within 1k (mean tokens)"
             " | left out by session, R@10 / MRR@10 / gold within 1k | goal |", "|" + " --- |" * (len(METRICS) + 4)]
    for name, run in rows:
        o, shown, held = run["all"]["overall"], evidences.get((name, "convex")), left_out.get(name)
        lines.append(f"| {DEV_SETS[name]} | " + " | ".join(f"{o[m]:.3f}" for m in METRICS)
                     + (f" | {shown['gold@1000']:.3f} ({shown['mean tokens']:,.0f})" if shown else " | —")
                     + (f" | {held['R@10']:.3f} / {held['MRR@10']:.3f} / {held['1k']:.3f}" if held else " | —")
                     + f" | {GOALS[name]} |")
    return lines + [""]


def cli_tables(name: str, runs: dict[str, dict]) -> list[str]:
    lines = [f"**{DEV_SETS[name]}**, through the CLI (R@k, MRR@10, nDCG@10):", "",
             "| run | " + " | ".join(METRICS) + " | recall s (batch) |", "|" + " --- |" * (len(METRICS) + 2)]
    for run_name, run in runs.items():
        o = run["all"]["overall"]
        lines.append(f"| {run_name} | " + " | ".join(f"{o[m]:.3f}" for m in METRICS)
                     + f" | {run['timing'].get('recall_s', '—')} |")
    categories = sorted(next(iter(runs.values()))["all"]["by_category"])
    counts = {c: next(iter(runs.values()))["all"]["by_category"][c]["n"] for c in categories}
    lines += ["", f"Per category, R@10 / MRR@10 ({DEV_SETS[name]}, CLI):", "",
              "| run | " + " | ".join(f"{c} ({counts[c]})" for c in categories) + " |",
              "|" + " --- |" * (len(categories) + 1)]
    for run_name, run in runs.items():
        by = run["all"]["by_category"]
        lines.append(f"| {run_name} | " + " | ".join(
            f"{by[c]['R@10']:.3f} / {by[c]['MRR@10']:.3f}" if c in by else "—" for c in categories) + " |")
    return lines + [""]


def pooled_ablation(kit: Path, corpora: dict[str, Path]) -> dict:
    """:func:`recall_ablation.pooled_cross_validate` over every named set."""
    import recall_ablation as ra

    devs = [(dev, group_of(name)) for name, dev, _sc in dev_sets(kit, corpora, "pooled cross-validation")]
    import score as sc

    return ra.pooled_cross_validate(sc, devs)


def answer_ablation(kit: Path, corpora: dict[str, Path]) -> dict:
    """:func:`recall_ablation.answer_weight_cross_validate` over every named set."""
    import recall_ablation as ra

    devs = [(dev, group_of(name)) for name, dev, _sc in dev_sets(kit, corpora, "answer-type weight")]
    import score as sc

    return ra.answer_weight_cross_validate(sc, devs)


def answer_tables(result: dict) -> list[str]:
    weights = result["weights"]
    lines = ["The weight of a candidate holding the kind of answer its question asks for (R@10 / MRR@10, in"
             " process, every other setting as shipped; 0: no such weight):", "",
             "| set | questions asking for a kind | " + " | ".join(f"w {w}" for w in weights)
             + " | left out (pooled folds) |", "| --- | --- | " + " | ".join("---" for _ in weights) + " | --- |"]
    for dev, figures in result["sets"].items():
        lines.append(f"| {DEV_SETS.get(dev, dev)} | {figures['asking']} of {figures['questions']} | "
                     + " | ".join(cell(s) for s in figures["by_weight"]) + f" | {cell(figures['left_out'])} |")
    counts = Counter(result["picks"].values())
    lines += ["", "Folds' picks: " + ", ".join(f"w {w}: {n}" for w, n in sorted(counts.items())), "",
              "What the check costs a recall whose question asks for a kind (each candidate of its fused pool"
              " searched for the kinds asked, best of 20, in process):", "",
              "| set | pool, candidates | p50 ms | p95 ms |", "| --- | --- | --- | --- |"]
    lines += [f"| {DEV_SETS.get(dev, dev)} | {f['check_ms']['pool']} | {f['check_ms']['p50']} | {f['check_ms']['p95']} |"
              for dev, f in result["sets"].items() if f["check_ms"]]
    return lines + [""]


def _setting(setting) -> str:
    dense, ranking = setting
    return (f"dense {dense}, question {ranking.question_weight}, session {ranking.session_weight}, "
            f"tool {ranking.tool_weight}, long-block {ranking.split_exponent}")


def pooled_tables(result: dict) -> list[str]:
    names = {dev: DEV_SETS.get(dev, dev) for dev in result["sets"]}
    lines = [f"Chosen on every set at once ({result['settings']} settings; R@10 / MRR@10, in process):", "",
             "| set | shipped, in sample | pooled choice, in sample | left out (pooled folds) |",
             "| --- | --- | --- | --- |"]
    for dev, figures in result["sets"].items():
        lines.append(f"| {names[dev]} | " + " | ".join(cell(figures[k]) for k in ("shipped", "in_sample_choice",
                                                                                    "left_out")) + " |")
    lines += ["", f"Shipped: {_setting(result['shipped'])}. Pooled choice in sample: "
              f"{_setting(result['in_sample_choice'])}.", ""]
    counts: dict[str, int] = {}
    for setting in result["picks"].values():
        counts[_setting(setting)] = counts.get(_setting(setting), 0) + 1
    lines.append("Folds' picks: " + "; ".join(f"{shown} ({n} folds)" for shown, n in
                                             sorted(counts.items(), key=lambda item: -item[1])) + ".")
    return lines


def ablation_tables(result: dict, sets: list[str]) -> list[str]:
    runs, cv = result["runs"], result["cv"]
    lines = ["Ablation, in process on the same memories (R@10 / MRR@10; each `+` row adds one lever to the row"
             " above; `shipped, …` rows change one thing of the shipped setting):", "",
             "| run | " + " | ".join(DEV_SETS[s] for s in sets) + " |", "|" + " --- |" * (len(sets) + 1)]
    for label, by_set in runs.items():
        lines.append(f"| {label} | " + " | ".join(cell(by_set.get(s)) for s in sets) + " |")
    lines.append("| leave-one-out estimate (weights chosen without the held-out session / conversation) | "
                 + " | ".join(cell(cv[s]["summary"]) for s in sets) + " |")
    lines += [""]
    for s in sets:
        picks = cv[s]["picks"]
        shown = "; ".join(f"{g[:8]}: dense {w}, tool {r.tool_weight}, question {r.question_weight}, "
                          f"long-block {r.split_exponent}, session {r.session_weight}"
                          for g, (w, r) in picks.items())
        lines.append(f"Leave-one-out picks, {DEV_SETS[s]} ({cv[s]['settings']} settings): {shown}.")
        lines.append("")
    before = next(label for label in runs if label.startswith("before"))
    round1 = next(label for label in runs if label.endswith("(the ranking of round 1)"))
    shipped = next(label for label in runs if label.endswith("(shipped)"))
    for s in sets:
        categories = sorted(runs[shipped][s]["by_category"])
        counts = {c: runs[shipped][s]["by_category"][c]["n"] for c in categories}
        lines += [f"Per category, R@10 / MRR@10 ({DEV_SETS[s]}, in process):", "",
                  "| run | " + " | ".join(f"{c} ({counts[c]})" for c in categories) + " |",
                  "|" + " --- |" * (len(categories) + 1)]
        for label, summary in ((before, runs[before][s]), ("round 1", runs[round1][s]), ("shipped", runs[shipped][s]),
                               ("leave-one-out", cv[s]["summary"])):
            lines.append(f"| {label} | " + " | ".join(cell(summary["by_category"].get(c), "c")
                                                      for c in categories) + " |")
        lines += [""]
        blocks = list(runs[shipped][s]["by_block"])
        if len(blocks) > 1:
            lines += [f"Per gold block type, R@10 ({DEV_SETS[s]}, in process; n = gold turns):", "",
                      "| run | " + " | ".join(f"{b} ({runs[shipped][s]['by_block'][b]['n']})" for b in blocks) + " |",
                      "|" + " --- |" * (len(blocks) + 1)]
            for label, summary in ((before, runs[before][s]), ("round 1", runs[round1][s]),
                                   ("shipped", runs[shipped][s]), ("leave-one-out", cv[s]["summary"])):
                lines.append(f"| {label} | " + " | ".join(f"{summary['by_block'][b]['R@10']:.3f}" for b in blocks)
                             + " |")
            lines += [""]
        folds = result["folds"][s]
        lines += [f"Per {'session' if s in CODING_KITS else 'conversation'}, R@10 / MRR@10 ({DEV_SETS[s]}, in process):",
                  "", "| run | " + " | ".join(f"{g[:8]} ({folds[g]['shipped']['n']})" for g in folds) + " |",
                  "|" + " --- |" * (len(folds) + 1)]
        for which in ("before", "round 1", "shipped"):
            lines.append(f"| {which} | " + " | ".join(f"{folds[g][which]['R@10']:.3f} / {folds[g][which]['MRR@10']:.3f}"
                                                      for g in folds) + " |")
        lines += [""]
    return lines


def choice(result: dict, cli: dict[str, dict]) -> dict:
    """The settings measured as the default, with what they scored."""
    from funes.memory import lexical
    from funes.retrieval.fusion import DEFAULT as FUSION
    from funes.retrieval.passage import PASSAGE_CHARS
    from funes.retrieval.ranking import DEFAULT as RANKING

    shipped = next(label for label in result["runs"] if label.endswith("(shipped)"))
    figures = {}
    for name in result["runs"][shipped]:
        figures[name] = {"in_process": {m: round(result["runs"][shipped][name]["overall"][m], 4)
                                        for m in ("R@10", "MRR@10")},
                         "leave_one_out": {m: round(result["cv"][name]["summary"]["overall"][m], 4)
                                           for m in ("R@10", "MRR@10")}}
        if name in cli and "convex" in cli[name]:
            figures[name]["cli"] = {m: round(cli[name]["convex"]["all"]["overall"][m], 4) for m in ("R@10", "MRR@10")}
    kept = json.loads(CHOICE.read_text(encoding="utf-8")) if CHOICE.is_file() else {}
    return {"fusion": dataclasses.asdict(FUSION), "ranking": dataclasses.asdict(RANKING),
            "tokenizer": lexical.TOKENIZER, "bm25": lexical.BM25_PARAMS, "document": lexical.DOCUMENT,
            "passage": {"chars": PASSAGE_CHARS, "tool_calls": "arguments"}, "measured": figures,
            # measured by --tiers and by eval_rerank.py, kept as they were
            **{key: kept[key] for key in ("dense_tiers", "rerank", "answer_types") if key in kept}}


def report(cli: dict[str, dict], latencies: list[tuple[str, dict]], result: dict | None,
           evidences: dict[tuple[str, str], dict] | None = None) -> str:
    out: list[str] = summary_table(cli, evidences or {})
    for name, runs in cli.items():
        out += cli_tables(name, runs)
    out += evidence_table(evidences or {})
    if result:
        out += ablation_tables(result, list(result["cv"]))
    if latencies:
        out += ["Warm in-process recall, k 10, no rerank, no neighbours, one query at a time:", "",
                "| memory | chunks | queries | p50 ms | p95 ms |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {name} | {lat['chunks']:,} | {lat['n']} | {lat['p50_ms']} | {lat['p95_ms']} |"
                for name, lat in latencies]
        out += [""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", help="the evaluation kit (default $FUNES_EVAL_DIR, else ../shared/eval)")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / ".work", help="corpora and results")
    ap.add_argument("--sets", default=",".join(DEV_SETS), help=f"of {', '.join(DEV_SETS)}")
    ap.add_argument("--dataset", type=Path, help="LoCoMo file for build_corpus.py (default: the kit's dev file)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)} (none: '')")
    ap.add_argument("--baselines", nargs="?", const="coding,locomo", default="",
                    help="also run the kit's baselines for these sets (default both; LoCoMo's take about 3 min)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the corpora and memories from scratch")
    ap.add_argument("--ablation", action="store_true", help="also the in-process ablation and cross-validation")
    ap.add_argument("--tiers", action="store_true",
                    help=f"only the tier and precision ablation, written (--write) to '{TIERS_SECTION}'")
    ap.add_argument("--tiers-cv", action="store_true", help="with --tiers, also the leave-one-out estimates (slow)")
    ap.add_argument("--backlog", action="store_true",
                    help=f"only recall with vectors pending, written (--write) to '{BACKLOG_SECTION}'")
    ap.add_argument("--precisions", default="",
                    help="with --tiers, also documents and queries embedded at these precisions (e.g. int8)")
    ap.add_argument("--pooled-cv", action="store_true",
                    help="only the leave-one-session-out choice of the ranking grid over every named set at once")
    ap.add_argument("--answer-cv", action="store_true",
                    help="also choose the answer-type weight left out by session over every set, without the stage")
    ap.add_argument("--no-latency", action="store_true", help="skip the in-process latency measurement")
    ap.add_argument("--scale", type=int, default=0, help="also time recall on a memory of about N chunks")
    ap.add_argument("--write", action="store_true", help=f"replace '{SECTION}' in BENCHMARKS.md, write {CHOICE.name}")
    args = ap.parse_args(argv)

    kit = eval_dir(args.eval_dir)
    args.work.mkdir(parents=True, exist_ok=True)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS] + [s for s in sets if s not in DEV_SETS]
    if unknown:
        raise SystemExit(f"unknown variants or sets {unknown}: variants {', '.join(VARIANTS)}; sets {', '.join(DEV_SETS)}")
    cli: dict[str, dict[str, dict]] = {}
    corpora: dict[str, Path] = {}
    latencies: list[tuple[str, dict]] = []
    evidences: dict[tuple[str, str], dict] = {}
    for name in sets:
        corpus = args.work / ("corpus-dev" if name == "locomo" else f"corpus-{CODING_KITS[name]}")
        results = args.work / ("results-dev" if name == "locomo" else f"results-{CODING_KITS[name]}")
        if args.rebuild and corpus.exists():
            import shutil

            shutil.rmtree(corpus)
        build_corpus(kit, corpus, name, args.dataset, args.rebuild)
        corpora[name] = corpus
        runs: dict[str, dict] = {}
        for position, variant in enumerate(variants):
            print(f"[{name}] {variant} …", file=sys.stderr, flush=True)
            runs[variant] = run_variant(kit, corpus, results, variant, index=position == 0)
        if not variants and not (corpus / "home" / ".funes" / "memory").exists():
            raise SystemExit(f"no memory for {name} yet: run with at least one variant (it indexes the corpus)")
        if name in args.baselines.split(","):
            print(f"[{name}] kit baselines …", file=sys.stderr, flush=True)
            runs.update(run_baselines(kit, corpus, results, args.dataset, name))
        if runs:
            score_runs(kit, corpus, runs)
            cli[name] = runs
            for variant in variants or ["convex"]:
                evidences[(name, variant)] = evidence(kit, corpus, fusion=variant)
            (results / "summary.json").write_text(json.dumps(
                {run: {k: v for k, v in r.items() if k != "results"} for run, r in runs.items()}, indent=1, default=str))
        if not args.no_latency:
            queries = [json.loads(line)["question"] for line in (corpus / "qrels.jsonl").read_text().splitlines()]
            home = corpus / "home" / ".funes"
            latencies.append((f"{DEV_SETS[name]} memory", latency(home / "memory", home / "cache", queries)))
            if args.scale and name == "locomo":
                scaled = scaled_memory(corpus, args.work, args.scale)
                latencies.append((f"LoCoMo dev memory copied to {args.scale:,}",
                                  latency(scaled / "memory", home / "cache", queries)))
    if args.tiers:
        precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
        tier_result = tier_ablation(kit, corpora, precisions, cross_validate=args.tiers_cv)
        tiers = "\n".join(tier_tables(tier_result))
        print(tiers)
        if args.write:
            recorded = json.loads(CHOICE.read_text(encoding="utf-8"))
            recorded["dense_tiers"] = tier_choice(tier_result)
            CHOICE.write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
            command = shlex.join(["benchmarks/eval_recall.py", *(argv if argv is not None else sys.argv[1:])])
            write_section(TIERS_SECTION, f"Measured with `{command}` on {machine()}; 1-minute load average at the"
                          f" end {os.getloadavg()[0]:.1f}.\n\n{TIERS_NOTES}\n{tiers}")
    if args.backlog:
        backlog = "\n".join(backlog_tables(backlog_ablation(kit, corpora)))
        print(backlog)
        if args.write:
            command = shlex.join(["benchmarks/eval_recall.py", *(argv if argv is not None else sys.argv[1:])])
            write_section(BACKLOG_SECTION, f"Measured with `{command}` on {machine()}; 1-minute load average at"
                          f" the end {os.getloadavg()[0]:.1f}.\n\n{BACKLOG_NOTES}\n{backlog}")
    if args.pooled_cv:
        print("\n".join(pooled_tables(pooled_ablation(kit, corpora))))
    if args.answer_cv:
        print("\n".join(answer_tables(answer_ablation(kit, corpora))))
    result = ablation(kit, corpora) if args.ablation else None
    body = report(cli, latencies, result, evidences)
    print(body)
    if args.write and (cli or latencies or result):
        command = " ".join(["benchmarks/eval_recall.py", *(argv if argv is not None else sys.argv[1:])])
        load = os.getloadavg()[0]
        write_section(SECTION, f"Measured with `{command}` on {machine()}; 1-minute load average at the end"
                      f" {load:.1f} (the cores are shared: timings move with it, quality figures do not).\n\n"
                      f"{NOTES}\n{body}")
        if result:
            CHOICE.write_text(json.dumps(choice(result, cli), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
