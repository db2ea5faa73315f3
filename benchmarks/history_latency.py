"""`scan` and `history` latency on a 300k-chunk memory: warm (in-process, memory
open) and a cold `funes scan` / `funes history` process.

    nice -n 10 python benchmarks/history_latency.py [--size 300000] [--runs 20] [--no-write]

The memory comes from the synthetic coding history (real transcripts copied under new
session ids: benchmarks/synthetic.py), every chunk stored with its provenance and
BM25-indexed by the real indexing path, then maintained (compacted, scalar indexes).
No chunk is embedded: neither command reads vectors, and embedding 300k chunks here
takes hours.  Needles and paths are ones the history holds (many blocks, few, or
none: the "0 means absent" answer reads every chunk all the same).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_throughput import WORK  # noqa: E402
from report import machine, percentiles, write_section  # noqa: E402
from synthetic import memory_of_chunks  # noqa: E402

FUNES = [sys.executable, "-m", "funes.cli"]
# (what is asked, why): a frequent needle, a rare one, one that is absent.
NEEDLES = [["package.json"], ["scenario-testing-report"], ["zq-never-written-anywhere-7731"]]
# A file many turns touched, a folder (prefix), and a path no turn touched.
PATHS = ["package.json", "src/", "no/such/file.py"]


def build_memory(target: int) -> Path:
    """FUNES_HOME of a memory of at least ``target`` chunks with provenance (built once, reused)."""
    return memory_of_chunks(WORK, "history", target, [__file__, "--build"])


def build() -> None:
    from funes.discovery import discover
    from funes.embedding import IDENTITY
    from funes.indexing import index_units
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        index_units(writer, discover())
        writer.maintain()


def warm_run(runs: int) -> dict:
    from funes.errors import FunesError
    from funes.retrieval.access import open_memory
    from funes.retrieval.filters import Filters
    from funes.retrieval.history import file_history
    from funes.retrieval.scan import scan_memory

    memory = open_memory(None)
    out: dict = {"chunks": memory.count(), "scan": {}, "history": {}}
    for needles in NEEDLES:
        scan_memory(memory, needles)  # warm-up
        samples, blocks = [], 0
        for _ in range(runs):
            started = time.perf_counter()
            result = scan_memory(memory, needles)
            samples.append(time.perf_counter() - started)
            blocks = result.totals[0].blocks
        out["scan"][needles[0]] = {"blocks": blocks, "scanned": result.blocks_scanned, **percentiles(samples)}
    for path in PATHS:
        filters = Filters.parse(file=path)
        samples, turns = [], 0
        for attempt in range(runs + 1):
            started = time.perf_counter()
            try:
                turns = file_history(memory, filters).turns
            except FunesError:
                turns = 0
            if attempt:  # the first is the warm-up
                samples.append(time.perf_counter() - started)
        out["history"][path] = {"turns": turns, **percentiles(samples)}
    return out


def cold(funes_home: Path, args: list[str], runs: int = 7) -> dict:
    env = {**os.environ, "FUNES_HOME": str(funes_home)}
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([*FUNES, *args], env=env, capture_output=True)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--warm", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        build()
        return 0
    if args.warm:
        print(json.dumps(warm_run(args.warm)))
        return 0
    funes_home = build_memory(args.size)
    load_before = os.getloadavg()[0]
    measured = subprocess.run([sys.executable, __file__, "--warm", str(args.runs)], capture_output=True, text=True,
                              env={**os.environ, "FUNES_HOME": str(funes_home)})
    if measured.returncode:
        raise SystemExit(measured.stderr)
    warm = json.loads(measured.stdout.splitlines()[-1])
    lines = ["| command | asked | found | warm p50 / p95 ms | cold process p50 / p95 ms |",
             "| --- | --- | --- | --- | --- |"]
    for needles in NEEDLES:
        figures = warm["scan"][needles[0]]
        cold_run = cold(funes_home, ["scan", *needles])
        lines.append(f"| `scan` | `{needles[0]}` | {figures['blocks']:,} block(s) of {figures['scanned']:,} | "
                     f"{figures['p50_ms']} / {figures['p95_ms']} | {cold_run['p50_ms']} / {cold_run['p95_ms']} |")
    for path in PATHS:
        figures = warm["history"][path]
        cold_run = cold(funes_home, ["history", path])
        lines.append(f"| `history` | `{path}` | {figures['turns']:,} turn(s) | "
                     f"{figures['p50_ms']} / {figures['p95_ms']} | {cold_run['p50_ms']} / {cold_run['p95_ms']} |")
    load_after = os.getloadavg()[0]
    body = "\n".join([
        "`nice -n 10 python benchmarks/history_latency.py` — `scan` (defaults: context 80, limit 50) and `history`"
        " (limit 50) on a memory built from the synthetic coding history by the real indexing path, provenance"
        " stored, maintained (compacted, scalar indexes), no vectors (neither command reads them)."
        f" Warm: one process, memory open, one warm-up, {args.runs} runs each. Cold: a new `funes` process each"
        " time, 7 runs. A history of a path no turn touched is the exit-1 answer.", "",
        f"Machine: {machine()}. Load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end"
        " (the 2 cores are shared with other work: timings move with it).", "", f"Chunks: {warm['chunks']:,}.",
        "", *lines])
    print(body)
    if not args.no_write:
        write_section("Scan and history latency", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
