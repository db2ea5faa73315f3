"""Hub-tier recall latency: the same memory recalled locally, and from a Hub dataset repo
cold (a machine that never read it) and warm (read before, head pinned), against the
loopback test Hub (tests/helpers/hub_server.py).

* The memory: ``--chunks`` rows of real transcript text with random unit vectors
  (benchmarks/hooks.py ``synthesise_memory``), pushed once with ``funes push``.
* Every recall is a fresh ``funes recall <query> --no-rerank --json`` process, timed
  until it exits: what an agent calling the CLI waits for.  Modes:
  local (``$FUNES_HOME`` memory), cold (new FUNES_HOME, empty HF cache, no derived BM25
  index: download the live files, derive the index, recall), warm (pinned head, files
  and index cached: no request), revalidated (warm, but ``FUNES_HUB_HEAD_TTL=0``: one
  request to resolve the head, nothing else).
* Requests per recall are the test Hub's counters.  Loopback has no network latency;
  on the real Hub each request costs a round trip (~0.1-0.3 s), which cold and
  revalidated reads pay and warm reads never do.

    .venv/bin/python benchmarks/hub_recall.py [--chunks 20000] [--queries 10] [--no-write]

Goal: warm within 1.2x local.

``--release`` measures instead what ``funes release`` costs against a plain ``funes push``
of the same memory: a checkout tagged v1.0.0 and a memory of its project's
sessions, all dated before the tag and all included (``funes curate``), so both ship the
same chunks, each to a new dataset repo.  Per memory (the 12-chunk fixture and
``--chunks``): the call's wall time in this process (the CLI's start-up comes on top,
alike), Hub requests and request bytes sent.  Prints a markdown table; writes nothing.

    .venv/bin/python benchmarks/hub_recall.py --release [--chunks 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

import report  # noqa: E402
import corpus  # noqa: E402
from hooks import synthesise_memory  # noqa: E402
from hub_server import TEST_TOKEN, HubServer  # noqa: E402

FUNES = [sys.executable, "-m", "funes.cli"]
REPO_ID = "bench-user/memory"
QUERIES = [
    "why did the test fail after the refactor",
    "download the library files",
    "photo-realistic 3D model of the earth",
    "fix the flaky upload",
    "database migration rollback",
    "which command builds the project",
    "the agent executes a happy-path scenario",
    "memory usage of the indexer",
    "add a progress bar",
    "rename the configuration option",
    "compaction of the session history",
    "how to run the benchmarks",
]


# Opening the memory and one recall, timed inside one process after its imports:
# the part of a recall where reading a Hub memory could cost more than a local one.
PROBE = """
import json, sys, time
import lance
from huggingface_hub import constants
from funes.embedding import load_embedder
from funes.hub import reader
from funes.retrieval.access import open_memory
from funes.retrieval.search import Recaller
started = time.perf_counter()
memory = open_memory(sys.argv[1] or None)
opened = time.perf_counter()
Recaller.open(memory, rerank=False).recall(sys.argv[2], k=8)
print(json.dumps({"open": opened - started, "total": time.perf_counter() - started}))
"""


def probe(env: dict[str, str], query: str, memory: str | None) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", PROBE, memory or "", query], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


def recall(env: dict[str, str], query: str, memory: str | None) -> float:
    args = [*FUNES, "recall", query, "--no-rerank", "--json", "-k", "8", *(["--memory", memory] if memory else [])]
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(args)}: {done.stderr}")
    return elapsed


def summary(samples: list[float], requests: list[int]) -> dict:
    return {**report.percentiles(samples), "mean_ms": round(statistics.fmean(samples) * 1000, 1),
            "requests": round(statistics.fmean(requests), 1)}


def measure(work: Path, server: HubServer, base: dict[str, str], cache: Path, queries: list[str]) -> dict:
    key_dir = cache / "hub" / server.endpoint.split("://", 1)[1].replace(":", "_")
    local_env = {**base, "FUNES_HOME": str(work / "origin")}
    warm_env = {**base, "FUNES_HOME": str(work / "warm"), "HF_HUB_CACHE": str(work / "hf-warm")}
    recall(warm_env, queries[0], REPO_ID)  # the warm reader has read the memory once
    modes = ("local", "cold", "warm", "revalidated")
    wall: dict[str, list[float]] = {mode: [] for mode in modes}
    requests: dict[str, list[int]] = {mode: [] for mode in modes}
    inside: dict[str, dict[str, list[float]]] = {mode: {"open": [], "total": []} for mode in ("local", "warm")}
    for number, query in enumerate(queries):
        shutil.rmtree(key_dir, ignore_errors=True)  # what a fresh host has not derived yet
        runs = {
            "local": (local_env, None),
            "cold": ({**base, "FUNES_HOME": str(work / f"cold-{number}"),
                      "HF_HUB_CACHE": str(work / f"hf-cold-{number}")}, REPO_ID),
            "warm": (warm_env, REPO_ID),
            "revalidated": ({**warm_env, "FUNES_HUB_HEAD_TTL": "0"}, REPO_ID),
        }
        for mode, (env, memory) in runs.items():
            server.reset_counts()
            wall[mode].append(recall(env, query, memory))
            requests[mode].append(server.request_count)
            if mode in inside:
                for part, seconds in probe(env, query, memory).items():
                    inside[mode][part].append(seconds)
        print(json.dumps({"query": query, **{mode: round(wall[mode][-1] * 1000) for mode in modes}}), flush=True)
    results = {mode: summary(wall[mode], requests[mode]) for mode in modes}
    for mode, parts in inside.items():
        results[mode]["in_process"] = {part: report.percentiles(samples)["p50_ms"] for part, samples in parts.items()}
    return results


def markdown(memory: dict, push: dict, latencies: dict, queries: int) -> str:
    ratio = latencies["warm"]["p50_ms"] / latencies["local"]["p50_ms"]
    inside = {mode: latencies[mode]["in_process"] for mode in ("local", "warm")}
    inside_ratio = inside["warm"]["total"] / inside["local"]["total"]
    rows = "\n".join(f"| {mode} | {row['p50_ms']} | {row['p95_ms']} | {row['mean_ms']} | {row['requests']} |"
                     for mode, row in latencies.items())
    return f"""Written by `benchmarks/hub_recall.py`. Machine: {report.machine()}.

A memory of {memory['chunks']} chunks (real transcript text, random unit vectors) pushed with
`funes push` to the loopback test Hub in {push['seconds']} s ({push['files']} files, {push['megabytes']} MB in
one commit), then recalled with `funes recall <query> --no-rerank` in a fresh process per query,
{queries} queries per mode. Wall time until the process exits, so
imports and the query embedding are included (they are the same in every mode). The modes take
turns query by query, so they share whatever else the machine runs alike (1-minute load average
at the end: {os.getloadavg()[0]:.1f}).

| mode | p50 ms | p95 ms | mean ms | Hub requests |
| --- | --- | --- | --- | --- |
{rows}

Inside one process, after its imports (p50 ms): opening the memory {inside['local']['open']} local vs
{inside['warm']['open']} warm; opening plus one recall {inside['local']['total']} local vs {inside['warm']['total']} warm
(**{inside_ratio:.2f}×**).

* **warm / local (p50, whole process): {ratio:.2f}×** (goal ≤ 1.2×). A warm read resolves nothing: the head is pinned for
  `FUNES_HUB_HEAD_TTL` (60 s), the commit's live files are in the HF cache and its BM25 index in funes'
  cache, so it opens a local table exactly like the local memory, plus a few `stat` calls.
* **cold**: a machine that never read the memory: resolve the head, download the newest manifest and the
  live data files (one HEAD and one GET each), derive the BM25 index, then recall. Loopback hides network
  latency; on the real Hub add one round trip per request and the transfer of the table.
* **revalidated**: warm after the pin expired: one request to resolve the head; the commit is unchanged, so
  nothing else is fetched.
"""


class CountingHub(HubServer):
    """The test Hub, also adding up the bytes of the request bodies it receives."""

    uploaded = 0

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes):
        with self._stats_lock:
            self.uploaded += len(body)
        return super().handle(method, raw_path, headers, body)


PROJECT, TAG, TAG_DATE = "bench/app", "v1.0.0", "2026-06-01T12:00:00Z"


def tagged_checkout(folder: Path) -> Path:
    """A git checkout of the project with one commit, tagged TAG at TAG_DATE."""
    folder.mkdir()
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.test", "GIT_AUTHOR_DATE": TAG_DATE,
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.test", "GIT_COMMITTER_DATE": TAG_DATE}
    (folder / "VERSION").write_text(TAG)
    for args in (["init", "--quiet", "--initial-branch=main"], ["add", "VERSION"],
                 ["commit", "--quiet", "-m", "release"], ["tag", TAG]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, env=env)
    return folder


def release_costs(work: Path, server: CountingHub, sizes: dict[str, tuple[int, int]]) -> dict[str, dict]:
    """{memory: {"push"|"release": {seconds, requests, bytes}}} for memories of
    ``sizes[name] = (chunks, chunks per session)`` of PROJECT's sessions, dated before TAG."""
    from hub_helpers import chunk, run_cli, write_memory

    from funes.hub.push import push
    from funes.hub.release import release

    checkout = tagged_checkout(work / "app")
    texts = corpus.real_texts(min_chars=40)
    costs: dict[str, dict] = {}
    for number, (name, (chunks, per_session)) in enumerate(sizes.items()):
        os.environ["FUNES_HOME"] = str(work / f"release-{number}")
        write_memory([chunk(f"session-{i // per_session:03d}", i, texts[i % len(texts)][:1200], repo=PROJECT,
                            cwd=str(checkout)) for i in range(chunks)])
        sessions = [f"session-{s:03d}" for s in range(-(-chunks // per_session))]
        released = f"bench-user/released-{number}"
        with contextlib.redirect_stdout(io.StringIO()):
            if run_cli("curate", released, PROJECT, *(arg for s in sessions for arg in ("--include", s)), "--json"):
                raise SystemExit(f"funes curate {released} failed")
        # The first push in a process loads the secret scanner and the Hub client: not a cost of either.
        push(f"bench-user/warm-up-{number}", assume_yes=True)
        runs = {"push": lambda: push(f"bench-user/pushed-{number}", assume_yes=True),
                "release": lambda: release(released, TAG, checkout=checkout, assume_yes=True)}
        costs[name] = {}
        for step, call in runs.items():
            server.reset_counts()
            server.uploaded = 0
            started = time.perf_counter()
            call()
            costs[name][step] = {"seconds": round(time.perf_counter() - started, 2),
                                 "requests": server.request_count, "bytes": server.uploaded}
        print(json.dumps({name: costs[name]}), flush=True)
    return costs


def release_markdown(costs: dict[str, dict]) -> str:
    rows = "\n".join(
        f"| {name} | {row['push']['seconds']} / {row['release']['seconds']} | {row['push']['requests']} / "
        f"{row['release']['requests']} | {row['push']['bytes'] / 1e3:,.1f} / {row['release']['bytes'] / 1e3:,.1f} |"
        for name, row in costs.items())
    return f"""| memory | seconds, push / release | Hub requests | KB sent |
| --- | --- | --- | --- |
{rows}

1-minute load average at the end: {os.getloadavg()[0]:.1f}.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=None, help="memory size (default 20,000; 2,000 with --release)")
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--no-write", action="store_true", help="print, do not update BENCHMARKS.md")
    parser.add_argument("--release", action="store_true", help="funes release against funes push; prints only")
    args = parser.parse_args()
    queries = QUERIES[:args.queries]
    cache = Path(os.environ.get("FUNES_CACHE_DIR") or Path.home() / ".funes" / "cache")
    with tempfile.TemporaryDirectory(prefix="funes-hub-bench-") as scratch:
        work = Path(scratch)
        with CountingHub(work / "hub") as server:
            base = {**os.environ, "HOME": str(work / "home"), "FUNES_CACHE_DIR": str(cache),
                    "FUNES_NO_DAGSTER_RECORD": "1", "HF_ENDPOINT": server.endpoint, "HF_TOKEN": TEST_TOKEN,
                    "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(work / "hf-home"),
                    "HF_HUB_CACHE": str(work / "hf-origin")}
            os.environ.update(base, FUNES_HOME=str(work / "origin"))
            if args.release:
                chunks = args.chunks or 2_000
                print(release_markdown(release_costs(work, server, {"fixture (12 chunks, 3 sessions)": (12, 4),
                                                                    f"{chunks:,} chunks": (chunks, 200)})))
                return 0
            args.chunks = args.chunks or 20_000
            memory = synthesise_memory(args.chunks)
            print(json.dumps({"memory": memory}), flush=True)
            started = time.perf_counter()
            pushed = subprocess.run([*FUNES, "push", REPO_ID, "--yes"], env=os.environ.copy(), capture_output=True,
                                    text=True)
            if pushed.returncode:
                raise SystemExit(pushed.stderr)
            tree = _tree(server)
            push = {"seconds": round(time.perf_counter() - started, 1), "files": len(tree),
                    "megabytes": round(sum(tree.values()) / 1e6, 1)}
            print(json.dumps({"push": push, "stderr": pushed.stderr.strip()}), flush=True)
            latencies = measure(work, server, base, cache, queries)
    body = markdown(memory, push, latencies, len(queries))
    if args.no_write:
        print(body)
    else:
        report.write_section("Hub tier", body)
    return 0


def _tree(server: HubServer) -> dict[str, int]:
    """{path: bytes} of the files the push committed (the table and the card)."""
    git_dir = server.git_dir(REPO_ID, "dataset")
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-l", "main"],
                             capture_output=True, text=True, check=True).stdout
    entries = (line.split(None, 4) for line in listing.splitlines())
    return {path: int(size) for _, _, _, size, path in entries if path != ".gitattributes"}


if __name__ == "__main__":
    sys.exit(main())
