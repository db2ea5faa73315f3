"""The backlog's memory at large vector counts: what `funes index` holds, besides its
embedder, while vectors fill a 1M-row memory, up to counts a first index on these
2 cores reaches only after hours.

    python benchmarks/backlog_memory.py --memory-home FUNES_HOME [--vectors 400000] [--minutes 40]

FUNES_HOME holds a memory a day-zero run (`benchmarks/day_zero.py`) left with its
rows stored and few vectors; it is copied under benchmarks/.work/backlog-memory/
and the copy is written.  The writer side is the product's own: ``embed_backlog``
pages the backlog in its order, ``MemoryWriter.set_vectors`` merges each page into
Lance and ``keep_indexes`` builds and refreshes the indexes (the IVF_FLAT at
4,096 vectors, the IVF_PQ at 25,000, the BTREEs, a fold every page).  The vectors
come from a stand-in that costs nothing (unit vectors around 64 random centres,
the same for the same text), so its minutes go to the writer, not to MiniLM; what
the real embedder adds, its ONNX sessions, is constant and measured with the
day-zero runs.  This process's RSS is sampled every 0.25 s; each page reports the
vectors stored, the RSS then (and of it the heap, RssAnon, and the mapped files,
RssFile, which the kernel can drop), the largest since the page before, the
vector index's partitions, and what ``keep_indexes`` did; at the end, how
long a vector search takes.  Printed as a markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse_throughput import WORK  # noqa: E402
from report import machine  # noqa: E402

from funes.indexing import embed_backlog, open_writer  # noqa: E402
from funes.memory.location import MemoryLocation  # noqa: E402
from funes.memory.store import Memory  # noqa: E402

# index_stats would serialise every centroid, and warn that it does, without this.
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")


def rss_bytes(field: str = "VmRSS") -> int:
    """This process's resident memory (``field``: VmRSS, or of it RssAnon, the heap,
    and RssFile, mapped files the kernel can drop and read again)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def ivf_partitions(writer) -> str:
    """The vector index's partitions, its deltas' counted once; — before an IVF one."""
    dataset = writer.table.to_lance()
    if not any(index.name == "vector_idx" for index in dataset.describe_indices()):
        return "—"
    segments = dataset.stats.index_stats("vector_idx")["indices"]
    return f"{max((len(segment.get('partitions', [])) for segment in segments), default=0):,}"


def search_ms(location: MemoryLocation) -> tuple[float, float]:
    """p50 and p95 of ``Memory.vector_search`` (k 30, as recall asks), warm: the first
    20 queries of `benchmarks/recall_latency.py`, embedded by the product's query
    embedder, three times in a fresh reader, the first pass not counted."""
    from recall_latency import QUERIES

    from funes.embedding import load_embedder

    memory = Memory.open(location)
    queries = load_embedder(for_queries=True).embed(QUERIES[:20])
    times = []
    for round_ in range(3):
        for query in queries:
            started = time.perf_counter()
            memory.vector_search(query, 30)
            if round_:
                times.append((time.perf_counter() - started) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def resident() -> str:
    """The RSS now, GiB, with its heap and mapped-file parts."""
    return " / ".join(f"{rss_bytes(field) / 2**30:.2f}" for field in ("VmRSS", "RssAnon", "RssFile"))


class StandInEmbedder:
    """Vectors at no cost: each text's unit vector near one of 64 fixed centres
    (clusters for the IVF partitions to find), from a seed of its own text."""

    def __init__(self, dim: int):
        self.centres = np.random.default_rng(0).standard_normal((64, dim)).astype(np.float32)

    def prepare(self, int8_tiers) -> None:
        pass

    def embed_chunks(self, texts, tiers, int8_tiers=()) -> np.ndarray:
        out = np.empty((len(texts), self.centres.shape[1]), dtype=np.float32)
        for n, text in enumerate(texts):
            rng = np.random.default_rng(zlib.crc32((text or "").encode("utf-8", "surrogatepass")))
            out[n] = self.centres[rng.integers(64)] + 0.5 * rng.standard_normal(self.centres.shape[1])
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class Sampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.peak_since = 0
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            now = rss_bytes()
            self.peak_since = max(self.peak_since, now)
            self.peak = max(self.peak, now)
            time.sleep(0.25)

    def take(self) -> int:
        peak, self.peak_since = self.peak_since, rss_bytes()
        return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory-home", type=Path, required=True, help="FUNES_HOME a day-zero run left.")
    parser.add_argument("--vectors", type=int, default=400_000, help="Embed at most this many rows.")
    parser.add_argument("--minutes", type=float, default=40.0, help="Stop after this long.")
    args = parser.parse_args()

    copy = WORK / "backlog-memory"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(args.memory_home / "memory", copy / "memory")
    location = MemoryLocation(uri=str(copy / "memory"), label="backlog-memory")
    sampler = Sampler()
    sampler.start()
    rows: list[str] = []
    started = time.monotonic()
    with open_writer(location) as writer:
        total_rows = writer.table.count_rows()
        before = writer.embedded_count()
        start_rss = rss_bytes()
        print(f"{total_rows:,} rows, {before:,} with a vector; RSS / heap / files {resident()} GiB", file=sys.stderr)
        keep = writer.keep_indexes
        pages = [0]

        def kept(**kwargs):  # after each page: a row when it did more than fold, and every 10 pages
            what = keep(**kwargs)
            pages[0] += 1
            if (what and what != "refreshed") or pages[0] % 10 == 0:
                rows.append(f"| {(time.monotonic() - started) / 60:.1f} | {writer.embedded_count():,} | "
                            f"{resident()} | {sampler.take() / 2**30:.2f} | {ivf_partitions(writer)} | {what or '—'} |")
                print(rows[-1], file=sys.stderr, flush=True)
            return what

        writer.keep_indexes = kept
        embedder = StandInEmbedder(writer.table.schema.field("vector").type.list_size)
        done = embed_backlog(writer, embedder, limit=args.vectors, budget_s=args.minutes * 60)
    sampler.running = False
    p50, p95 = search_ms(location)
    print(f"{machine()}; {total_rows:,} rows, {before:,} with a vector at the start, RSS then"
          f" {start_rss / 2**30:.2f} GiB; {done:,} vectors stored in {(time.monotonic() - started) / 60:.1f} min;"
          f" largest RSS sampled {sampler.peak / 2**30:.2f} GiB; then a vector search (k 30, warm) {p50:.1f} ms p50,"
          f" {p95:.1f} ms p95\n")
    print("| minute | rows with a vector | RSS / of it heap / mapped files, GiB | largest RSS since the row before, GiB"
          " | IVF partitions | keep_indexes did |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
