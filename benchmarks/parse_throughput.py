"""Parse + chunk + redact throughput, one core, on the LoCoMo dev corpus and on a
≥ 100 MB synthetic history (goal: ≥ 20 MB/s of transcript, so reading never
limits indexing).  Rates are per CPU second of the measuring process
(``time.process_time``, every thread of it); on a shared machine wall-clock time
measures the other jobs as much as the work, so it is printed beside them.
Parsing alone, per agent format: benchmarks/parse.py.

    python benchmarks/parse_throughput.py [--synthetic-mb 100] [--eval-dir DIR] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import REPO, machine, write_section  # noqa: E402
from synthetic import make_history  # noqa: E402

WORK = REPO / "benchmarks" / ".work"


def measure(home: Path) -> dict:
    """Discover every unit under the agent homes of ``home`` and run the indexing
    path up to (not including) storage, timing parse alone and the whole path."""
    os.environ["HOME"] = str(home)
    from funes.chunking import chunk_session
    from funes.discovery import discover, parse_unit
    from funes.redaction import get_scanner

    get_scanner()  # compile (or load) the rules outside the timing
    units = discover()
    size = sum(u.path.stat().st_size for u in units)
    started, cpu_started = time.perf_counter(), time.process_time()
    sessions = [parse_unit(u) for u in units]
    chunks = sum(1 for s in sessions for _ in chunk_session(s))
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - started
    turns = sum(len(s.turns) for s in sessions)
    return {"files": len(units), "mb": size / 1e6, "turns": turns, "chunks": chunks, "cpu_s": cpu,
            "mb_s": size / 1e6 / cpu, "chunks_s": chunks / cpu, "wall_mb_s": size / 1e6 / wall}


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def dev_corpus(eval_dir: Path) -> Path | None:
    corpus = WORK / "corpus-dev"
    if not (corpus / "home").exists():
        if not (eval_dir / "build_corpus.py").exists():
            return None
        subprocess.run([sys.executable, str(eval_dir / "build_corpus.py"), "--out", str(corpus), "--split", "dev",
                        "--force"], check=True, capture_output=True)
    return corpus / "home"


def run_isolated(home: Path) -> dict:
    """Measure in a fresh interpreter pinned to one core."""
    code = ("import json,sys; sys.path.insert(0, sys.argv[1]); from parse_throughput import measure; "
            "print(json.dumps(measure(__import__('pathlib').Path(sys.argv[2]))))")
    command = [sys.executable, "-c", code, str(Path(__file__).parent), str(home)]
    if hasattr(os, "sched_setaffinity"):
        command = ["taskset", "-c", "0", *command]
    import json

    out = subprocess.run(command, check=True, capture_output=True, text=True, env={**os.environ}).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic-mb", type=float, default=100.0)
    # shared/eval sits beside the main checkout (/work/main) and two levels above a worktree (/work/wt/<name>).
    found = next((root / "shared" / "eval" for root in (REPO, REPO.parent, REPO.parent.parent)
                  if (root / "shared" / "eval").is_dir()), REPO.parent / "shared" / "eval")
    ap.add_argument("--eval-dir", default=os.environ.get("FUNES_EVAL_DIR", str(found)))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = []
    load_before = _load()
    dev = dev_corpus(Path(args.eval_dir))
    if dev is not None:
        rows.append(("LoCoMo dev corpus", run_isolated(dev)))
    else:
        print(f"no LoCoMo dev corpus: {args.eval_dir}/build_corpus.py not found (--eval-dir)", file=sys.stderr)
    synthetic = WORK / f"synthetic-{int(args.synthetic_mb)}mb"
    if not synthetic.exists():
        make_history(synthetic, int(args.synthetic_mb * 1e6))
    rows.append((f"synthetic history (~{int(args.synthetic_mb)} MB)", run_isolated(synthetic)))
    load_after = _load()
    lines = ["| corpus | files | MB | turns | chunks | CPU s | parse+chunk+redact MB/s | chunks/s | wall MB/s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in rows:
        lines.append(f"| {name} | {r['files']:,} | {r['mb']:.1f} | {r['turns']:,} | {r['chunks']:,} | "
                     f"{r['cpu_s']:.1f} | {r['mb_s']:.1f} | {r['chunks_s']:,.0f} | {r['wall_mb_s']:.1f} |")
    body = "\n".join([
        "`python benchmarks/parse_throughput.py` — discover, parse every transcript, chunk and redact"
        " (kingfisher, batched per session), in one process pinned to one core. MB/s and chunks/s are per CPU"
        " second of that process (`time.process_time`); wall MB/s beside them shows what the machine's load took."
        " Goal: ≥ 20 MB/s. Parsing alone, per agent format: section *Parse throughput per agent*"
        " (`benchmarks/parse.py`).", "",
        f"Machine: {machine()}.", "",
        f"Load (`uptime`) at start: `{load_before}`; at end: `{load_after}`.", "", *lines])
    print(body)
    if not args.no_write:
        write_section("Parse, chunk and redact throughput", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
