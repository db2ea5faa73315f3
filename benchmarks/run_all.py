"""Run every benchmark in turn and rewrite BENCHMARKS.md (`make bench`).

Each script owns one section; this only sequences them.  Scripts that need the
LoCoMo kit (../shared/eval or $FUNES_EVAL_DIR) are skipped when it is absent.
Expect about an hour on a 2-core CPU; set the machine quiet first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = Path(os.environ.get("FUNES_EVAL_DIR") or HERE.parent.parent / "shared" / "eval")

RUNS = [
    ["parse_throughput.py"],
    ["parse.py"],
    ["embed_cpu.py", "--write"],
    ["index_throughput.py"],
    ["recall_latency.py"],
    ["hooks.py"],
    ["hub_recall.py"],
    ["rerank_latency.py"],
]
if (KIT / "harness.py").exists():
    RUNS.append(["eval_recall.py", "--baselines", "--ablation", "--code-check", "--scale", "100000", "--write"])


def main() -> int:
    failed = []
    for script, *args in RUNS:
        print(f"== {script} {' '.join(args)}", flush=True)
        if subprocess.run([sys.executable, str(HERE / script), *args]).returncode:
            failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
