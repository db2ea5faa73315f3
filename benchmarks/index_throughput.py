"""Indexing speed and size: end-to-end throughput, a 100k-chunk history made
searchable, the cost of one new turn, bytes per chunk on disk.

    python benchmarks/index_throughput.py [--synthetic-chunks 20000] [--big-chunks 100000] [--no-write]
    python benchmarks/index_throughput.py --lexical-only [--lexical-chunks 300000,1000000] [--embed-s 120]

Goals (2-core CPU): ≥ 60 chunks/s with vectors; every chunk of a
100k-chunk history BM25-searchable within 60 s; one new turn ≤ 2 s; ≤ 2.3 KB per
chunk.  Each measurement runs in its own process with its own FUNES_HOME.
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

from parse_throughput import WORK, dev_corpus  # noqa: E402
from report import REPO, machine, write_section  # noqa: E402
from synthetic import make_history_of_chunks  # noqa: E402

FUNES = [sys.executable, "-m", "funes.cli"]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def env_for(home: Path, funes_home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "FUNES_HOME": str(funes_home), "FUNES_NO_DAGSTER_RECORD": "1"}


def end_to_end(name: str, home: Path) -> dict:
    """`funes index --yes` as a user runs it, then the phases timed in-process."""
    funes_home = WORK / f"funes-{name}"
    subprocess.run(["rm", "-rf", str(funes_home)], check=True)
    started = time.perf_counter()
    done = subprocess.run([*FUNES, "index", "--yes"], env=env_for(home, funes_home), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr)
    status = json.loads(subprocess.run([*FUNES, "status", "--json"], env=env_for(home, funes_home),
                                       capture_output=True, text=True, check=True).stdout)
    phases = json.loads(subprocess.run([sys.executable, __file__, "--phases", str(home)], capture_output=True,
                                       text=True, check=True, env=env_for(home, WORK / f"funes-{name}-phases")
                                       ).stdout.splitlines()[-1])
    memory_dir = funes_home / "memory"
    subprocess.run([*FUNES, "maintain", "--keep-versions", "0"], env=env_for(home, funes_home), capture_output=True)
    chunks = status["chunks"]
    return {"name": name, "chunks": chunks, "wall_s": wall, "chunks_per_s_cli": chunks / wall,
            **phases, "bytes_per_chunk": folder_bytes(memory_dir) / chunks,
            "table_bytes_per_chunk": folder_bytes(memory_dir / "chunks.lance") / chunks}


def phases(home: Path) -> dict:
    """In-process: lexical pass, model load and embedding timed separately."""
    from funes.discovery import discover
    from funes.embedding import IDENTITY, load_embedder
    from funes.indexing import embed_backlog, index_units
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        started = time.perf_counter()
        report = index_units(writer, discover())
        lexical = time.perf_counter() - started
        started = time.perf_counter()
        embedder = load_embedder()
        embedder.embed(["warm up"])
        load = time.perf_counter() - started
        started = time.perf_counter()
        embedded = embed_backlog(writer, embedder)
        embed = time.perf_counter() - started
    return {"lexical_s": lexical, "model_load_s": load, "embed_s": embed, "embedded": embedded,
            "chunks_per_s_embed": embedded / embed if embed else 0.0,
            "chunks_per_s_with_load": report.chunks_added / (lexical + load + embed)}


def big_history(target_chunks: int) -> dict:
    """Lexical pass over a ≥ target-chunk history, the first BM25 answer, then one
    new turn (as the hook worker would index it) into that memory."""
    home = WORK / f"synthetic-{target_chunks // 1000}k-chunks"
    if not home.exists():
        make_history_of_chunks(home, target_chunks)
    funes_home = WORK / f"funes-big-{target_chunks // 1000}k"
    subprocess.run(["rm", "-rf", str(funes_home)], check=True)
    out = subprocess.run([sys.executable, __file__, "--big-run", str(home)], env=env_for(home, funes_home),
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.splitlines()[-1])


def big_run(home: Path) -> dict:
    from funes.discovery import discover
    from funes.embedding import IDENTITY, load_embedder
    from funes.indexing import index_units
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter

    started = time.perf_counter()
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        report = index_units(writer, discover())
    searchable = time.perf_counter() - started
    memory = Memory.open(local_memory())
    first_query_started = time.perf_counter()
    hits = memory.lexical().search("container build failed npm", 10)
    first_query = time.perf_counter() - first_query_started
    # One new turn in an existing session, indexed with its vector as the hook worker does.
    transcript = next(home.glob(".claude/projects/*/*.jsonl"))
    with transcript.open("a") as handle:
        handle.write(json.dumps({"type": "user", "uuid": "bench-new-turn", "timestamp": "2026-11-29T00:00:00Z",
                                 "message": {"role": "user", "content": "one more question about the build"}}) + "\n")
    embedder = load_embedder()
    embedder.embed(["warm up"])
    started = time.perf_counter()
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        unit_report = index_units(writer, discover(transcript), embedder=embedder)
    one_turn = time.perf_counter() - started
    assert unit_report.chunks_added == 1, unit_report
    return {"chunks": report.chunks_added, "mb": sum(u.path.stat().st_size for u in discover()) / 1e6,
            "searchable_s": searchable, "first_query_s": first_query, "hits": len(hits), "one_turn_s": one_turn}


LEXICAL_HEADING = "First index, lexical pass"


def lexical_pass(target_chunks: int, embed_s: float) -> dict:
    """A first index of a ≥ target-chunk history as `funes index` runs it (index_memory),
    in its own process and FUNES_HOME: the lexical pass (every chunk stored and
    BM25-searchable), then ``embed_s`` seconds of the backlog; the process's CPU
    seconds (its workers' included) and the peak RSS it reports."""
    home = WORK / f"synthetic-{target_chunks // 1000}k-chunks"
    if not home.exists():
        make_history_of_chunks(home, target_chunks)
    funes_home = WORK / f"funes-lexical-{target_chunks // 1000}k"
    subprocess.run(["rm", "-rf", str(funes_home)], check=True)
    load_before = os.getloadavg()
    out = subprocess.run([sys.executable, __file__, "--lexical-run", str(home), "--embed-s", str(embed_s)],
                         env=env_for(home, funes_home), capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    subprocess.run(["rm", "-rf", str(funes_home)], check=True)
    return {**json.loads(out.stdout.splitlines()[-1]), "load_before": load_before, "load_after": os.getloadavg()}


def lexical_run(home: Path, embed_s: float) -> dict:
    import resource

    from funes.discovery import discover
    from funes.embedding import load_embedder
    from funes.indexing import index_memory
    from funes.memory.location import local_memory

    units = discover()
    lexical: dict = {}

    def indexed(report) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        lexical.update(wall_s=time.perf_counter() - started, chunks=report.chunks_added, workers=report.workers,
                       cpu_s=sum(u.ru_utime + u.ru_stime for u in usage), peak_rss_bytes=report.peak_rss_bytes)

    started = time.perf_counter()
    report = index_memory(local_memory(), units, embedder=load_embedder, backlog_budget_s=embed_s,
                          on_indexed=indexed)
    from funes.indexing import peak_rss_bytes

    return {**lexical, "mb": sum(u.path.stat().st_size for u in units) / 1e6, "embed_s": report.embed_seconds,
            "embedded": report.embedded, "peak_rss_after_embed_bytes": peak_rss_bytes()}


def lexical_body(rows: list[dict]) -> str:
    lines = [f"{LEXICAL_HEADING} (`python benchmarks/index_throughput.py --lexical-only`): `index_memory`, what"
             " `funes index` runs, in a fresh process and FUNES_HOME over a synthetic history (copies of the real"
             " fixture sessions); wall and CPU seconds (the process and its parse workers) until every chunk is"
             " stored and BM25-searchable; peak RSS is the largest of the process and of any one worker"
             " (`IndexReport.peak_rss_bytes`), after the lexical pass and after the given seconds of embedding."
             " Goals: ≤ 30 s for 300k chunks, ≤ 2 min for 1M, ≤ 2 GB at 1M.", "",
             "| history | MB | chunks | workers | lexical pass wall s | CPU s | peak RSS MB | embedding s | embedded |"
             " peak RSS after MB | load before / after |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| synthetic | {r['mb']:.0f} | {r['chunks']:,} | {r['workers']} | {r['wall_s']:.1f} |"
                     f" {r['cpu_s']:.1f} | {r['peak_rss_bytes'] / 2**20:,.0f} | {r['embed_s']:.0f} |"
                     f" {r['embedded']:,} | {r['peak_rss_after_embed_bytes'] / 2**20:,.0f} |"
                     f" {r['load_before'][0]:.1f} / {r['load_after'][0]:.1f} |")
    return "\n".join(lines)


def with_lexical(section: str, lexical: str) -> str:
    """The section's text with its lexical-pass paragraph and table replaced."""
    kept = section.split(f"\n{LEXICAL_HEADING}", 1)[0].rstrip()
    return f"{kept}\n\n{lexical}"


def current_section(title: str) -> str:
    from report import BENCHMARKS_MD

    text = BENCHMARKS_MD.read_text(encoding="utf-8")
    start = text.find(f"## {title}\n")
    if start == -1:
        return ""
    body = text[start + len(title) + 4:]
    following = body.find("\n## ")
    return (body if following == -1 else body[:following]).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic-chunks", type=int, default=20_000)
    ap.add_argument("--big-chunks", type=int, default=100_000)
    ap.add_argument("--eval-dir", default=os.environ.get("FUNES_EVAL_DIR", str(REPO.parent / "shared" / "eval")))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--lexical-only", action="store_true", help="only the first index's lexical pass")
    ap.add_argument("--lexical-chunks", default="300000,1000000")
    ap.add_argument("--embed-s", type=float, default=120.0, help="seconds of embedding after the lexical pass")
    ap.add_argument("--lexical-run", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--phases", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--big-run", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phases:
        print(json.dumps(phases(args.phases)))
        return 0
    if args.big_run:
        print(json.dumps(big_run(args.big_run)))
        return 0
    if args.lexical_run:
        print(json.dumps(lexical_run(args.lexical_run, args.embed_s)))
        return 0
    lexical_rows = [lexical_pass(int(n), args.embed_s) for n in args.lexical_chunks.split(",") if n]
    lexical = lexical_body(lexical_rows) + f"\n\nMachine: {machine()}."
    if args.lexical_only:
        print(lexical)
        if not args.no_write:
            write_section("Indexing throughput and size", with_lexical(current_section("Indexing throughput and size"),
                                                                       lexical))
        return 0
    rows = []
    dev = dev_corpus(Path(args.eval_dir))
    if dev is not None:
        rows.append(end_to_end("dev", dev))
    synthetic = WORK / f"synthetic-{args.synthetic_chunks // 1000}k-chunks"
    if not synthetic.exists():
        make_history_of_chunks(synthetic, args.synthetic_chunks)
    rows.append(end_to_end(f"synthetic-{args.synthetic_chunks // 1000}k", synthetic))
    big = big_history(args.big_chunks)
    lines = [
        "| history | chunks | `funes index --yes` wall s | chunks/s (whole command) | lexical pass s | model load s |"
        " embed chunks/s | bytes/chunk on disk (table only) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['chunks']:,} | {r['wall_s']:.1f} | {r['chunks_per_s_cli']:.1f} | "
                     f"{r['lexical_s']:.1f} | {r['model_load_s']:.2f} | {r['chunks_per_s_embed']:.1f} | "
                     f"{r['bytes_per_chunk']:,.0f} ({r['table_bytes_per_chunk']:,.0f}) |")
    body = "\n".join([
        "`python benchmarks/index_throughput.py` — each history indexed from scratch by `funes index --yes` in a"
        " fresh FUNES_HOME, then the phases timed in-process; bytes per chunk after `funes maintain`"
        " (all vectors stored). Goals: ≥ 60 chunks/s with vectors, ≤ 2.3 KB per chunk.", "",
        f"Machine: {machine()}.", "", *lines, "",
        f"A {big['chunks']:,}-chunk history ({big['mb']:.0f} MB of transcripts): every chunk stored and BM25-searchable"
        f" after {big['searchable_s']:.1f} s (goal ≤ 60 s; vectors follow in the background), first query"
        f" {big['first_query_s'] * 1000:.0f} ms. One new turn indexed into that memory, vector included, by the"
        f" same call the hook worker makes: {big['one_turn_s']:.2f} s (goal ≤ 2 s).", "", lexical,
    ])
    print(body)
    if not args.no_write:
        write_section("Indexing throughput and size", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
