"""Parse throughput per agent: MB/s and sessions/s of ``parse`` alone (no chunking,
redaction or storage), over each agent's test fixtures and over the real transcripts.

Fixtures are tiny, so each agent's units are parsed again and again (the same
units, pass after pass) until the pass count and the CPU time are both large enough
to measure.  Figures are per CPU second of this process (``time.process_time``):
on a shared machine wall-clock time measures the other jobs as much as the parser,
so it is printed beside them, not used for the rates.

    nice -n 10 python benchmarks/parse.py [--real DIR] [--min-cpu-s 2] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import REPO, machine, write_section  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
REAL = Path("/work/shared/fixtures/real")
MIN_PASSES = 3


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _bytes(units) -> int:
    """The bytes the units are read from, each file once (a database holds many sessions)."""
    return sum(path.stat().st_size for path in {unit.path for unit in units})


def measure(agent, units, min_cpu_s: float) -> dict:
    """Parse ``units`` with ``agent`` pass after pass until ``min_cpu_s`` of CPU and
    MIN_PASSES passes are spent."""
    size = _bytes(units)
    passes = 0
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    while passes < MIN_PASSES or time.process_time() - cpu_started < min_cpu_s:
        for unit in units:
            agent.parse(unit)
        passes += 1
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - wall_started
    return {"files": len({u.path for u in units}), "sessions": len(units), "mb": size / 1e6, "passes": passes,
            "cpu_s": cpu, "mb_s": size * passes / 1e6 / cpu, "sessions_s": len(units) * passes / cpu,
            "wall_mb_s": size * passes / 1e6 / wall}


def fixture_sources(scratch: Path) -> list[tuple[str, Path]]:
    """(harness, root) of every agent's fixture tree: ``tests/fixtures/agents/<harness>``,
    and a Hermes database built by the fixture builder the tests use."""
    sources = [(folder.name, folder) for folder in sorted((FIXTURES / "agents").iterdir()) if folder.is_dir()]
    builder = FIXTURES / "make_hermes_db.py"
    if builder.exists():
        import importlib.util

        spec = importlib.util.spec_from_file_location("make_hermes_db", builder)
        module = importlib.util.module_from_spec(spec)
        assert spec.loader is not None
        spec.loader.exec_module(module)
        database = scratch / "hermes" / "state.db"
        database.parent.mkdir(parents=True)
        module.build(database)
        sources.append(("hermes", database))
    return sources


def grouped_real(real: Path) -> dict[str, list]:
    """The real transcripts' units by the agent detection assigns each file or folder."""
    from funes.agents import detect_agent
    from funes.errors import UsageError

    found: dict[str, list] = defaultdict(list)
    for path in sorted(real.iterdir()):
        if path.suffix == ".md":
            continue
        try:
            agent = detect_agent(path)
        except UsageError:
            continue
        found[agent.name].extend(agent.discover(path))
    return found


def table(rows: list[tuple[str, str, dict]]) -> list[str]:
    lines = ["| agent | source | files | sessions | MB per pass | passes | CPU s | MB/s | sessions/s | wall MB/s |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, source, r in rows:
        lines.append(f"| {name} | {source} | {r['files']} | {r['sessions']} | {r['mb']:.3f} | {r['passes']:,} | "
                     f"{r['cpu_s']:.1f} | {r['mb_s']:.1f} | {r['sessions_s']:,.0f} | {r['wall_mb_s']:.1f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", type=Path, default=REAL if REAL.is_dir() else FIXTURES / "real")
    ap.add_argument("--min-cpu-s", type=float, default=2.0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()

    from funes.agents import find_agent

    load_before = _load()
    rows = []
    with tempfile.TemporaryDirectory(prefix="funes-parse-bench-") as scratch:
        for harness, root in fixture_sources(Path(scratch)):
            agent = find_agent(harness)
            if agent is None:
                print(f"skipped {root}: no agent named {harness}", file=sys.stderr)
                continue
            units = list(agent.discover(root))
            if units:
                rows.append((agent.name, f"fixtures ({root.relative_to(REPO) if root.is_relative_to(REPO) else 'built'})",
                             measure(agent, units, args.min_cpu_s)))
                print(*table(rows[-1:])[2:], file=sys.stderr)
    for name, units in sorted(grouped_real(args.real).items()):
        from funes.agents import agent_named

        rows.append((name, "real transcripts", measure(agent_named(name), units, args.min_cpu_s)))
        print(*table(rows[-1:])[2:], file=sys.stderr)
    load_after = _load()

    body = "\n".join([
        "`nice -n 10 python benchmarks/parse.py` — each agent's `parse` alone (no chunking, redaction or storage) "
        "over its test fixtures and over the real transcripts in "
        f"`{args.real}` (each file or folder assigned to an agent by detection), the same units parsed pass after "
        f"pass until at least {MIN_PASSES} passes and {args.min_cpu_s:g} CPU seconds. MB/s and sessions/s are per "
        "CPU second of the process (`time.process_time`); wall MB/s beside them shows what the machine's load "
        "took. Fixtures are small and hit every trap of their format, so they are not typical sessions: the "
        "real-transcript rows are the ones to plan with.", "",
        f"Machine: {machine()}.", "",
        f"Load (`uptime`) at start: `{load_before}`; at end: `{load_after}`.", "",
        *table(rows)])
    print(body)
    if not args.no_write:
        write_section("Parse throughput per agent", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
