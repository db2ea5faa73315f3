"""Per-turn hook figures: how fast the hook returns, how soon the turn is recallable.

* Hook return time: the installed Claude `Stop` hook command (``<python> -I -S
  <funes>/hook.py claude``, JSON payload on stdin), run 50 times in a row on a
  growing session, each invocation timed until it exits; its workers run
  meanwhile, as they do in real use (goal: p95 <= 0.3 s).
* Concurrent hooks: bursts of 1, 8 and 32 hooks started at once, each for its own
  session with a new turn (``--rounds`` bursts each; the first finds no worker,
  the later ones the worker of the one before, waiting): every hook's return
  time (goal: p95 <= 0.3 s at 8) and the time until every turn of the burst is
  in the table with its vector.
* Busy writer: the memory's writer lock held (as `funes index` holds it) while a
  hook fires; the time from its release until the turn is recallable, and
  whether the log shows a crash.
* Turn-to-recallable: in a memory of 100k chunks (synthesised: text drawn from the
  real fixture transcripts, random unit vectors, written with
  ``MemoryWriter.add_chunks``, then BM25 and the vector index built), a new turn
  is appended to a Claude transcript and the hook run; the time until the turn's
  chunk is in the table with its vector (what recall searches) is polled every
  20 ms, and a full recall then confirms it ranks first (goal <= 3 s).

    .venv/bin/python benchmarks/hooks.py [--chunks 100000] [--invocations 50] [--turns 5] [--rounds 5] [--no-write]

Everything runs in a scratch HOME/FUNES_HOME; the ONNX export is shared through
$FUNES_CACHE_DIR (default ~/.funes/cache).  Dagster run recording is off
(FUNES_NO_DAGSTER_RECORD=1): it is bookkeeping after the write, not on this path.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import report  # noqa: E402

from funes.cli import hook_worker  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
WRITE_BATCH = 10_000
WARM_IDLE_S = 120


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def claude_session(home: Path) -> Path:
    transcript = home / ".claude" / "projects" / "-home-me-proj" / f"{uuid.uuid4()}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / "claude_session.jsonl", transcript)
    return transcript


def append_turn(transcript: Path, text: str) -> dict:
    last = json.loads(transcript.read_text().splitlines()[-1])
    record = {"type": "assistant", "uuid": str(uuid.uuid4()), "parentUuid": last.get("uuid"),
              "sessionId": transcript.stem, "cwd": "/home/me/proj", "timestamp": now(),
              "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}
    with transcript.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return {"session_id": transcript.stem, "transcript_path": str(transcript), "cwd": "/home/me/proj",
            "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": text}


def run_hook(payload: dict) -> float:
    """The hook command exactly as `funes add claude` installs it."""
    from funes.wiring import Binding

    started = time.perf_counter()
    subprocess.run(Binding(None).hook_command("claude"), input=json.dumps(payload).encode(), check=True, timeout=30)
    return time.perf_counter() - started


def worker_done(funes_home: Path) -> bool:
    from funes.hook import claim_spool

    spool = funes_home / "spool"
    if any(spool.glob("*.json")):
        return False
    lock = claim_spool(str(spool))
    if lock is None:
        return False
    os.close(lock)
    return True


def wait(condition, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the hook worker did not finish")
        time.sleep(0.05)


def embedded(words: list[str]) -> int:
    """How many of ``words`` are in the table with their vector (what recall searches)."""
    import lance

    from funes.memory.location import local_memory
    from funes.memory.sql import quote

    where = "vector IS NOT NULL AND (" + " OR ".join(f"text LIKE {quote('%' + word + '%')}" for word in words) + ")"
    return lance.dataset(local_memory().table_uri).count_rows(filter=where)


def stop_waiting_workers(log: str) -> int | None:
    """SIGTERM every worker the log names (a waiting one would stay for minutes) and
    wait until they are gone (a hook meanwhile would find the spool still held);
    the resident size of the last one alive, in MB."""
    resident_mb = None
    stopped = []
    for pid in {int(p) for p in re.findall(r"worker\[(\d+)\]", log)}:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            resident_mb = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) // 1024
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
        except (OSError, AttributeError):
            pass
    for pid in stopped:
        wait(lambda pid=pid: not Path(f"/proc/{pid}").exists(), timeout=30)
    return resident_mb


# ----------------------------------------------------------------------------- hook return time
def hook_return_times(home: Path, invocations: int) -> dict:
    from funes.wiring import Binding

    os.environ["FUNES_HOOK_IDLE_S"] = "0"  # each worker exits once the spool is empty
    transcript = claude_session(home)
    times = []
    for index in range(invocations):
        payload = append_turn(transcript, f"Turn {index}: the retry budget stays at three attempts.")
        times.append(run_hook(payload))
    wait(lambda: worker_done(Path(os.environ["FUNES_HOME"])))
    return {"invocations": invocations, "command": Binding(None).hook_line("claude"), **report.percentiles(times),
            "max_ms": round(max(times) * 1000, 1)}


# ----------------------------------------------------------------------------- 100k-chunk memory
def synthesise_memory(chunks: int, seed: int = 0) -> dict:
    """``chunks`` rows of real transcript text with random unit vectors, then the
    BM25 segments and the vector index a memory that size has after maintenance."""
    from funes.chunking import Chunk
    from funes.embedding import IDENTITY
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    rng = np.random.default_rng(seed)
    texts = corpus.real_texts(min_chars=40)
    started = time.perf_counter()
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        for start in range(0, chunks, WRITE_BATCH):
            batch = []
            for i in range(start, min(chunks, start + WRITE_BATCH)):
                session = f"synthetic-{i // 200:05d}"
                batch.append(Chunk(
                    id=f"{i:016x}", text=texts[i % len(texts)][:1200], harness="claude_code", session_id=session,
                    turn_uuid=f"{session}:{i % 200}", parent_uuid=None, seq=i % 200, ts="2026-01-01T00:00:00.000Z",
                    role="assistant", block_type="text", tool_name=None, block_idx=0, split_idx=0, char_start=0,
                    tier=1, workdir="-synthetic", cwd="/synthetic", repo=None, branch=None,
                    source_path=f"/synthetic/{session}.jsonl", parent_session_id=None, is_subagent=False))
            vectors = rng.standard_normal((len(batch), IDENTITY.dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            writer.add_chunks(batch, vectors, update_lexical=False)
        written = time.perf_counter() - started
        maintenance = writer.maintain()
    return {"chunks": chunks, "write_s": round(written, 1), "maintain_s": maintenance["seconds"],
            "vector_index": maintenance["vector_index_built"]}


def turn_to_recallable(home: Path, turns: int, *, warm: bool) -> dict:
    """Cold: every turn finds no worker (FUNES_HOOK_IDLE_S=0), so it pays the start-up.
    Warm: the worker of the session's previous turn is still waiting, models loaded."""
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    funes_home = Path(os.environ["FUNES_HOME"])
    os.environ["FUNES_HOOK_IDLE_S"] = str(WARM_IDLE_S if warm else 0)
    transcript = claude_session(home)
    run_hook(append_turn(transcript, "First turn: the session's earlier turns get indexed here."))
    wait(lambda: not any((funes_home / "spool").glob("*.json")) and (warm or worker_done(funes_home)))
    latencies, ranks = [], []
    for _ in range(turns):
        word = "zq" + uuid.uuid4().hex[:10]
        payload = append_turn(transcript, f"We settled on {word} as the cache key prefix after the benchmark.")
        started = time.perf_counter()
        run_hook(payload)
        while embedded([word]) == 0:
            if time.perf_counter() - started > 120:
                raise TimeoutError("the turn never became recallable")
            time.sleep(0.02)
        latencies.append(time.perf_counter() - started)
        wait(lambda: not any((funes_home / "spool").glob("*.json")) and (warm or worker_done(funes_home)))
        hits = Recaller.open(open_memory(None), rerank=False).recall(word, k=5, neighbors=0).hits
        ranks.append(next((rank for rank, hit in enumerate(hits, 1) if word in hit.text), None))
    log = (funes_home / "logs" / "hooks.log").read_text()
    worker_s = [float(s) for s in re.findall(r"indexed 1 of 1 session\(s\).* in ([0-9.]+)s", log)][-turns:]
    # A warm worker would wait WARM_IDLE_S more for a next turn: note its size, then stop it.
    resident_mb = stop_waiting_workers(log) if warm else None
    return {"worker": "warm" if warm else "cold", "turns": turns, "p50_s": round(statistics.median(latencies), 2),
            "max_s": round(max(latencies), 2), "samples_s": [round(x, 2) for x in latencies], "recall_rank": ranks,
            "worker_index_s_p50": round(statistics.median(worker_s), 2) if worker_s else None,
            "resident_mb": resident_mb}


# ----------------------------------------------------------------------------- where a hook's time goes
def hook_cpu(home: Path, invocations: int) -> list[dict]:
    """CPU time (user + system, from wait4) of one hook that finds a worker holding
    the spool (so it starts none), for the installed command and for the module
    form with site-packages loaded that funes installed before."""
    from funes.wiring import Binding
    from funes.hook import claim_spool, spool_dir

    transcript = claude_session(home)
    payload = json.dumps(append_turn(transcript, "A turn.")).encode()
    forms = {"installed: `<python> -I -S <funes>/hook.py claude`": Binding(None).hook_command("claude"),
             "earlier: `<python> -m funes.hook claude`": [sys.executable, "-m", "funes.hook", "claude"],
             "bare interpreter: `<python> -I -S -c pass`": [sys.executable, "-I", "-S", "-c", "pass"],
             "bare interpreter with site: `<python> -c pass`": [sys.executable, "-c", "pass"]}
    os.makedirs(spool_dir(), exist_ok=True)
    lock = claim_spool(spool_dir())  # stands for a worker at work
    rows = []
    try:
        for label, command in forms.items():
            cpu_ms = []
            for _ in range(invocations):
                child = subprocess.Popen(command, stdin=subprocess.PIPE)
                child.stdin.write(payload)
                child.stdin.close()
                _, _, usage = os.wait4(child.pid, 0)
                cpu_ms.append((usage.ru_utime + usage.ru_stime) * 1000)
            rows.append({"form": label, "runs": invocations, "cpu_min_ms": round(min(cpu_ms), 1),
                         "cpu_p50_ms": round(statistics.median(cpu_ms), 1)})
    finally:
        os.close(lock)
    for path in Path(spool_dir()).glob("*.json"):
        path.unlink()
    return rows


# ----------------------------------------------------------------------------- concurrent hooks
def bursts(home: Path, concurrency: int, rounds: int) -> dict:
    """``rounds`` bursts of ``concurrency`` hooks at once, one per session."""
    funes_home = Path(os.environ["FUNES_HOME"])
    log_path = funes_home / "logs" / "hooks.log"
    os.environ["FUNES_HOOK_IDLE_S"] = "0"
    sessions = [claude_session(home) for _ in range(concurrency)]
    for transcript in sessions:  # their earlier turns indexed first: the bursts measure new turns only
        run_hook(append_turn(transcript, "An earlier turn."))
    wait(lambda: worker_done(funes_home))
    os.environ["FUNES_HOOK_IDLE_S"] = str(WARM_IDLE_S)
    log_before = log_path.read_text()
    hook_s: list[float] = []
    recallable_s: list[float] = []
    for _ in range(rounds):
        words = ["zq" + uuid.uuid4().hex[:10] for _ in sessions]
        payloads = [append_turn(t, f"We settled on {w} as the cache key prefix.") for t, w in zip(sessions, words)]
        barrier = threading.Barrier(concurrency + 1)

        def fire(payload: dict) -> None:
            barrier.wait()
            hook_s.append(run_hook(payload))

        threads = [threading.Thread(target=fire, args=(payload,)) for payload in payloads]
        for thread in threads:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        while embedded(words) < concurrency:
            if time.perf_counter() - started > 300:
                raise TimeoutError("a burst's turns never became recallable")
            time.sleep(0.02)
        recallable_s.append(time.perf_counter() - started)
        for thread in threads:
            thread.join()
        wait(lambda: not any((funes_home / "spool").glob("*.json")))
    log = log_path.read_text()[len(log_before):]
    stop_waiting_workers(log)
    wait(lambda: worker_done(funes_home))
    return {"concurrency": concurrency, "rounds": rounds, "hooks": len(hook_s), **report.percentiles(hook_s),
            "max_ms": round(max(hook_s) * 1000, 1), "recallable_cold_s": round(recallable_s[0], 2),
            "recallable_warm_p50_s": round(statistics.median(recallable_s[1:]), 2) if rounds > 1 else None,
            "crashed": "terminate called" in log or "Traceback" in log}


# ----------------------------------------------------------------------------- a busy writer
def busy_writer(home: Path, hold_s: float, turns: int) -> dict:
    """The writer lock held (``MemoryWriter.open``, as `funes index` holds it) while a
    hook fires: how long after its release the turn is recallable."""
    from funes.embedding import IDENTITY
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    funes_home = Path(os.environ["FUNES_HOME"])
    log_path = funes_home / "logs" / "hooks.log"
    os.environ["FUNES_HOOK_IDLE_S"] = "0"
    transcript = claude_session(home)
    run_hook(append_turn(transcript, "First turn: the session's earlier turns get indexed here."))
    wait(lambda: worker_done(funes_home))
    log_before = log_path.read_text()
    after_release = []
    for _ in range(turns):
        word = "zq" + uuid.uuid4().hex[:10]
        with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim):
            run_hook(append_turn(transcript, f"We settled on {word} as the cache key prefix."))
            time.sleep(hold_s)
        released = time.perf_counter()
        while embedded([word]) == 0:
            if time.perf_counter() - released > 120:
                raise TimeoutError("the turn never became recallable after the writer let go")
            time.sleep(0.02)
        after_release.append(time.perf_counter() - released)
        wait(lambda: worker_done(funes_home))
    log = log_path.read_text()[len(log_before):]
    return {"hold_s": hold_s, "turns": turns, "p50_s": round(statistics.median(after_release), 2),
            "max_s": round(max(after_release), 2), "samples_s": [round(x, 2) for x in after_release],
            "waited": log.count("waiting for it to finish"), "crashed": "terminate called" in log or "Traceback" in log}


def markdown(hooks: dict, cpu: list[dict], memory: dict, latencies: list[dict], burst_rows: list[dict],
             busy: dict, load: tuple[float, float]) -> str:
    warm_mb = next((r["resident_mb"] for r in latencies if r["resident_mb"]), "?")
    rows = "\n".join(
        f"| {r['worker']} | {r['p50_s']} s | {r['max_s']} s | {', '.join(str(x) for x in r['samples_s'])} s "
        f"| {r['worker_index_s_p50']} s | {', '.join(str(x) for x in r['recall_rank'])} |" for r in latencies)
    cpu_rows = "\n".join(f"| {r['form']} | {r['cpu_min_ms']} ms | {r['cpu_p50_ms']} ms |" for r in cpu)
    burst_table = "\n".join(
        f"| {r['concurrency']} | {r['hooks']} | {r['p50_ms']} ms | {r['p95_ms']} ms | {r['max_ms']} ms "
        f"| {r['recallable_cold_s']} s | {r['recallable_warm_p50_s']} s |" for r in burst_rows)
    crashed = any(r["crashed"] for r in burst_rows) or busy["crashed"]
    return f"""Script: `benchmarks/hooks.py`. Machine: {report.machine()}. Load average (1 min) at start and
end: {load[0]:.1f}, {load[1]:.1f} — the cores are shared with whatever else runs, and every figure below moves with it.

Hook return time — the installed Claude `Stop` hook (`<python> -I -S <funes>/hook.py claude`, a realistic
payload on stdin), {hooks['invocations']} invocations in a row on a growing session, its worker indexing meanwhile:

| p50 | p95 | max | goal |
|---|---|---|---|
| {hooks['p50_ms']} ms | {hooks['p95_ms']} ms | {hooks['max_ms']} ms | p95 ≤ 300 ms |

Where a hook's time goes: CPU time (user + system) of one hook that finds a worker at work, so it only
spools, over {cpu[0]['runs']} runs each; on two cores, eight hooks at once cost about four times this
in wall time.

| command | CPU min | CPU p50 |
|---|---|---|
{cpu_rows}

The hook is standard library only and runs as a script with `-I -S`: no site-packages (whose `.pth` files, an
editable install's finder among them, cost about as much as the rest of the start-up) and nothing from the
agent's project directory on `sys.path`. It imports only `json` and `fcntl` (not `uuid`, `pathlib` or
`subprocess`, the last only in the hook that starts a worker), spools the fields that name the session under
`$FUNES_HOME/spool/`, and exits. The hook that finds the spool free takes its lock and starts
`funes.cli.hook_worker` detached with the locked descriptor inherited, so the rest of a burst starts no worker
(before, each hook of a burst that came before the first worker had taken the lock started its own, and those
surplus interpreters competed with the hooks).

Concurrent hooks — bursts of hooks started at once, one per session, each with a new turn; the first burst
finds no worker (cold), the later ones the previous burst's worker waiting; "recallable" is until every turn of
the burst is in the table with its vector. Goal: p95 ≤ 300 ms at 8.

| hooks at once | hooks | p50 | p95 | max | all recallable, cold | all recallable, warm (p50) |
|---|---|---|---|---|---|---|
{burst_table}

Turn-to-recallable in a {memory['chunks']:,}-chunk memory (synthesised: real transcript text, random unit
vectors, written in {memory['write_s']} s, then maintenance — BM25 segments and
{'an IVF_PQ vector index' if memory['vector_index'] else 'no vector index'} — in {memory['maintain_s']} s):
a turn appended to a Claude transcript, the hook run, the table polled every 20 ms until the turn's chunk is in
it with its vector. *Cold*: no worker running, so the turn pays its start-up (interpreter, `import lancedb`,
the embedder and secret rules, loaded in parallel); *warm*: the worker of the session's previous turn is still
waiting (it stays {hook_worker.IDLE_EXIT_S:.0f} s after its last turn, `$FUNES_HOOK_IDLE_S`). Goal ≤ 3 s.
The concurrent and busy-writer figures use this memory too.

| worker | p50 | max | samples | worker's indexing step, as logged (p50) | rank of the turn in recall |
|---|---|---|---|---|---|
{rows}

The logged step opens the memory (cold: that is where `import lancedb` happens, ~1-3 s here, and where the
models loading alongside are waited for), reads its stored ids (to insert only new chunks), parses and redacts
the session, embeds its new chunks, and writes one Lance merge-insert and their BM25 segment. A waiting worker
holds {warm_mb} MB resident with this memory; `FUNES_HOOK_IDLE_S=0` makes workers exit at once instead.
Dagster run recording (off here) follows the write, off this path.

Busy writer — the memory's writer lock held for {busy['hold_s']:.0f} s (`MemoryWriter.open`, as `funes index`
holds it) while the hook fires, {busy['turns']} times: the worker waits for the lock without loading a model
({busy['waited']} waits logged), then starts cold. From the release until the turn is in the table with its
vector: p50 {busy['p50_s']} s, max {busy['max_s']} s ({', '.join(str(x) for x in busy['samples_s'])} s), with no
further hook. {'A crash line appeared in hooks.log.' if crashed else 'No crash line in hooks.log in any run.'}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--invocations", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5, help="bursts per concurrency")
    parser.add_argument("--no-write", action="store_true", help="print, do not update BENCHMARKS.md")
    args = parser.parse_args()
    cache = os.environ.get("FUNES_CACHE_DIR") or str(Path.home() / ".funes" / "cache")
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="funes-hooks-bench-") as scratch:
        home = Path(scratch) / "home"
        home.mkdir()
        os.environ.update(HOME=str(home), FUNES_HOME=str(home / ".funes"), FUNES_CACHE_DIR=cache,
                          FUNES_NO_DAGSTER_RECORD="1", HF_HUB_OFFLINE="1")
        hooks = hook_return_times(home, args.invocations)
        print(json.dumps({"hook_return": hooks}), flush=True)
        cpu = hook_cpu(home, args.invocations)
        print(json.dumps({"hook_cpu": cpu}), flush=True)
        shutil.rmtree(home / ".funes" / "memory")
        memory = synthesise_memory(args.chunks)
        print(json.dumps({"memory": memory}), flush=True)
        latencies = []
        for warm in (False, True):
            latencies.append(turn_to_recallable(home, args.turns, warm=warm))
            print(json.dumps({"turn_to_recallable": latencies[-1]}), flush=True)
        burst_rows = []
        for concurrency in (1, 8, 32):
            burst_rows.append(bursts(home, concurrency, args.rounds))
            print(json.dumps({"bursts": burst_rows[-1]}), flush=True)
        busy = busy_writer(home, hold_s=5.0, turns=3)
        print(json.dumps({"busy_writer": busy}), flush=True)
    body = markdown(hooks, cpu, memory, latencies, burst_rows, busy, (load_at_start, os.getloadavg()[0]))
    if args.no_write:
        print(body)
    else:
        report.write_section("Agents: hooks", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
