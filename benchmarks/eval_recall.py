"""Recall quality on LoCoMo through the product's own CLI, end to end, plus latency.

For each split asked for (dev by default; heldout needs the full LoCoMo file,
``--dataset .../locomo10.json``), this

1. builds the corpus with the evaluation kit's ``build_corpus.py`` into
   ``<work>/corpus-<split>`` (agent transcripts under ``home/``, ``qrels.jsonl``);
2. runs ``funes index --yes`` and then ``funes recall --batch … --json
   --no-rerank`` once per variant through the kit's ``harness.py``, scoring
   with ``--match text`` (hits are judged by their verbatim text);
3. optionally (``--baselines``) runs the kit's ``baselines.py`` (BM25, MiniLM
   and their RRF over the bare turns) for comparison;
4. times warm in-process recall on the built memory (p50/p95), and optionally
   (``--scale N``) on a memory of N chunks made by replicating the corpus;
5. prints the tables and, with ``--write``, replaces the section
   ``## Recall quality (LoCoMo dev)`` of BENCHMARKS.md.

The variants are real recall options: ``--fusion convex`` (the default),
``rrf`` (equal-weight reciprocal rank fusion, the previous default),
``lexical`` (BM25 only), ``dense`` (vectors only), and ``--neighbors 1``
(adds neighbouring turns as previews; the hits themselves do not change).

The kit lives in ``../shared/eval`` beside the repository unless ``--eval-dir``
or ``$FUNES_EVAL_DIR`` says otherwise.  LoCoMo is CC BY-NC 4.0: corpora and
results stay in the work folder (``benchmarks/.work/``, git-ignored) and are
never committed.

    .venv/bin/python benchmarks/eval_recall.py                # dev, all variants
    .venv/bin/python benchmarks/eval_recall.py --baselines --scale 100000 --write
    .venv/bin/python benchmarks/eval_recall.py --splits heldout --dataset /path/to/locomo10.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SECTION = "## Recall quality (LoCoMo dev)"
METRICS = ("R@1", "R@5", "R@10", "MRR@10", "nDCG@10")
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")
# name → (fusion, neighbours)
VARIANTS = {
    "convex": ("convex", 0),
    "convex+neighbors": ("convex", 1),
    "rrf": ("rrf", 0),
    "lexical": ("lexical", 0),
    "dense": ("dense", 0),
}
BASELINES = ("bm25", "dense", "hybrid")
PACKAGES = ("bm25s", "PyStemmer", "lancedb", "pylance", "onnxruntime", "numpy", "pyarrow")


def eval_dir(arg: str | None) -> Path:
    folder = Path(arg or os.environ.get("FUNES_EVAL_DIR") or REPO.parent / "shared" / "eval").resolve()
    if not (folder / "harness.py").is_file():
        raise SystemExit(f"no evaluation kit in {folder}: pass --eval-dir or set FUNES_EVAL_DIR")
    return folder


def funes_cmd() -> str:
    script = Path(sys.executable).with_name("funes")
    return shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m funes.cli"


def build_corpus(kit: Path, corpus: Path, split: str, dataset: Path | None, force: bool) -> None:
    if (corpus / "qrels.jsonl").is_file() and not force:
        return
    cmd = [sys.executable, str(kit / "build_corpus.py"), "--out", str(corpus), "--split", split, "--force"]
    if dataset:
        cmd += ["--dataset", str(dataset)]
    subprocess.run(cmd, check=True)


def kit_env(corpus: Path) -> list[str]:
    home = corpus / "home"
    return ["--env", f"FUNES_HOME={home / '.funes'}", "--env", "FUNES_NO_DAGSTER_RECORD=1",
            "--env", "HF_HUB_OFFLINE=1", "--env", "FUNES_FUSION="]


def run_variant(kit: Path, corpus: Path, results: Path, name: str, index: bool) -> dict:
    fusion, neighbors = VARIANTS[name]
    out = results / f"{name}.jsonl"
    cmd = [sys.executable, str(kit / "harness.py"), "--corpus", str(corpus), "--out", str(out), "--match", "text",
           "--batch-cmd", f"{funes_cmd()} recall --batch {{queries}} -k {{k}} --json --no-rerank"
                          f" --neighbors {neighbors} --fusion {fusion}", *kit_env(corpus)]
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


def run_baselines(kit: Path, corpus: Path, results: Path, dataset: Path | None) -> dict[str, dict]:
    folder = results / "baselines"
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
        run["no_adv"] = sc.score(qrels, results, run["match"], exclude_categories=(5,))


def latency(memory: Path, cache: Path, queries: list[str], fusion: str = "convex") -> dict:
    """Warm in-process recall of every query (k 10, no rerank, no neighbours) on the
    memory folder ``memory``: p50/p95 in ms."""
    os.environ.setdefault("FUNES_CACHE_DIR", str(cache))  # the ONNX export the index run made
    os.environ["HF_HUB_OFFLINE"] = "1"
    from funes.memory.location import location_for
    from funes.memory.store import Memory
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

    from funes.embedding import IDENTITY
    from funes.memory.location import location_for
    from funes.memory.store import Memory, MemoryWriter

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
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        for copy in range(copies):
            table = rows
            for column in ("id", "session_id"):
                values = [f"{copy:04x}{v[4:]}" if column == "id" else f"{v}-{copy}"
                          for v in rows.column(column).to_pylist()]
                table = table.set_column(table.schema.get_field_index(column), column, pa.array(values))
            writer.table.add(table.select(writer.table.schema.names))
        writer.sync_lexical()
        writer.maintain()
    return folder


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return (f"{os.cpu_count()} CPU cores ({cpu}), no GPU used, Python {platform.python_version()},"
            f" {', '.join(versions)}; funes at {commit or '?'} plus the working tree;"
            f" {datetime.now(timezone.utc):%Y-%m-%d}")


def table(runs: dict[str, dict], key: str = "all") -> list[str]:
    head = "| run | " + " | ".join(METRICS) + " | R@10 excl. adv. | MRR@10 excl. adv. | recall s (batch) |"
    lines = [head, "|" + " --- |" * (len(METRICS) + 4)]
    for name, run in runs.items():
        o, x = run["all"]["overall"], run["no_adv"]["overall"]
        cells = [f"{o[m]:.3f}" for m in METRICS] + [f"{x['R@10']:.3f}", f"{x['MRR@10']:.3f}",
                                                       str(run["timing"].get("recall_s", "—"))]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def category_table(runs: dict[str, dict]) -> list[str]:
    lines = ["| run | " + " | ".join(f"{c} (n)" for c in CATEGORIES) + " |", "|" + " --- |" * (len(CATEGORIES) + 1)]
    for name, run in runs.items():
        by = run["all"]["by_category"]
        cells = [f"{by[c]['R@10']:.3f} / {by[c]['MRR@10']:.3f}" if c in by else "—" for c in CATEGORIES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    counts = {c: run["all"]["by_category"].get(c, {}).get("n", 0) for c in CATEGORIES for run in runs.values()}
    lines[0] = "| run | " + " | ".join(f"{c} ({counts[c]})" for c in CATEGORIES) + " |"
    return lines


def report(split_runs: dict[str, dict[str, dict]], latencies: list[tuple[str, dict]]) -> str:
    out = []
    for split, runs in split_runs.items():
        out += [f"**{split}** split, all {next(iter(runs.values()))['all']['overall']['n']} questions "
                "(R@k, MRR@10, nDCG@10 overall; 'excl. adv.' leaves out the adversarial category):", ""]
        out += table(runs) + [""]
        out += [f"Per category, R@10 / MRR@10 ({split}):", ""] + category_table(runs) + [""]
    if latencies:
        out += ["Warm in-process recall, k 10, no rerank, no neighbours, one query at a time:", "",
                "| memory | chunks | queries | p50 ms | p95 ms |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {name} | {lat['chunks']:,} | {lat['n']} | {lat['p50_ms']} | {lat['p95_ms']} |"
                for name, lat in latencies]
        out += [""]
    return "\n".join(out)


def write_section(body: str, path: Path = REPO / "BENCHMARKS.md") -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    section = f"{SECTION}\n\n{body.rstrip()}\n"
    start = text.find(f"{SECTION}\n")
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        following = re.search(r"^## ", text[start + len(SECTION):], flags=re.MULTILINE)
        end = start + len(SECTION) + following.start() if following else len(text)
        text = text[:start] + section + ("\n" + text[end:] if following else "")
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", help="the evaluation kit (default $FUNES_EVAL_DIR, else ../shared/eval)")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / ".work", help="corpora and results")
    ap.add_argument("--splits", default="dev", help="dev, heldout or dev,heldout")
    ap.add_argument("--dataset", type=Path, help="LoCoMo file for build_corpus.py (heldout needs locomo10.json)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    ap.add_argument("--baselines", action="store_true", help="also run the kit's baselines.py (about 3 min)")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the corpora and memories from scratch")
    ap.add_argument("--no-latency", action="store_true", help="skip the in-process latency measurement")
    ap.add_argument("--scale", type=int, default=0, help="also time recall on a memory of about N chunks")
    ap.add_argument("--write", action="store_true", help=f"replace '{SECTION}' in BENCHMARKS.md")
    args = ap.parse_args(argv)

    kit = eval_dir(args.eval_dir)
    args.work.mkdir(parents=True, exist_ok=True)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}: choose from {', '.join(VARIANTS)}")
    split_runs: dict[str, dict[str, dict]] = {}
    latencies: list[tuple[str, dict]] = []
    for split in [s.strip() for s in args.splits.split(",") if s.strip()]:
        corpus = args.work / f"corpus-{split}"
        results = args.work / f"results-{split}"
        if args.rebuild and corpus.exists():
            import shutil

            shutil.rmtree(corpus)
        build_corpus(kit, corpus, split, args.dataset, args.rebuild)
        runs: dict[str, dict] = {}
        for position, name in enumerate(variants):
            print(f"[{split}] {name} …", file=sys.stderr, flush=True)
            runs[name] = run_variant(kit, corpus, results, name, index=position == 0)
        if args.baselines:
            print(f"[{split}] kit baselines …", file=sys.stderr, flush=True)
            runs.update(run_baselines(kit, corpus, results, args.dataset))
        score_runs(kit, corpus, runs)
        split_runs[split] = runs
        (results / "summary.json").write_text(json.dumps(
            {name: {k: v for k, v in run.items() if k != "results"} for name, run in runs.items()}, indent=1))
        if not args.no_latency:
            queries = [json.loads(line)["question"] for line in (corpus / "qrels.jsonl").read_text().splitlines()]
            home = corpus / "home" / ".funes"
            latencies.append((f"{split} corpus", latency(home / "memory", home / "cache", queries)))
            if args.scale:
                scaled = scaled_memory(corpus, args.work, args.scale)
                latencies.append((f"{split} corpus copied to {args.scale:,}",
                                  latency(scaled / "memory", home / "cache", queries)))
    body = report(split_runs, latencies)
    print(body)
    if args.write:
        write_section(f"Measured with `benchmarks/eval_recall.py` on {machine()}.\n\n{body}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
