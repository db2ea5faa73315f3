"""The benchmarks a maintainer reruns before a release, by name (`make bench-<name>`),
each rewriting its section of BENCHMARKS.md; `make bench` runs the default set.

    python benchmarks/run_all.py                 # the default set (about an hour on 2 cores)
    python benchmarks/run_all.py day-zero        # one or more targets by name
    python benchmarks/run_all.py --list          # every target and its commands

Each script owns one `## <title>` section and replaces only it; this only sequences
them.  Targets that need the LoCoMo kit (../shared/eval or $FUNES_EVAL_DIR) are
skipped when it is absent.  Set the machine quiet first: wall times follow the load."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = Path(os.environ.get("FUNES_EVAL_DIR") or HERE.parent.parent / "shared" / "eval")
DAY_ZERO_300K = HERE / ".work" / "day-zero" / "funes-300k"  # the memory `day-zero` leaves
DAY_ZERO_300K_HOME = HERE / ".work" / "day-zero-300k-home"  # the history it indexed

# target -> (BENCHMARKS.md section(s) it writes, commands); a command is a script and its arguments.
TARGETS: dict[str, tuple[str, list[list[str]]]] = {
    "recall": ("Recall quality / rerank stage / by embedded tier and precision / while vectors are pending (dev sets)", [
        ["eval_recall.py", "--eval-dir", str(KIT), "--variants", "convex", "--rebuild", "--no-latency"],
        ["eval_recall.py", "--eval-dir", str(KIT), "--variants", "", "--no-latency", "--tiers", "--tiers-cv",
         "--precisions", "int8", "--write"],
        ["eval_recall.py", "--eval-dir", str(KIT), "--variants", "", "--no-latency", "--backlog", "--write"],
        ["eval_rerank.py", "--eval-dir", str(KIT), "--reranker", "maxsim-static", "--answer-weights", "0,0.2,0.4,0.7,1",
         "--dense-weights", "0.4,0.5,0.6", "--write"],
        # Last: its table reads the left-out figures eval_rerank.py has just recorded.
        ["eval_recall.py", "--eval-dir", str(KIT), "--variants", "convex", "--baselines", "coding,coding2,locomo",
         "--no-latency", "--write"],
        ["eval_windows.py", "--eval-dir", str(KIT)]]),
    "latency": ("Recall latency; Stale marks' cost", [
        ["recall_latency.py"], ["recall_latency.py", "--stale", "--sizes", "10000", "--runs", "15"]]),
    "rerank": ("Recall latency (its rerank column's model; prints only)", [["rerank_latency.py"]]),
    "day-zero": ("Day zero; then Recall latency during a first index, Cold recall on the day-zero memory", [
        ["day_zero.py", "--chunks", "300000", "--embed-minutes", "10", "--write"],
        ["day_zero.py", "--chunks", "1000000", "--embed-minutes", "5", "--cold-runs", "6", "--warm-calls", "10",
         "--write"],
        ["recall_latency.py", "--first-index", "300000"],
        ["recall_latency.py", "--memory-home", str(DAY_ZERO_300K), "--home", str(DAY_ZERO_300K_HOME), "--runs", "7",
         "--during"]]),
    "vector-index": ("Vector index upkeep (needs the day-zero 300k memory)", [
        ["vector_index.py", "--memory-home", str(DAY_ZERO_300K), "--home", str(DAY_ZERO_300K_HOME), "--vectors",
         "12000", "--runs", "5", "--write"],
        ["vector_index.py", "--memory-home", str(DAY_ZERO_300K), "--home", str(DAY_ZERO_300K_HOME), "--runs", "5",
         "--write"]]),
    "vector-search": ("Vector search (needs the dev sets' memories that `recall` builds)", [
        ["vector_search.py", "--write"]]),
    "index": ("Indexing throughput and size", [["index_throughput.py"]]),
    "parse": ("Parse, chunk and redact throughput; Parse throughput per agent", [
        ["parse_throughput.py"], ["parse.py", "--mb", "8", "--min-cpu-s", "4"]]),
    "embed": ("Embedding", [["embed_cpu.py", "--write"]]),
    "gpu": ("Embedding on a GPU (prints JSON; needs CUDA)", [["gpu_embed.py", "--max-seconds", "360"]]),
    "hooks": ("Agents: hooks", [["hooks.py"]]),
    "hub": ("Hub tier", [["hub_recall.py"]]),
    "history": ("Scan and history latency", [["history_latency.py"]]),
    "pipeline": ("Pipeline overhead per session partition (needs Postgres and Redis)", [
        ["pipeline_overhead.py", "--sessions", "12"]]),
}
DEFAULT = ("parse", "embed", "index", "latency", "hooks", "hub", "rerank", "recall")
NEEDS_KIT = ("recall", "vector-search")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("targets", nargs="*", metavar="TARGET", help=f"of: {', '.join(TARGETS)} (default: "
                    f"{', '.join(DEFAULT)})")
    ap.add_argument("--list", action="store_true", help="print every target, its section and commands")
    args = ap.parse_args()
    if args.list:
        for name, (section, commands) in TARGETS.items():
            print(f"{name}: {section}")
            for command in commands:
                print(f"    python benchmarks/{shlex.join(command)}")
        return 0
    unknown = [name for name in args.targets if name not in TARGETS]
    if unknown:
        ap.error(f"unknown target {', '.join(unknown)}; expected one of {', '.join(TARGETS)}")
    failed = []
    for name in args.targets or DEFAULT:
        if name in NEEDS_KIT and not (KIT / "harness.py").exists():
            print(f"== {name}: skipped, no evaluation kit at {KIT}", flush=True)
            continue
        for script, *rest in TARGETS[name][1]:
            print(f"== {shlex.join([script, *rest])}", flush=True)
            if subprocess.run([sys.executable, str(HERE / script), *rest]).returncode:
                failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
