"""Day zero: a big history indexed from scratch the way a user first runs it, watched
from outside: when every chunk is found by keyword, how fast vectors follow (by
tier), recall latency while the indexer runs and after it stops (a cold `funes
recall` process and a warm `funes mcp` server), and the indexer's resident memory.

    nice -n 10 .venv/bin/python benchmarks/day_zero.py --chunks 30000 --embed-minutes 2     # a check
    nice -n 10 .venv/bin/python benchmarks/day_zero.py --chunks 300000 --embed-minutes 10 --write
    nice -n 10 .venv/bin/python benchmarks/day_zero.py --chunks 1000000 --embed-minutes 5 --write
    .venv/bin/python benchmarks/day_zero.py --report-only --write   # the section again from the stored runs

Goals (2-core CPU): the planted word found ≤ 30 s at 300k chunks, ≤ 2 min at
1M; ≥ 150 chunks/s embedded; text + thinking fully embedded ≤ 10 min; cold recall ≤ 1 s
while indexing, ≤ 0.8 s after; the index process ≤ 2 GB resident at 1M chunks.

The history (benchmarks/synthetic.py: copies of the real fixture transcripts, each
copy dated a day before the previous one) is built once under benchmarks/.work/ and
reused; a rare word is appended, as a user message, to the 5 sessions whose first
timestamp is oldest.  `funes index --yes` then runs in a fresh FUNES_HOME with HOME
at the history.  `--yes` embeds everything, so the cap is Ctrl-C: `--embed-minutes`
after the embedding began (the first status poll with vectors: every chunk is then
stored and in BM25), the indexer's process group gets SIGINT, as a
terminal sends it; the run checks it exits and that the next `funes status` holds
every row.  Meanwhile, from this process: a cold `funes recall --json <word>` back
to back until it returns all 5 sessions (when that answer was printed, seconds
from the indexer's start; the units are not indexed oldest last, so this can come
long before the lexical pass is over); every `--poll-s` seconds `funes status
--json` (chunks, embedded, pending by tier), a cold `funes recall "<question>"`
and a `recall` call to one `funes mcp` server (the real MCP client over stdio,
started before the indexer); every 0.5 s the RSS and CPU time of the indexer and
its children (/proc VmRSS, VmHWM, stat).  Beside each wall time, CPU time: a cold
process's own (wait4 rusage), the MCP server's for its call (/proc stat before and
after), the indexer's at lexical ready and per vector; on shared cores wall time
follows the load, CPU time far less.  Tier totals and characters per tier come from the Lance
table itself, read-only, once the indexer has stopped (status reports what is
pending by tier, not the totals).  These probes share the cores with the indexer,
as a user's agent would.  Each run is stored in benchmarks/.work/day-zero/runs.json;
`--write` renders the newest stored run of each history size into the `## Day zero`
section of BENCHMARKS.md (where things stand; the runs before stay in runs.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_throughput import WORK  # noqa: E402
from recall_latency import QUERIES  # noqa: E402
from report import REPO, children_take_ctrl_c, machine, percentiles, write_section  # noqa: E402
from synthetic import make_history_of_chunks  # noqa: E402

FUNES = [sys.executable, "-m", "funes.cli"]
RUNS = WORK / "day-zero" / "runs.json"
PLANTED_WORD = "quetzalfjord"  # in no fixture transcript
PLANTED_SESSIONS = 5
TIER_LABELS = {1: "text + thinking", 2: "tool calls", 3: "tool output"}
_TIMESTAMP = re.compile(r'"timestamp":\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# --------------------------------------------------------------------------- the history

def build_history(chunks: int) -> tuple[Path, list[str]]:
    """HOME of a history of about ``chunks`` chunks with the planted word in its 5
    oldest sessions (built once, reused); returns it and those sessions' ids."""
    home = WORK / f"day-zero-{chunks // 1000}k-home"
    marker = home / "planted.json"
    if marker.exists():
        return home, json.loads(marker.read_text())
    if home.exists():
        subprocess.run(["rm", "-rf", str(home)], check=True)  # a build that did not finish
    started = time.perf_counter()
    files, written = make_history_of_chunks(home, chunks, days_apart=1.0)
    print(f"day-zero: {files} transcripts, {written / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    planted = plant(home)
    marker.write_text(json.dumps(planted))
    return home, planted


def plant(home: Path) -> list[str]:
    """Append a user message naming PLANTED_WORD to the sessions whose first
    timestamp is oldest; returns their ids."""
    first_seen = []
    for path in home.rglob("*.jsonl"):
        stamps = _TIMESTAMP.findall(path.read_text(encoding="utf-8"))
        if stamps:
            first_seen.append((min(stamps), path))
    oldest = sorted(first_seen)[:PLANTED_SESSIONS]
    for _, path in oldest:
        if ".claude" not in path.parts:  # with copies a day apart the oldest are Claude sessions
            raise SystemExit(f"day-zero: the planted word is written as a Claude message, not into {path}")
        lines = path.read_text(encoding="utf-8").splitlines()
        last_uuid = next((u for line in reversed(lines) if (u := json.loads(line).get("uuid"))), None)
        last = datetime.strptime(max(_TIMESTAMP.findall("\n".join(lines)))[:19], "%Y-%m-%dT%H:%M:%S")
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({
                "type": "user", "uuid": f"day-zero-planted-{path.stem}", "parentUuid": last_uuid,
                "sessionId": path.stem, "timestamp": f"{last + timedelta(minutes=1):%Y-%m-%dT%H:%M:%S}.000Z",
                "message": {"role": "user", "content": f"remember the {PLANTED_WORD} flag: staging needs it set "
                                                       "before the migration runs"}}) + "\n")
    return [path.stem for _, path in oldest]


# --------------------------------------------------------------------------- watching the indexer

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its children it has reaped (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(ticks) for ticks in fields[11:15]) / CLOCK_TICKS  # utime stime cutime cstime


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(child) for child in task.read_text().split()]
        except OSError:
            pass
    return found


@dataclass
class ProcessTree:
    """RSS and CPU of a process and its descendants, sampled every 0.5 s until the root exits."""
    root: int
    peak_sum_kb: int = 0
    peak_hwm_kb: dict[int, int] = field(default_factory=dict)
    most_processes: int = 0
    rss_now_kb: int = 0
    cpu_now_s: float = 0.0

    def tree(self) -> list[int]:
        pids, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            todo += children(pid)
        return pids

    def sample(self) -> None:
        total, alive, cpu = 0, 0, 0.0
        for pid in self.tree():
            try:
                fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
                cpu += cpu_seconds(pid)
            except (OSError, ValueError):
                continue
            if "VmRSS" not in fields:  # a zombie
                continue
            alive += 1
            total += int(fields["VmRSS"].split()[0])
            self.peak_hwm_kb[pid] = max(self.peak_hwm_kb.get(pid, 0), int(fields["VmHWM"].split()[0]))
        self.rss_now_kb = total
        self.cpu_now_s = max(self.cpu_now_s, cpu)  # a child's CPU moves to its parent once reaped
        self.peak_sum_kb = max(self.peak_sum_kb, total)
        self.most_processes = max(self.most_processes, alive)


@dataclass
class Run:
    args: argparse.Namespace
    home: Path
    planted: list[str]
    funes_home: Path
    t0: float = 0.0
    t0_wall: float = 0.0  # time.time() at t0: Lance stamps its versions with the clock
    probes: list[dict] = field(default_factory=list)
    polls: list[dict] = field(default_factory=list)  # funes status --json
    recalls: list[dict] = field(default_factory=list)  # cold and warm recall samples
    failures: list[dict] = field(default_factory=list)  # probes that failed: when, and what they said
    ready_s: float | None = None
    ready_cpu_s: float | None = None  # the indexer's CPU seconds then
    sigint_s: float | None = None
    exited_s: float | None = None
    exit_code: int | None = None
    max_rss_kb: int = 0  # ru_maxrss from wait4: the largest of the indexer and its reaped children
    cpu_s: float = 0.0  # the indexer's user + system CPU, from wait4
    rss_capped_s: float | None = None  # when its RSS passed --rss-cap-gib
    query_turn: int = 0

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.home), "FUNES_HOME": str(self.funes_home)}

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def question(self) -> str:
        self.query_turn += 1
        return QUERIES[self.query_turn % len(QUERIES)]

    def funes(self, *args: str) -> tuple[float, float, subprocess.CompletedProcess]:
        """A cold `funes` process: wall seconds, CPU seconds (its rusage), what it printed."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.perf_counter()
            process = subprocess.Popen([*FUNES, *args], env=self.env, stdout=out, stderr=err)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            done = subprocess.CompletedProcess(process.args, process.returncode, out.read().decode(errors="replace"),
                                               err.read().decode(errors="replace"))
        return wall, usage.ru_utime + usage.ru_stime, done


def _text(result) -> str:
    return "\n".join(part.text for part in result.content if part.type == "text")


def _last_line(text: str) -> str:
    """What a failed probe said last (its error line), for the run's record."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


async def watch(run: Run) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from funes.retrieval.status import TIER_NAMES

    async def cold(*args: str) -> tuple[float, float, subprocess.CompletedProcess]:
        return await anyio.to_thread.run_sync(lambda: run.funes(*args))

    async def warm(session: ClientSession) -> tuple[float, float, bool, str]:
        """One MCP recall: wall seconds, the server's CPU seconds for it, whether it
        answered hits, and what it said when it did not."""
        cpu, started = cpu_seconds(server_pid), time.perf_counter()
        result = await session.call_tool("recall", {"query": run.question()})
        text = _text(result)
        ok = not result.is_error and text.startswith("[")
        return time.perf_counter() - started, cpu_seconds(server_pid) - cpu, ok, "" if ok else _last_line(text)

    async def status(failures: list[dict] | None = None) -> dict | None:
        seconds, _, done = await cold("status", "--json")
        if done.returncode:
            if failures is not None:
                failures.append({"kind": "status", "t_s": run.elapsed() - seconds, "exit": done.returncode,
                                 "said": _last_line(done.stderr)})
            return None
        full = json.loads(done.stdout)
        # Status names the tiers ("text", "tool_use", "tool_result"); kept here by number.
        tier_of = {name: str(tier) for tier, name in TIER_NAMES.items()}
        pending = {tier_of.get(name, name): n for name, n in (full.get("pending_by_tier") or {}).items()}
        return {"chunks": full.get("chunks"), "embedded": full.get("embedded"), "pending_by_tier": pending,
                "damage": full.get("damage"), "seconds": seconds}

    server = StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=run.env)
    log = (WORK / "day-zero" / f"index-{run.args.chunks // 1000}k.log").open("w")
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        server_pid = next(pid for pid in children(os.getpid())
                          if b"mcp" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
        indexer = subprocess.Popen([*FUNES, "index", "--yes"], env=run.env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        run.t0, run.t0_wall = time.monotonic(), time.time()
        tree = ProcessTree(indexer.pid)

        def reap() -> None:
            _, wait_status, usage = os.wait4(indexer.pid, 0)
            run.exited_s = run.elapsed()
            run.exit_code = indexer.returncode = os.waitstatus_to_exitcode(wait_status)
            run.max_rss_kb = usage.ru_maxrss
            run.cpu_s = usage.ru_utime + usage.ru_stime

        def sample() -> None:
            while run.exited_s is None:
                tree.sample()
                if tree.rss_now_kb > run.args.rss_cap_gib * 1024 ** 2 and run.rss_capped_s is None:
                    run.rss_capped_s = run.elapsed()  # the cores and memory are shared: stop it as a user would
                    os.killpg(indexer.pid, signal.SIGINT)
                    run.sigint_s = run.sigint_s or run.elapsed()
                    print(f"day-zero: RSS over {run.args.rss_cap_gib} GiB at {run.elapsed():.0f} s: SIGINT",
                          file=sys.stderr)
                time.sleep(0.5)

        reaper = threading.Thread(target=reap, daemon=True)
        reaper.start()
        threading.Thread(target=sample, daemon=True).start()

        async def stop_when_due() -> None:
            while run.exited_s is None:
                if run.sigint_s is None:
                    # The embedding phase begins once every chunk is stored and in BM25 (the
                    # planted sessions may be indexed, and found, long before that).
                    began = next((p["t_s"] for p in run.polls if (p["status"] or {}).get("embedded", 0) > 0), None)
                    cap = (began + run.args.embed_minutes * 60 if began is not None
                           else run.args.ready_timeout_minutes * 60)
                    if run.elapsed() >= cap:
                        os.killpg(indexer.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
                        run.sigint_s = run.elapsed()
                        print(f"day-zero: SIGINT at {run.sigint_s:.0f} s", file=sys.stderr)
                elif run.elapsed() - run.sigint_s > 120:
                    os.killpg(indexer.pid, signal.SIGKILL)
                await anyio.sleep(0.5)

        async def probe_until_ready() -> None:
            while run.ready_s is None and run.exited_s is None:
                begun = run.elapsed()
                _, _, done = await cold("recall", "--json", "-k", "10", PLANTED_WORD)
                hits = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else []
                found = sorted({h["session_id"] for h in hits} & set(run.planted))
                run.probes.append({"begun_s": begun, "answered_s": run.elapsed(), "found": len(found),
                                   "exit": done.returncode})
                if len(found) == len(run.planted):
                    run.ready_s, run.ready_cpu_s = run.elapsed(), tree.cpu_now_s
                    print(f"day-zero: lexical ready at {run.ready_s:.1f} s (that probe began at {begun:.1f} s)",
                          file=sys.stderr)
                else:
                    await anyio.sleep(run.args.probe_s)

        async def every(seconds: float, work, offset: float) -> None:
            """``work`` every ``seconds`` from ``offset`` until the indexer exits; one that
            runs late skips the ticks it missed (each probe has its own loop, so a slow one
            delays no other)."""
            due = offset
            while run.exited_s is None:
                await anyio.sleep(max(0.0, due - run.elapsed()))
                due = max(due + seconds, run.elapsed())
                if run.exited_s is None:
                    await work()

        async def poll_status() -> None:
            poll = {"t_s": run.elapsed(), "load": os.getloadavg()[0], "rss_kb": tree.rss_now_kb,
                    "cpu_s": tree.cpu_now_s}
            poll["status"] = await status(run.failures)
            run.polls.append(poll)
            s = poll["status"] or {}
            latest = {r["kind"]: r["s"] for r in run.recalls}
            print(f"day-zero: {poll['t_s']:6.0f} s  chunks {s.get('chunks') or 0:>9,}  embedded "
                  f"{s.get('embedded') or 0:>7,}  status {s.get('seconds', 0):.1f} s  last cold recall "
                  f"{latest.get('cold', 0):.1f} s, warm {latest.get('warm', 0):.1f} s  rss "
                  f"{tree.rss_now_kb / 1024:.0f} MiB  load {poll['load']:.1f}", file=sys.stderr)

        async def poll_cold() -> None:
            begun = run.elapsed()
            seconds, cpu, done = await cold("recall", run.question())
            ok = done.returncode == 0 and done.stdout.startswith("[")
            run.recalls.append({"kind": "cold", "t_s": begun, "s": seconds, "cpu_s": cpu, "ok": ok})
            if not ok:
                run.failures.append({"kind": "cold recall", "t_s": begun, "exit": done.returncode,
                                     "said": _last_line(done.stderr or done.stdout)})

        async def poll_warm() -> None:
            begun = run.elapsed()
            seconds, cpu, ok, said = await warm(session)
            run.recalls.append({"kind": "warm", "t_s": begun, "s": seconds, "cpu_s": cpu, "ok": ok})
            if not ok:
                run.failures.append({"kind": "MCP recall", "t_s": begun, "said": said})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(stop_when_due)
            tasks.start_soon(probe_until_ready)
            # A third of a poll apart: started on one tick, the cold recall shared the
            # cores with a status poll (2.5-6 s at 1M while indexing) and an MCP recall.
            for work, offset in ((poll_status, 0.0), (poll_cold, run.args.poll_s / 3),
                                 (poll_warm, 2 * run.args.poll_s / 3)):
                tasks.start_soon(every, run.args.poll_s, work, offset)
        reaper.join()
        log.close()
        print(f"day-zero: indexer exited {run.exit_code} at {run.exited_s:.0f} s", file=sys.stderr)
        after = await status()
        cold_after, warm_after = [], []
        for _ in range(run.args.cold_runs):
            seconds, cpu, done = await cold("recall", run.question())
            if done.returncode == 0:
                cold_after.append((seconds, cpu))
        for _ in range(run.args.warm_calls):
            seconds, cpu, ok, _ = await warm(session)
            if ok:
                warm_after.append((seconds, cpu))
    return {"after": after, "cold_after": cold_after, "warm_after": warm_after,
            "peak_sum_kb": tree.peak_sum_kb, "peak_single_kb": max(tree.peak_hwm_kb.values(), default=0),
            "processes": tree.most_processes}


def all_stored_s(funes_home: Path, t0_wall: float) -> float | None:
    """Seconds from the start to the commit of the table version that first held every
    chunk it ends with (Lance stamps each version and counts its rows; a first index
    only adds rows): when the lexical pass was over, to the commit, with no probe."""
    import lance

    versions = lance.dataset(str(funes_home / "memory" / "chunks.lance")).versions()
    final = int(versions[-1]["metadata"].get("total_rows", 0)) if versions else 0
    first = next((v for v in versions if final and int(v["metadata"].get("total_rows", 0)) >= final), None)
    return first["timestamp"].timestamp() - t0_wall if first else None


def vector_commits(funes_home: Path, t0_wall: float, minutes: float = 3.0) -> list[list[float]]:
    """[seconds from the start, rows with a vector] at each table version committed from
    the first that held every chunk until ``minutes`` after the first that held a
    vector.  The embedder stores a page of vectors a commit, so the polls count vectors
    in steps of a page (4,096 rows: at 15 s polls a 3-minute rate read from them moves
    by ~25 vectors/s with one page more or less); the commits' own times do not."""
    import lance

    uri = str(funes_home / "memory" / "chunks.lance")
    versions = lance.dataset(uri).versions()
    final = int(versions[-1]["metadata"].get("total_rows", 0)) if versions else 0
    out: list[list[float]] = []
    first_s = None
    for version in versions:
        if not final or int(version["metadata"].get("total_rows", 0)) < final:
            continue  # the lexical pass: no vectors yet
        t_s = version["timestamp"].timestamp() - t0_wall
        if first_s is not None and t_s > first_s + minutes * 60:
            break
        embedded = lance.dataset(uri, version=version["version"]).count_rows("vector IS NOT NULL")
        out.append([round(t_s, 2), embedded])
        if embedded and first_s is None:
            first_s = t_s
    return out


def tiers_in_table(funes_home: Path) -> dict[int, dict[str, int]]:
    """Rows and characters per tier, all and with a vector, read from the Lance
    table directly (read-only)."""
    import lance
    import pyarrow.compute as pc

    dataset = lance.dataset(str(funes_home / "memory" / "chunks.lance"))
    out: dict[int, dict[str, int]] = {}
    for key, where in (("", None), ("embedded_", "vector IS NOT NULL")):
        for batch in dataset.to_batches(columns=["tier", "text"], filter=where, batch_size=65_536):
            lengths = pc.utf8_length(batch.column("text"))
            for tier in set(batch.column("tier").to_pylist()):
                mask = pc.equal(batch.column("tier"), tier)
                counts = out.setdefault(int(tier), {"rows": 0, "chars": 0, "embedded_rows": 0, "embedded_chars": 0})
                counts[f"{key}rows"] += pc.sum(pc.cast(mask, "int64")).as_py()
                counts[f"{key}chars"] += pc.sum(pc.filter(lengths, mask)).as_py() or 0
    return dict(sorted(out.items()))


def measure(args: argparse.Namespace) -> dict:
    import anyio

    home, planted = build_history(args.chunks)
    funes_home = WORK / "day-zero" / f"funes-{args.chunks // 1000}k"
    subprocess.run(["rm", "-rf", str(funes_home)], check=True)
    run = Run(args, home, planted, funes_home)
    started_at, uptime_start = now(), uptime()
    watched = anyio.run(watch, run)
    tiers = tiers_in_table(funes_home)
    log_tail = (WORK / "day-zero" / f"index-{args.chunks // 1000}k.log").read_text(errors="replace").strip()
    return {"chunks_target": args.chunks, "commit": commit(), "label": args.label or commit(), "started": started_at,
            "machine": machine(), "uptime_start": uptime_start, "uptime_end": uptime(),
            "command": (f"nice -n {os.nice(0)} " if os.nice(0) else "") + ".venv/bin/python benchmarks/day_zero.py "
                       + shlex.join(sys.argv[1:]),
            "embed_minutes": args.embed_minutes, "history_mb": sum(p.stat().st_size for p in home.rglob("*.jsonl")) / 1e6,
            "ready_s": run.ready_s, "ready_cpu_s": run.ready_cpu_s, "cpu_s": run.cpu_s, "probes": run.probes, "polls": run.polls, "recalls": run.recalls, "failures": run.failures, "sigint_s": run.sigint_s,
            "exited_s": run.exited_s, "rss_capped_s": run.rss_capped_s, "exit_code": run.exit_code, "max_rss_kb": run.max_rss_kb, "tiers": tiers,
            "indexer_said": log_tail.splitlines()[-1] if log_tail else "", "probes_staggered": True,
            "all_stored_s": all_stored_s(funes_home, run.t0_wall),
            "vector_commits": vector_commits(funes_home, run.t0_wall),
            **watched}


def commit() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


# --------------------------------------------------------------------------- figures

def summary(r: dict) -> dict:
    """The issue's figures from one stored run."""
    polls = [p for p in r["polls"] if p["status"]]
    final = r["after"] or {}
    totals = {t: v["rows"] for t, v in ((int(k), v) for k, v in r["tiers"].items())}
    chunks = final.get("chunks") or sum(totals.values())  # the table's own count when status did not answer
    stopped = r["sigint_s"] or r["exited_s"]
    out: dict = {"chunks": chunks, "ready_s": r["ready_s"], "ready_cpu_s": r.get("ready_cpu_s"), "cpu_s": r.get("cpu_s")}
    last_false = [p["begun_s"] for p in r["probes"] if p["found"] < PLANTED_SESSIONS]
    out["ready_after_s"] = last_false[-1] if last_false else None
    out["ready_probe_begun_s"] = next((p["begun_s"] for p in r["probes"] if p["found"] == PLANTED_SESSIONS), None)
    # Nothing lost to Ctrl-C: every row seen while it ran is still there, vectors included.
    out["kept_rows"] = None if not final else (
        chunks >= max((p["status"]["chunks"] for p in polls), default=0)
        and final.get("embedded", 0) >= max((p["status"]["embedded"] for p in polls), default=0)
        and final.get("damage") is None)
    vectored = [p for p in polls if p["status"]["embedded"] > 0]
    first = vectored[0] if vectored else None
    out["embed_began_s"] = first["t_s"] if first else None
    # The lexical pass ended between the last poll that counted fewer chunks than the
    # memory holds and the first that counted them all: each flush commits its rows
    # and their BM25 segment, and a reader indexes in memory any rows between the two.
    # (Not by the first poll with vectors: vectors are stored a page at a time, so that
    # poll comes a page of embedding later.)
    stored = next((p for p in polls if p["status"]["chunks"] >= chunks), None)
    fewer = [p for p in polls if p["status"]["chunks"] < chunks and (not stored or p["t_s"] < stored["t_s"])]
    out["lexical_pass_s"] = (fewer[-1]["t_s"] if fewer else None, stored["t_s"] if stored else None)
    out["lexical_pass_cpu_s"] = stored.get("cpu_s") if stored else None
    out["all_stored_s"] = r.get("all_stored_s")  # from the table's versions (None in runs stored without them)
    commits = [c for c in r.get("vector_commits") or [] if c[1]]
    if commits:  # from the commits of the pages, not the polls that counted them (a page at a time)
        window = [c for c in commits if c[0] <= commits[0][0] + 180]
        # To the commit of the window's last page (what follows it, an index build or
        # a fold, belongs to the page after, which the window does not hold).
        last = next(c for c in window if c[1] == window[-1][1])
        span = last[0] - commits[0][0]
        out["first_minutes_rate"] = (last[1] - commits[0][1]) / span if span else None
        out["first_minutes_span_s"] = span
        out["first_minutes_by"] = "commits"
    elif first:
        window = [p for p in vectored if p["t_s"] <= first["t_s"] + 180]
        span = window[-1]["t_s"] - first["t_s"]
        out["first_minutes_rate"] = (window[-1]["status"]["embedded"] - first["status"]["embedded"]) / span if span else None
        out["first_minutes_span_s"] = span
        out["first_minutes_by"] = "polls"
    embed_s = (stopped - first["t_s"]) if first else 0
    embedded = final.get("embedded") or sum(v["embedded_rows"] for v in r["tiers"].values())
    out["mean_rate"] = (embedded - first["status"]["embedded"]) / embed_s if first and embed_s > 0 else None
    # Per CPU second of the indexer: what the rate would be with a core to itself.
    measured = [p for p in vectored if p["t_s"] < stopped and p.get("cpu_s") is not None]
    if len(measured) > 1 and measured[-1]["cpu_s"] > measured[0]["cpu_s"]:
        out["rate_per_cpu_s"] = ((measured[-1]["status"]["embedded"] - measured[0]["status"]["embedded"])
                                 / (measured[-1]["cpu_s"] - measured[0]["cpu_s"]))
    # Tier 1 (text + thinking) done: the first poll with none of it pending, else extrapolated
    # from the rate tier 1 was embedded at (it goes first, so every vector so far is tier 1's).
    pending = {t: totals[t] - v["embedded_rows"] for t, v in ((int(k), v) for k, v in r["tiers"].items())}
    done_1 = next((p["t_s"] for p in polls if p["status"]["chunks"] == chunks
                   and not p["status"]["pending_by_tier"].get("1")), None)
    if done_1 is not None:
        out["tier1_done_s"], out["tier1_extrapolated"] = done_1, False
    elif first and embed_s > 0 and totals.get(1):
        rate_1 = (totals[1] - pending.get(1, 0)) / embed_s
        out["tier1_done_s"] = first["t_s"] + totals[1] / rate_1 if rate_1 else None
        out["tier1_extrapolated"] = True
    # Everything the memory's policy embeds, extrapolated in characters (a tool output
    # chunk is longer than a reply); a tier left to BM25 (none owed, none given) is not
    # waited for: counting it had made this the time to embed tool calls as well.
    owed = set((final.get("pending_by_tier") or {}))
    embedded_tiers = [v for k, v in r["tiers"].items() if str(k) in owed or v["embedded_rows"]]
    chars = sum(v["chars"] for v in embedded_tiers)
    embedded_chars = sum(v["embedded_chars"] for v in embedded_tiers)
    if embedded_chars < chars and first and embed_s > 0 and embedded_chars:
        out["all_done_s"] = first["t_s"] + chars / (embedded_chars / embed_s)
        out["all_extrapolated"] = True
    elif embedded_chars == chars and chars:
        out["all_done_s"], out["all_extrapolated"] = r["exited_s"], False
    # While indexing: recalls begun before the stop that answered hits (none before the first rows).
    for kind in ("cold", "warm"):
        answered = [c for c in r["recalls"] if c["kind"] == kind and c["t_s"] < stopped and c["ok"]]
        out[f"{kind}_during"] = _percentiles([c["s"] for c in answered])
        out[f"{kind}_during_cpu"] = _percentiles([c["cpu_s"] for c in answered if c["cpu_s"] is not None])
        out[f"{kind}_after"] = _percentiles([wall for wall, _ in r[f"{kind}_after"]])
        out[f"{kind}_after_cpu"] = _percentiles([cpu for _, cpu in r[f"{kind}_after"] if cpu is not None])
    loads = [p["load"] for p in r["polls"]]
    out["load"] = (min(loads), max(loads)) if loads else None
    return out


def _percentiles(samples: list[float]) -> dict | None:
    return percentiles(samples) if samples else None


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _ms(summed: dict, key: str) -> str:
    """Wall p50 / p95 of ``key``, with the CPU p50 / p95 in brackets when measured."""
    wall, cpu = summed[key], summed.get(f"{key}_cpu")
    if not wall:
        return "—"
    text = f"{wall['p50_ms'] / 1000:.2f} / {wall['p95_ms'] / 1000:.2f} s"
    return text + (f" ({cpu['p50_ms'] / 1000:.2f} / {cpu['p95_ms'] / 1000:.2f} s CPU)" if cpu else "")


def coverage_table(r: dict) -> list[str]:
    totals = {int(k): v["rows"] for k, v in r["tiers"].items()}
    embedded_rows = {int(k): v.get("embedded_rows", 1) for k, v in r["tiers"].items()}  # keys: int, or str once stored
    tiers = sorted(totals)
    final_chunks = (r["after"] or {}).get("chunks", 0)
    lines = [f"| minute | chunks stored | {' | '.join(f'tier {t} ({TIER_LABELS.get(t, t)}) %' for t in tiers)} | "
             "vectors/s since the row before | load (1 min) |",
             "| --- | --- |" + " --- |" * len(tiers) + " --- | --- |"]
    polls = [p for p in r["polls"] if p["status"]]
    previous = None
    minute = 1
    while polls and minute * 60 <= polls[-1]["t_s"] + r.get("poll_s", 15):
        at = [p for p in polls if p["t_s"] <= minute * 60]
        minute += 1
        if not at or at[-1] is previous:
            continue
        p = at[-1]
        s = p["status"]
        if s["chunks"] < final_chunks:
            cells = ["(lexical pass)"] * len(tiers)
        else:
            # A tier neither owed nor given vectors is one the memory's policy leaves to BM25.
            cells = ["BM25 only" if not s["pending_by_tier"].get(str(t)) and not embedded_rows[t]
                     else f"{100 * (totals[t] - s['pending_by_tier'].get(str(t), 0)) / totals[t]:.1f}" for t in tiers]
        rate = "—" if previous is None else \
            f"{(s['embedded'] - previous['status']['embedded']) / (p['t_s'] - previous['t_s']):.0f}"
        lines.append(f"| {p['t_s'] / 60:.1f} | {s['chunks']:,} | {' | '.join(cells)} | {rate} | {p['load']:.1f} |")
        previous = p
    return lines


def newest_of_each_size(runs: list[dict]) -> list[dict]:
    """The newest stored run of each history size: what the section shows."""
    newest: dict[int, dict] = {}
    for r in sorted(runs, key=lambda r: r["started"]):
        newest[r["chunks_target"]] = r
    return list(newest.values())


def section(runs: list[dict]) -> str:
    runs = sorted(runs, key=lambda r: (r["chunks_target"], r["started"]))
    sums = [summary(r) for r in runs]
    heads = [f"{r['chunks_target'] // 1000}k, {r['label']} ({r['started'][:16]}Z)" for r in runs]

    def rate(value: float | None) -> str:
        return "—" if value is None else f"{value:.0f}"

    def done(s: dict, key: str) -> str:
        if s.get(key) is None:
            return "—"
        return _s(s[key]) + (" (extrapolated)" if s.get(key.replace("done_s", "extrapolated")) else "")

    rows = [
        ("chunks stored", "", [f"{s['chunks']:,}" for s in sums]),
        ("every chunk stored and BM25-searchable: the lexical pass over (after the last status poll that "
         "counted fewer chunks, by the first that counted them all); the indexer's CPU seconds by then", "≤ 30 s at 300k; ≤ 2 min at 1M",
         [(f"{s['all_stored_s']:.0f} s by the table's versions; polls: " if s.get("all_stored_s") else "")
          + (f"{_s(s['lexical_pass_s'][0])}–{_s(s['lexical_pass_s'][1])}"
           + (f"; {s['lexical_pass_cpu_s']:.0f} CPU s" if s.get("lexical_pass_cpu_s") else ""))
          if s.get("lexical_pass_s") and s["lexical_pass_s"][1] else "—" for s in sums]),
        ("planted word (its 5 oldest sessions) first found by a cold `funes recall`; the indexer's CPU seconds by then",
         "",
         [(f"{_s(s['ready_s'])} (that probe began at {_s(s['ready_probe_begun_s'])}; one begun at "
           f"{_s(s['ready_after_s'])} did not find it)"
           + (f"; {s['ready_cpu_s']:.0f} CPU s" if s.get("ready_cpu_s") else "")) if s["ready_s"] else "never"
          for s in sums]),
        ("vectors/s, first 3 minutes of embedding (mean to the stop; per indexer CPU second)", "≥ 150",
         [f"{rate(s.get('first_minutes_rate'))}{' by the page commits' if s.get('first_minutes_by') == 'commits' else ''}"
          f" ({rate(s.get('mean_rate'))}; {rate(s.get('rate_per_cpu_s'))})" for s in sums]),
        ("tier 1 (text + thinking) fully embedded", "≤ 10 min", [done(s, "tier1_done_s") for s in sums]),
        ("every tier the memory embeds (in characters; a tier left to BM25, tool calls by default, not counted)",
         "≤ 30 min for what helps recall", [done(s, "all_done_s") for s in sums]),
        ("cold `funes recall` p50 / p95 while indexing (its CPU)", "≤ 1 s", [_ms(s, "cold_during") for s in sums]),
        ("cold `funes recall` p50 / p95 after it stops (its CPU)", "≤ 0.8 s", [_ms(s, "cold_after") for s in sums]),
        ("warm MCP `recall` p50 / p95 while indexing (the server's CPU)", "measured",
         [_ms(s, "warm_during") for s in sums]),
        ("warm MCP `recall` p50 / p95 after (the server's CPU)", "measured", [_ms(s, "warm_after") for s in sums]),
        ("peak RSS of the index process tree (sum) / largest process", "≤ 2 GB at 1M",
         [f"{r['peak_sum_kb'] / 1024 ** 2:.2f} / {max(r['peak_single_kb'], r['max_rss_kb']) / 1024 ** 2:.2f} GiB "
          f"({r['processes']} process(es))" for r in runs]),
        ("indexer CPU seconds to the stop (user + system, wait4)", "", [f"{s['cpu_s']:.0f}" if s.get("cpu_s") else "—"
                                                                        for s in sums]),
        ("Ctrl-C: exit code, seconds to exit, rows kept", "clean, nothing lost",
         [("ran to the end" if r["sigint_s"] is None else
           f"{r['exit_code']}, {r['exited_s'] - r['sigint_s']:.1f} s")
          + (f" (stopped at the RSS cap, {_s(r['rss_capped_s'])})" if r.get("rss_capped_s") else "") + {True: ", all kept", False: ", ROWS LOST", None: ", unchecked: `funes status` did not answer"}[s["kept_rows"]]
          for r, s in zip(runs, sums, strict=True)]),
        ("load average (1 min) over the run, min–max", "", [f"{s['load'][0]:.1f}–{s['load'][1]:.1f}" if s["load"] else "—"
                                                          for s in sums]),
    ]
    table = ["| what | goal | " + " | ".join(heads) + " |", "| --- | --- |" + " --- |" * len(runs)]
    table += [f"| {what} | {goal} | " + " | ".join(cells) + " |" for what, goal, cells in rows]
    parts = [
        "`benchmarks/day_zero.py` — a synthetic history of copies of the real fixture transcripts (each copy dated"
        f" a day earlier), a rare word planted in its {PLANTED_SESSIONS} oldest sessions, `funes index --yes` in a"
        " fresh FUNES_HOME, stopped with SIGINT (Ctrl-C) `--embed-minutes` after the embedding began; probes"
        " from a separate process meanwhile (module docstring: what each figure is). \"Every chunk BM25-searchable\""
        " is bracketed by the last status poll that counted fewer chunks than the memory ends with and the"
        " first that counted them all (each flush commits rows and their BM25 segment together), and timed by the commit"
        " of the table version that first held them all. The planted word is found when the first cold `funes recall` that returned"
        " all planted sessions printed its answer (the probe before it, begun at the time in brackets, did not);"
        " the units are not indexed oldest last, so that can come well before the pass is over. The probes run back to back, so they take a core from the"
        " indexer."
        " Rates come from `funes status --json` every poll, but the first 3 minutes' from"
        " the commit times of the pages of vectors (the polls see them a page, 4,096 vectors, at a time: ~25"
        " vectors/s of resolution over 3 minutes), first page to the last within 3 minutes; tier totals and characters from the Lance table read"
        " directly after the stop; \"extrapolated\" figures divide what was left by the rate measured up to the stop"
        " (tier 1 in chunks, every tier in characters). Peak RSS: the largest sampled sum of VmRSS over the"
        " indexer's process tree every 0.5 s, and the largest VmHWM of one process. CPU seconds (user + system)"
        " beside wall times: the cores are shared, so wall time follows the load and CPU time far less.", "",
        f"Machine: {runs[-1]['machine']}.", "", *table, ""]
    for r in runs:
        parts += [f"### {r['chunks_target'] // 1000}k chunks, {r['label']}", "",
                  f"`{r['command']}` at {r['started']} on commit {r['commit']}: {r['history_mb']:.0f} MB of transcripts."
                  f" `uptime` at the start: {r['uptime_start']}; at the end: {r['uptime_end']}."
                  + (" The status poll, the cold recall and the MCP recall of each poll started a third of a poll"
                     " apart." if r.get("probes_staggered") else
                     " The status poll, the cold recall and the MCP recall of each poll started on the same tick.")
                  + (f" {r['note']}" if r.get("note") else "")
                  + (f" {_failures(r['failures'])}" if "failures" in r else ""), "",
                  "Vectors over time (from `funes status --json`; tier % of that tier's rows):", "",
                  *coverage_table(r), ""]
    return "\n".join(parts)


def _failures(failures: list[dict]) -> str:
    """The probes that failed, each with when and what it said."""
    if not failures:
        return "No probe failed."
    said = "; ".join(f"{f['kind']} begun at {f['t_s']:.0f} s" + (f" (exit {f['exit']})" if f.get("exit") else "")
                     + (f": `{f['said']}`" if f.get("said") else "") for f in failures)
    return f"Probes that failed ({len(failures)}): {said}."


def load_runs() -> list[dict]:
    return json.loads(RUNS.read_text()) if RUNS.exists() else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=300_000, help="History size in chunks (about).")
    ap.add_argument("--embed-minutes", type=float, default=10.0, help="Minutes the indexer runs after lexical ready.")
    ap.add_argument("--poll-s", type=float, default=15.0, help="Seconds between status / recall polls.")
    ap.add_argument("--probe-s", type=float, default=1.0, help="Pause between lexical-ready probes.")
    ap.add_argument("--ready-timeout-minutes", type=float, default=20.0, help="Stop if the word is not found by then.")
    ap.add_argument("--rss-cap-gib", type=float, default=8.0,
                    help="Ctrl-C the indexer when its processes hold more than this (the machine is shared).")
    ap.add_argument("--cold-runs", type=int, default=10)
    ap.add_argument("--warm-calls", type=int, default=20)
    ap.add_argument("--label", help="Name of this run in the table (default: the commit).")
    ap.add_argument("--note", help="A sentence printed with this run (what was unusual about it).")
    ap.add_argument("--write", action="store_true", help="Replace the `## Day zero` section of BENCHMARKS.md.")
    ap.add_argument("--report-only", action="store_true", help="Render the stored runs; run nothing.")
    args = ap.parse_args()
    children_take_ctrl_c()
    runs = load_runs()
    if not args.report_only:
        RUNS.parent.mkdir(parents=True, exist_ok=True)
        result = measure(args)
        result["poll_s"], result["note"] = args.poll_s, args.note
        runs = [r for r in runs if (r["chunks_target"], r["label"]) != (result["chunks_target"], result["label"])]
        runs.append(result)
        RUNS.write_text(json.dumps(runs, indent=1))
        print(json.dumps(summary(result), indent=1))
    if not runs:
        raise SystemExit("day-zero: no stored run to report")
    body = section(newest_of_each_size(runs))
    print(body)
    if args.write:
        write_section("Day zero", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
