"""What the fragments the hooks leave cost a cold recall, and what compacting them saves.

    python benchmarks/hook_fragments.py --memory-home FUNES_HOME [--turns 200] [--runs 8] [--write]

Two copies of FUNES_HOME (e.g. the 300k day-zero run's, ``benchmarks/.work/day-zero/
funes-300k``) each get TURNS turns stored as the hook worker stores them: one Claude Code
transcript grown by a turn (a prompt, an answer with a shell command, the command's
output) and indexed after each (``index_memory`` with the turn's vectors, as the worker
calls it, less the backlog it then fills for up to 10 s: that merges vectors and makes no
fragment).  One copy as funes stores them (a writer compacts small fragments once
``COMPACT_SMALL_FRAGMENTS`` have gathered), the other with that threshold out of reach,
as before stop 36.  Then cold `funes recall` processes alternate between the copies
(wall and CPU, every thread), and one of each is timed by step
(benchmarks/cold_recall_phases.py).  The copies take twice the memory's disk space
under benchmarks/.work/hook-fragments and are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import real_texts  # noqa: E402
from parse_throughput import WORK  # noqa: E402
from recall_latency import cold_phases, cold_runs  # noqa: E402
from report import machine, write_section  # noqa: E402

QUERIES = ["why did the build fail after the migration", "how is the retry backoff configured",
           "which test was flaky and why", "where is the session token refreshed"]
SESSION = "7e57f4a9-0000-4000-8000-00000000f4a9"


def turn_lines(number: int, texts: list[str]) -> list[dict]:
    """One turn of a Claude Code transcript: a prompt, an answer that runs a command,
    and the command's output (tiers 1, 2 and 3)."""
    prompt, answer, command, output = (texts[(4 * number + k) % len(texts)] for k in range(4))
    stamp = f"2026-12-04T{10 + number // 3600:02d}:{number // 60 % 60:02d}:{number % 60:02d}.000Z"
    ids = [f"7e57f4a9-{number:04d}-4000-8000-{k:012d}" for k in range(3)]
    common = {"sessionId": SESSION, "cwd": "/work/app", "timestamp": stamp}
    return [
        {**common, "type": "user", "uuid": ids[0], "parentUuid": None,
         "message": {"role": "user", "content": prompt}},
        {**common, "type": "assistant", "uuid": ids[1], "parentUuid": ids[0],
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": answer},
             {"type": "tool_use", "id": f"toolu_{number:06d}", "name": "Bash", "input": {"command": command[:300]}}]}},
        {**common, "type": "user", "uuid": ids[2], "parentUuid": ids[1],
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": f"toolu_{number:06d}", "content": output}]}},
    ]


def hooked_copy(source: Path, target: Path, turns: int, compact: bool) -> dict:
    """Copy ``source`` to ``target`` and store ``turns`` turns in it as the hook worker
    does; the seconds each turn's write took, and the fragments left."""
    import lance

    from funes.embedding import load_embedder
    from funes.indexing import index_memory
    from funes.memory import store
    from funes.memory.location import local_memory
    from funes.traces import discover

    shutil.copytree(source, target, symlinks=True)
    os.environ["FUNES_HOME"] = str(target)
    texts = real_texts(min_chars=40)
    embedder = load_embedder("cpu")
    transcript = target / "hooked" / "session.jsonl"
    transcript.parent.mkdir()
    seconds, compacting, fragments = [], [], len(lance.dataset(local_memory().table_uri).get_fragments())
    threshold = store.COMPACT_SMALL_FRAGMENTS
    store.COMPACT_SMALL_FRAGMENTS = threshold if compact else sys.maxsize
    try:
        for number in range(turns):
            with transcript.open("a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(line) + "\n" for line in turn_lines(number, texts))
            started = time.perf_counter()
            index_memory(local_memory(), discover(transcript), embedder=lambda: embedder, embed_new=True,
                         backlog_budget_s=0, wait_s=0)
            seconds.append(time.perf_counter() - started)
            before, fragments = fragments, len(lance.dataset(local_memory().table_uri).get_fragments())
            if fragments < before:
                compacting.append(seconds[-1])
    finally:
        store.COMPACT_SMALL_FRAGMENTS = threshold
    left = lance.dataset(local_memory().table_uri).get_fragments()
    return {"seconds": seconds, "compacting": compacting, "fragments": len(left),
            "small": sum(1 for f in left if f.metadata.physical_rows < store.SMALL_FRAGMENT_ROWS)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory-home", type=Path, required=True, help="the FUNES_HOME to copy")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=8, help="cold recalls of each copy (alternated)")
    parser.add_argument("--write", action="store_true", help="write the section to BENCHMARKS.md")
    args = parser.parse_args()
    work = WORK / "hook-fragments"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    copies = {"compacted (funes now)": work / "compacted", "left as written (before)": work / "uncompacted"}
    try:
        stored = {name: hooked_copy(args.memory_home, path, args.turns, compact=path.name == "compacted")
                  for name, path in copies.items()}
        envs = {name: {**os.environ, "FUNES_HOME": str(path)} for name, path in copies.items()}
        walls: dict[str, list[float]] = {name: [] for name in copies}
        cpus: dict[str, list[float]] = {name: [] for name in copies}
        for run in range(args.runs):
            for name in (copies if run % 2 == 0 else reversed(list(copies))):
                figures = cold_runs(envs[name], [QUERIES[run % len(QUERIES)]])
                walls[name].append(figures["p50_ms"])
                cpus[name].append(figures["cpu_p50_ms"])
        phases = {name: cold_phases(envs[name], QUERIES[0]) for name in copies}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = ["| memory after the turns | fragments (under SMALL_FRAGMENT_ROWS) | a turn's write, median s "
            "(writes that compacted: how many, median s) | cold `funes recall` p50 / max ms (CPU p50 ms) |",
            "| --- | --- | --- | --- |"]
    for name in copies:
        done = stored[name]
        compacted = (f"{len(done['compacting'])}, {statistics.median(done['compacting']):.2f}"
                     if done["compacting"] else "none")
        rows.append(f"| {name} | {done['fragments']} ({done['small']}) | {statistics.median(done['seconds']):.2f} "
                    f"({compacted}) | {statistics.median(walls[name]):.0f} / {max(walls[name]):.0f} "
                    f"({statistics.median(cpus[name]):.0f}) |")
    steps = ["| step of one cold recall | " + " | ".join(f"{name} wall / CPU ms" for name in copies) + " |",
             "| --- | " + " | ".join("---" for _ in copies) + " |"]
    for index, (step, _, _) in enumerate(next(iter(phases.values()))):
        steps.append(f"| {step} | " + " | ".join(f"{phases[name][index][1]:.0f} / {phases[name][index][2]:.0f}"
                                                 for name in copies) + " |")
    body = "\n".join([
        f"`python benchmarks/hook_fragments.py --memory-home {args.memory_home} --turns {args.turns} --runs "
        f"{args.runs}` — {args.turns} turns (a prompt, an answer with a shell command, its output) stored one "
        "at a time as the hook worker stores them, into two copies of that memory; cold `funes recall` "
        f"alternating between the copies, {args.runs} each (module docstring).",
        "", f"Machine: {machine()}.", "", *rows, "", *steps])
    print(body)
    if args.write:
        write_section("Cold recall after the hooks' turns", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
