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
vectors stored, the RSS then and the largest since the page before, and what
``keep_indexes`` did.  Printed as a markdown table.
"""

from __future__ import annotations

import argparse
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


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


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
        print(f"{total_rows:,} rows, {before:,} with a vector; RSS {start_rss / 2**30:.2f} GiB", file=sys.stderr)
        keep = writer.keep_indexes
        pages = [0]

        def kept(**kwargs):  # after each page: a row when it did more than fold, and every 10 pages
            what = keep(**kwargs)
            pages[0] += 1
            if (what and what != "refreshed") or pages[0] % 10 == 0:
                rows.append(f"| {(time.monotonic() - started) / 60:.1f} | {writer.embedded_count():,} | "
                            f"{rss_bytes() / 2**30:.2f} | {sampler.take() / 2**30:.2f} | {what or '—'} |")
                print(rows[-1], file=sys.stderr, flush=True)
            return what

        writer.keep_indexes = kept
        dim = writer.table.schema.field("vector").type.list_size
        done = embed_backlog(writer, StandInEmbedder(dim), limit=args.vectors, budget_s=args.minutes * 60)
    sampler.running = False
    print(f"{machine()}; {total_rows:,} rows, {before:,} with a vector at the start, RSS then"
          f" {start_rss / 2**30:.2f} GiB; {done:,} vectors stored in {(time.monotonic() - started) / 60:.1f} min;"
          f" largest RSS sampled {sampler.peak / 2**30:.2f} GiB\n")
    print("| minute | rows with a vector | RSS GiB | largest since the row before, GiB | keep_indexes did |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
