"""Vector index upkeep: what the index that writers now keep (funes.memory.upkeep,
``MemoryWriter.keep_indexes``) costs to build and saves each search, on a memory
a first index left with most rows still waiting for a vector.

    python benchmarks/vector_index.py --memory-home FUNES_HOME [--home HOME] [--vectors N] [--runs 7] [--write]
    python benchmarks/vector_index.py --report-only --write     # the section again from the stored runs

FUNES_HOME's memory is copied under benchmarks/.work/vector-index/ without its
vector index (``--vectors N``: with the vectors of N rows only, the rest cleared, to
measure a memory earlier in its first index), then copied again: one copy stays
without (how every memory was searched before: a flat search that reads the vector
column of every row), the other gets what ``keep_indexes`` does (timed: wall and this process's CPU,
Lance's threads included): the vector index built, and the BTREE on ``id``, which
filling in vectors left covering few fragments, refreshed.  Then, alternating the two
copies so both see the same load: the vector search alone in a fresh process
(``Memory.vector_search`` for each query's embedding, first and warm), cold `funes
recall` processes (wall, CPU), and warm recall through one `funes mcp` server each.
The hits are compared too: the exact index must return what the flat search does.
Each run is kept in benchmarks/.work/vector-index-runs.json (one per ``--vectors``);
``--write`` renders them all into the section.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_throughput import WORK  # noqa: E402
from recall_latency import QUERIES, cold_runs, load_average, mcp_warm  # noqa: E402
from report import machine, write_section  # noqa: E402

SECTION = "Vector index upkeep"
PREFACE = (
    "What `MemoryWriter.keep_indexes` (docs/architecture.md, \"Two speeds\") costs and saves on the memory a"
    " day-zero run left (`benchmarks/day_zero.py`, 300k chunks, most without a vector): before it, nothing but"
    " `funes maintain` built a vector index, so every search read the vector column of every row. One"
    " subsection per kind of index it builds; the IVF_FLAT one is exact, the IVF_PQ one approximate.")
RUNS = WORK / "vector-index-runs.json"  # beside the copies, which each run replaces


def render(runs: dict) -> str:
    return "\n\n".join([PREFACE] + [f"### {run['did'].split(',')[0]}\n\n{run['body']}"
                                     for _, run in sorted(runs.items(), key=lambda kv: kv[1]["did"])])


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def copies(source: Path, vectors: int | None) -> tuple[Path, Path]:
    """(flat, indexed) copies of ``source``'s memory folder, both without a vector
    index and, with ``vectors``, with only that many rows' vectors (the first ids)."""
    import lance
    import lancedb

    from funes.memory.sql import sql_in

    target = WORK / "vector-index"
    shutil.rmtree(target, ignore_errors=True)
    flat, indexed = target / "flat", target / "indexed"
    shutil.copytree(source / "memory", flat / "memory")
    dataset = lance.dataset(str(flat / "memory" / "chunks.lance"))
    for index in dataset.describe_indices():
        if "vector" in index.field_names:
            dataset.drop_index(index.name)
    if vectors is not None:
        ids = sorted(dataset.to_table(columns=["id"], filter="vector IS NOT NULL").column("id").to_pylist())
        cleared = ids[vectors:]
        table = lancedb.connect(str(flat / "memory")).open_table("chunks")
        for start in range(0, len(cleared), 2000):
            table.update(where=sql_in("id", cleared[start:start + 2000]), values={"vector": None})
    shutil.copytree(flat / "memory", indexed / "memory")
    return flat, indexed


def build_index(funes_home: Path) -> dict:
    """``keep_indexes`` on ``funes_home``'s memory, timed, as a writer runs it."""
    os.environ["FUNES_HOME"] = str(funes_home)
    from funes.indexing import open_writer
    from funes.memory.location import local_memory

    with open_writer(local_memory()) as writer:
        embedded = writer.embedded_count()
        rows = writer.table.count_rows()
        started, cpu = time.perf_counter(), cpu_seconds()
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        did = writer.keep_indexes()
        return {"did": did, "rows": rows, "embedded": embedded, "wall_s": round(time.perf_counter() - started, 2),
                "cpu_s": round(cpu_seconds() - cpu, 2), "rss_before_mb": round(rss_before),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def search_only(funes_home: Path) -> dict:
    """In a fresh process: each query's ``Memory.vector_search`` (k 30, the recall
    pool), the first call and the warm p50, and the ids found."""
    script = (
        "import json, sys, time\n"
        "from funes.embedding import load_embedder\n"
        "from funes.memory.location import local_memory\n"
        "from funes.memory.reader import Memory\n"
        "queries = json.loads(sys.argv[1])\n"
        "vectors = load_embedder('cpu').embed(queries)\n"
        "memory = Memory.open(local_memory())\n"
        "times, hits = [], []\n"
        "for vector in vectors:\n"
        "    started = time.perf_counter()\n"
        "    hits.append([i for i, _ in memory.vector_search(vector, 30)])\n"
        "    times.append(time.perf_counter() - started)\n"
        "print(json.dumps({'times': times, 'hits': hits}))\n")
    env = {**os.environ, "FUNES_HOME": str(funes_home)}
    out = subprocess.run([sys.executable, "-c", script, json.dumps(QUERIES)], env=env, capture_output=True,
                         text=True, check=True)
    result = json.loads(out.stdout.splitlines()[-1])
    warm = sorted(result["times"][1:])
    return {"first_ms": round(result["times"][0] * 1000, 1), "warm_p50_ms": round(warm[len(warm) // 2] * 1000, 1),
            "hits": result["hits"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory-home", type=Path, help="FUNES_HOME whose memory is measured (copied)")
    ap.add_argument("--home", type=Path, help="HOME for the recall processes (where its transcripts are)")
    ap.add_argument("--vectors", type=int, help="keep the vectors of this many rows only (the first ids)")
    ap.add_argument("--runs", type=int, default=7, help="alternated rounds (cold processes per copy)")
    ap.add_argument("--write", action="store_true", help=f"replace the `## {SECTION}` section of BENCHMARKS.md")
    ap.add_argument("--report-only", action="store_true", help="render the stored runs; measure nothing")
    args = ap.parse_args()
    if args.report_only:
        if not RUNS.exists():
            raise SystemExit(f"no stored run in {RUNS}")
        body = render(json.loads(RUNS.read_text()))
        print(body)
        if args.write:
            write_section(SECTION, body)
        return 0
    if args.memory_home is None:
        ap.error("--memory-home is required (or --report-only)")

    flat, indexed = copies(args.memory_home, args.vectors)
    load_before = load_average()
    built = build_index(indexed)
    if not built["did"]:
        raise SystemExit(f"keep_indexes did nothing on this memory ({built['embedded']} rows with a vector)")
    envs = {}
    for name, funes_home in (("flat", flat), ("indexed", indexed)):
        envs[name] = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_NO_DAGSTER_RECORD": "1",
                      "FUNES_RERANKER": "none"}
        if args.home:
            envs[name]["HOME"] = str(args.home)
    searches: dict[str, list[dict]] = {"flat": [], "indexed": []}
    colds: dict[str, list[dict]] = {"flat": [], "indexed": []}
    query = "why did the build fail after the migration"
    for _ in range(args.runs):
        for name in ("flat", "indexed"):
            searches[name].append(search_only(Path(envs[name]["FUNES_HOME"])))
            colds[name].append(cold_runs(envs[name], [query]))
    mcp = {name: mcp_warm(envs[name], QUERIES) for name in ("flat", "indexed")}
    load_after = load_average()
    pairs = [(f, i) for flat_run, indexed_run in zip(searches["flat"], searches["indexed"], strict=True)
             for f, i in zip(flat_run["hits"], indexed_run["hits"], strict=True)]
    same = all(f == i for f, i in pairs)
    overlap = sum(len(set(f) & set(i)) / max(1, len(f)) for f, i in pairs) / len(pairs)

    def median(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[len(ordered) // 2]

    rows = []
    for name, label in (("flat", "no vector index (before)"), ("indexed", f"{built['did']} (now)")):
        rows.append(f"| {label} | {median([s['first_ms'] for s in searches[name]])} / "
                    f"{median([s['warm_p50_ms'] for s in searches[name]])} | "
                    f"{median([c['p50_ms'] for c in colds[name]])} / {median([c['cpu_p50_ms'] for c in colds[name]])} | "
                    f"{mcp[name]['p50_ms']} / {mcp[name]['p95_ms']} |")
    body = "\n".join([
        f"`python benchmarks/vector_index.py --memory-home {args.memory_home.name}"
        f"{f' --vectors {args.vectors}' if args.vectors else ''} --runs {args.runs}` — "
        f"{built['rows']:,} chunks, {built['embedded']:,} with a vector; the two copies alternated "
        f"{args.runs} times (module docstring: what each figure is); reranker off.",
        "", f"Machine: {machine()}; load (1/5/15 min) {load_before} at the start, {load_after} at the end.",
        "", f"Building it (`keep_indexes`: {built['did']}): {built['wall_s']} s wall, {built['cpu_s']} CPU s; "
        f"the process's peak RSS {built['rss_before_mb']} MB before, {built['peak_rss_mb']} MB after.",
        f"Hits of the vector search (k 30, {len(QUERIES)} queries × {args.runs}): "
        + ("identical with and without the index." if same else
           f"differ: on average {overlap:.1%} of the flat search's 30 are among the index's 30 "
           "(IVF_PQ is approximate; the refine step re-ranks 5 × k candidates by their full vectors)."),
        "", "| memory | vector search alone, first / warm p50 ms | cold `funes recall` p50 wall / CPU ms "
        "| MCP recall warm p50 / p95 ms |", "| --- | --- | --- | --- |", *rows])
    print(body)
    runs = json.loads(RUNS.read_text()) if RUNS.exists() else {}
    runs[str(args.vectors or "all")] = {"did": built["did"], "body": body}
    RUNS.write_text(json.dumps(runs, indent=1))
    if args.write:
        write_section(SECTION, render(runs))
    return 0 if same or "IVF_PQ" in built["did"] else 1  # PQ is approximate: its hits may differ


if __name__ == "__main__":
    raise SystemExit(main())
