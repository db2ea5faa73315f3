"""How a vector search reads an IVF_PQ index: the partitions it probes
(``funes.memory.reader.NPROBES``) and the candidates per hit it compares exactly
(``REFINE_FACTOR``), measured on real vectors.

The synthetic latency memories hold random unit vectors, on which an approximate
index's hits say little (random points in 384 dimensions have no neighbourhoods).
Here every vector is the shipped model's: the dev sets' chunks (benchmarks/.work,
built by eval_recall.py) and, to reach ``--chunks``, pieces of about 600 characters
of the text files installed in this virtual environment (packages' sources and
docs: code and prose, as a coding memory holds), each embedded as a memory embeds
text (int8).  The vectors go into a Lance dataset indexed as a memory of that size
is (``funes.memory.upkeep``: IVF_PQ, its partitions, sub-vectors and sample rate).
The dev sets' questions, embedded as recall embeds a query, are searched at each
setting for recall's dense pool (``retrieval.search.POOL`` hits) and compared with
the exact search (numpy over every vector): the share of the exact top 10 and top
100 the index returns, and the search's median time (in process, warm; settings
interleaved so that each sees the same load).

    nice -n 5 .venv/bin/python benchmarks/vector_search.py [--chunks 100000] [--write]

The vectors and the index are cached in benchmarks/.work/vector-search/ (embedding
100k chunks took half an hour on 2 shared cores, 60 chunks/s: the packages' pieces
are longer than most chunks); ``--write`` replaces the section "Vector search" of
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from report import machine, write_section  # noqa: E402

WORK = REPO / "benchmarks" / ".work"
CORPORA = ("corpus-coding-dev", "corpus-coding-dev2", "corpus-dev")
SECTION = "Vector search"
PIECE_CHARS = 600
SUFFIXES = (".py", ".md", ".rst", ".txt")
SETTINGS = [(nprobes, refine) for nprobes in (10, 20, 40) for refine in (1, 2, 5, 10)]
RUNS = 3


def memory_texts() -> list[str]:
    """Every chunk of the dev sets' memories."""
    from funes.memory.location import location_for
    from funes.memory.reader import Memory

    texts = []
    for corpus in CORPORA:
        folder = WORK / corpus / "home" / ".funes" / "memory"
        if not folder.exists():
            raise SystemExit(f"no memory at {folder}: run benchmarks/eval_recall.py first")
        texts += Memory.open(location_for(str(folder))).scan(["text"]).column("text").to_pylist()
    return texts


def filler_texts(wanted: int) -> list[str]:
    """Up to ``wanted`` distinct pieces of the installed packages' text files, in a
    fixed order (sorted paths), each about :data:`PIECE_CHARS` characters of whole lines."""
    site = Path(sys.prefix) / "lib"
    seen: set[str] = set()
    pieces: list[str] = []
    for path in sorted(p for p in site.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        piece: list[str] = []
        size = 0
        for line in text.splitlines():
            piece.append(line)
            size += len(line) + 1
            if size >= PIECE_CHARS:
                joined = "\n".join(piece).strip()
                if len(joined) >= 200 and joined not in seen:
                    seen.add(joined)
                    pieces.append(joined)
                    if len(pieces) >= wanted:
                        return pieces
                piece, size = [], 0
    return pieces


def questions() -> list[str]:
    asked = []
    for corpus in CORPORA:
        with open(WORK / corpus / "qrels.jsonl", encoding="utf-8") as handle:
            asked += [json.loads(line)["question"] for line in handle if line.strip()]
    return asked


def embedded(folder: Path, chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """The corpus's vectors (int8 model, as text is embedded) and the questions'
    (fp32, as a query is), cached in ``folder``."""
    from funes.embedding import OnnxEmbedder

    cached = folder / f"vectors-{chunks}.npz"
    if cached.exists():
        stored = np.load(cached)
        return stored["corpus"], stored["queries"]
    texts = memory_texts()
    texts += filler_texts(chunks - len(texts))
    print(f"embedding {len(texts):,} chunks …", file=sys.stderr, flush=True)
    started = time.perf_counter()
    corpus = OnnxEmbedder(precision="int8").embed(texts)
    print(f"  {len(texts) / (time.perf_counter() - started):.0f} chunks/s", file=sys.stderr, flush=True)
    queries = OnnxEmbedder().embed(questions())
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(cached, corpus=corpus, queries=queries)
    return corpus, queries


def indexed(folder: Path, corpus: np.ndarray):
    """A Lance dataset of the vectors with the IVF_PQ a memory of this size keeps."""
    import lance
    import pyarrow as pa

    from funes.memory.upkeep import IVF_PARTITION_ROWS, IVF_SAMPLE_RATE, ivf_pq_partitions

    path = folder / f"vectors-{len(corpus)}.lance"
    if path.exists():
        return lance.dataset(str(path))
    dim = corpus.shape[1]
    table = pa.table({"id": pa.array(np.arange(len(corpus))),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(corpus.reshape(-1)), dim)})
    dataset = lance.write_dataset(table, str(path))
    dataset.create_index("vector", "IVF_PQ", name="vector_idx", metric="cosine",
                         num_partitions=ivf_pq_partitions(len(corpus)), target_partition_size=IVF_PARTITION_ROWS,
                         num_sub_vectors=max(1, dim // 8), sample_rate=IVF_SAMPLE_RATE)
    return lance.dataset(str(path))


def search(dataset, query: np.ndarray, k: int, nprobes: int, refine: int) -> list[int]:
    import pyarrow as pa

    nearest = {"column": "vector", "q": pa.array(query), "k": k, "metric": "cosine", "nprobes": nprobes,
               "refine_factor": refine}
    return dataset.to_table(columns=["id"], nearest=nearest).column("id").to_pylist()


def measure(chunks: int) -> dict:
    from funes.memory.reader import NPROBES, REFINE_FACTOR
    from funes.memory.upkeep import ivf_pq_partitions
    from funes.retrieval.search import POOL

    folder = WORK / "vector-search"
    corpus, queries = embedded(folder, chunks)
    dataset = indexed(folder, corpus)
    units = corpus / np.maximum(np.linalg.norm(corpus, axis=1, keepdims=True), 1e-12)
    exact = [np.argsort(-(units @ (q / np.linalg.norm(q))), kind="stable")[:POOL].tolist() for q in queries]
    found: dict[tuple[int, int], list[list[int]]] = {}
    times: dict[tuple[int, int], list[float]] = {s: [] for s in SETTINGS}
    for run in range(RUNS):
        for number, query in enumerate(queries):
            for setting in SETTINGS:
                started = time.perf_counter()
                hits = search(dataset, query, POOL, *setting)
                times[setting].append((time.perf_counter() - started) * 1000)
                if run == 0:
                    found.setdefault(setting, []).append(hits)
    rows = {}
    for setting in SETTINGS:
        shares = {k: statistics.fmean(len(set(hits[:k]) & set(want[:k])) / k
                                      for hits, want in zip(found[setting], exact, strict=True)) for k in (10, 100)}
        rows[f"{setting[0]}/{setting[1]}"] = {"top10": round(shares[10], 3), "top100": round(shares[100], 3),
                                              "ms_p50": round(statistics.median(times[setting]), 2)}
    return {"chunks": len(corpus), "queries": len(queries), "pool": POOL, "partitions": ivf_pq_partitions(len(corpus)),
            "shipped": f"{NPROBES}/{REFINE_FACTOR}", "settings": rows}


def render(result: dict, command: str) -> str:
    lines = [
        f"`{command}`: {result['chunks']:,} real vectors (the dev sets' chunks and pieces of the installed packages'"
        f" text files, embedded by the shipped model as text is), IVF_PQ as a memory of that size keeps it"
        f" ({result['partitions']} partitions); the"
        f" {result['queries']:,} dev questions, each searched for recall's dense pool ({result['pool']} hits) and"
        " compared with the exact search. Share of the exact top 10 / top 100 found, and the search's median time"
        f" (in process, warm, {RUNS} passes, settings interleaved). Shipped: {result['shipped']}"
        " (`funes.memory.reader.NPROBES` / `REFINE_FACTOR`).",
        "",
        f"Machine: {machine()}.",
        "",
        "| partitions probed / refine factor | exact top 10 found | exact top 100 found | search p50 ms |",
        "| --- | --- | --- | --- |",
    ]
    for setting, row in result["settings"].items():
        mark = " (shipped)" if setting == result["shipped"] else ""
        lines.append(f"| {setting}{mark} | {row['top10']:.3f} | {row['top100']:.3f} | {row['ms_p50']} |")
    shipped = result["settings"][result["shipped"]]
    nprobes = result["shipped"].split("/")[0]
    cheaper = [(setting, row) for setting, row in result["settings"].items()
               if setting.startswith(f"{nprobes}/") and row["ms_p50"] < shipped["ms_p50"]]
    lines += ["", f"The shipped setting finds {shipped['top10']:.1%} of the exact top 10 and {shipped['top100']:.1%} of"
              f" the exact top 100 in {shipped['ms_p50']} ms; "
              + "; ".join(f"a refine factor of {s.split('/')[1]} saves {shipped['ms_p50'] - r['ms_p50']:.1f} ms and"
                          f" finds {r['top100']:.1%} of the top 100" for s, r in cheaper) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000, help="vectors in the index (dev chunks, then filler)")
    ap.add_argument("--write", action="store_true", help=f"replace '{SECTION}' in BENCHMARKS.md")
    args = ap.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"
    result = measure(args.chunks)
    print(json.dumps(result, indent=1))
    command = "nice -n 5 .venv/bin/python benchmarks/vector_search.py" + (
        f" --chunks {args.chunks}" if args.chunks != 100_000 else "")
    body = render(result, command)
    print(body)
    if args.write:
        write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
