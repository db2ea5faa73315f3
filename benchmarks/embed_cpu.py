"""CPU embedding figures for funes' production embedder (onnxruntime fp32).

Prints, as JSON lines:
  * throughput (chunks/s) for real transcript chunks of 500, 800 and 1,200 characters;
  * cold start of a process that only embeds one query (interpreter start included);
  * ``session``: creating the query embedder's onnxruntime session in a fresh process,
    for the export as cached (its weights beside the graph, ONNX external data) and
    for the same graph with its weights inside (the layout of funes's earlier
    exports), the two alternated, and whether their outputs are equal;
  * token counts of real transcript chunks (split by funes.chunking.split_text) per
    split size, i.e. how often the 256-token window sees the whole chunk, to choose
    the split size;
  * int8 (funes.embedding.quantise_onnx: the fused BERT graph with dynamic
    per-channel quantisation): its speed and its fidelity to the fp32 vectors;
  * ``settings``: at the real chunk-length mix (chunks cut like the memory's
    600-character splitter cuts real transcript text), chunks/s wall and per
    CPU-second (``time.process_time``, which other processes on shared cores move
    far less than wall time) for fp32 and int8 at 1 and 2 runs at once (one thread
    each, OnnxEmbedder.callers) and batches of
    1/4/8/16/32/64, and the share of the time spent tokenising (the most overlapping
    tokenisation with inference could save);
  * ``backlog`` (with ``--memory``): the newest ``--chunks`` rows a real memory
    still owes a vector, per tier and precision, embedded as embed_backlog does.

Usage: python benchmarks/embed_cpu.py [--chunks 256] [--figures throughput cold session tokens int8 settings backlog]
       [--memory FUNES_HOME/memory]
Uses $FUNES_HOME (default ~/.funes) for the ONNX export; run with a scratch
FUNES_HOME to leave a real one alone.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

from funes.chunking import SPLIT_OVERLAP, split_text  # noqa: E402
from funes.embedding import MAX_TOKENS, PRECISIONS, OnnxEmbedder  # noqa: E402

SIZES = (500, 600, 800, 1200)
FIGURES = ("throughput", "cold", "session", "tokens", "int8", "settings", "backlog")
SPLIT_SIZES = (400, 500, 550, 600, 700, 800, 1000, 1200)


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def throughput(embedder: OnnxEmbedder, texts: list[str], repeats: int) -> float:
    """Chunks per second, best of ``repeats``: on a shared machine the best run is
    the one least disturbed by other processes."""
    embedder.embed(texts[:32])  # warm-up: first runs allocate ORT's arenas
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        embedder.embed(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def cold_start(repeats: int = 5) -> dict:
    script = (
        "import time; t0 = time.perf_counter()\n"
        "from funes.embedding import load_embedder\n"
        "e = load_embedder(for_queries=True); t1 = time.perf_counter()\n"
        "e.embed(['how did we fix the flaky lance test?']); t2 = time.perf_counter()\n"
        "import sys; print(t1 - t0, t2 - t1, 'torch' in sys.modules)\n"
    )
    walls, loads, queries = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent.parent)
        walls.append(time.perf_counter() - start)
        load, query, torch_imported = out.stdout.split()
        loads.append(float(load))
        queries.append(float(query))
        assert torch_imported == "False", "the query path imported torch"
    return {
        "figure": "cold_start_query_process",
        "process_wall_s_best": round(min(walls), 3),
        "process_wall_s_median": round(float(np.median(walls)), 3),
        "import_and_load_s_median": round(float(np.median(loads)), 3),
        "first_query_s_median": round(float(np.median(queries)), 4),
    }


def session_layouts(repeats: int = 7) -> dict:
    """Session creation (wall and CPU of that call) in fresh processes, the export's
    two layouts alternated so both see the same load."""
    import tempfile

    import onnx

    from funes.embedding import cached_model

    external = cached_model()
    script = (
        "import sys, time, numpy as np\n"
        "from funes.embedding import cpu_session\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        "session = cpu_session(sys.argv[1], threads=1)\n"
        "wall, cpu = time.perf_counter() - t, time.process_time() - c\n"
        "ids = np.array([[101, 2129, 2106, 1996, 3857, 8246, 102]])\n"
        "feed = {'input_ids': ids, 'attention_mask': np.ones_like(ids), 'token_type_ids': np.zeros_like(ids)}\n"
        "out = session.run(['last_hidden_state'], feed)[0]\n"
        "print(wall, cpu, out.tobytes().hex()[:4096])\n"
    )
    times: dict[str, list[tuple[float, float]]] = {"external": [], "inline": []}
    outputs: dict[str, set[str]] = {"external": set(), "inline": set()}
    with tempfile.TemporaryDirectory() as scratch:
        inline = Path(scratch) / "model.onnx"
        onnx.save_model(onnx.load(str(external)), inline)
        for _ in range(repeats):
            for layout, path in (("external", external), ("inline", inline)):
                out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                                     check=True).stdout.split()
                times[layout].append((float(out[0]), float(out[1])))
                outputs[layout].add(out[2])
    return {
        "figure": "session_layouts", "repeats": repeats,
        **{f"{layout}_{what}_ms_median": round(float(np.median([t[i] for t in runs])) * 1000, 1)
           for layout, runs in times.items() for i, what in enumerate(("wall", "cpu"))},
        "same_outputs": outputs["external"] == outputs["inline"] and len(outputs["external"]) == 1,
    }


def token_distribution(embedder: OnnxEmbedder) -> list[dict]:
    texts = corpus.real_texts()
    counts = embedder.token_counts(texts)
    ratios = np.array([len(t) / c for t, c in zip(texts, counts, strict=True) if len(t) >= 200])
    records = [{
        "figure": "chars_per_token",
        "texts": len(ratios),
        "p10": round(float(np.percentile(ratios, 10)), 2),
        "p50": round(float(np.percentile(ratios, 50)), 2),
        "p90": round(float(np.percentile(ratios, 90)), 2),
    }]
    for size in SPLIT_SIZES:
        # (chunk, whether it is a piece of a block longer than the split size)
        chunks = [(piece, len(text) > size) for text in texts for _, piece in split_text(text, size)]
        tokens = np.array(embedder.token_counts([piece for piece, _ in chunks]))
        split = np.array([was_split for _, was_split in chunks])
        records.append({
            "figure": "tokens_per_chunk",
            "split_chars": size,
            "overlap_chars": SPLIT_OVERLAP,
            "chunks": len(chunks),
            "fit_256_all": round(float((tokens <= MAX_TOKENS).mean()), 3),
            "pieces_of_split_blocks": int(split.sum()),
            "fit_256_pieces": round(float((tokens[split] <= MAX_TOKENS).mean()), 3),
            "tokens_pieces_p50_p90_p95_max": [int(np.percentile(tokens[split], q)) for q in (50, 90, 95, 100)],
            # Work for the model (it reads at most 256 tokens a chunk) and the share
            # of tokens it never reads.
            "tokens_embedded": int(np.minimum(tokens, MAX_TOKENS).sum()),
            "tokens_unseen_share": round(float(np.maximum(tokens - MAX_TOKENS, 0).sum() / tokens.sum()), 3),
        })
    return records


def neighbour_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    def top(vectors: np.ndarray) -> np.ndarray:
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -np.inf)
        return np.argsort(-sims, axis=1)[:, :k]

    ta, tb = top(a), top(b)
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(ta, tb, strict=True)]))


def int8_figures(fp32: OnnxEmbedder, chunks: list[str]) -> dict:
    int8 = OnnxEmbedder(precision="int8")
    reference, quantised = fp32.embed(chunks), int8.embed(chunks)
    cos = (reference * quantised).sum(axis=1)
    sample = chunks[:256]
    return {
        "figure": "int8_dynamic_fused",
        "chunks": len(chunks),
        "chunks_per_s_fp32": round(throughput(fp32, sample, repeats=3), 1),
        "chunks_per_s_int8": round(throughput(int8, sample, repeats=3), 1),
        "cos_mean": round(float(cos.mean()), 5),
        "cos_min": round(float(cos.min()), 5),
        "top10_neighbour_overlap": round(neighbour_overlap(reference, quantised), 3),
    }


def timed(embedder: OnnxEmbedder, texts: list[str], repeats: int) -> tuple[float, float]:
    """(chunks per wall second, chunks per CPU-second of this process), best of ``repeats``."""
    embedder.embed(texts[:32])
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        embedder.embed(texts)
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return len(texts) / wall, len(texts) / cpu


def settings_figures(count: int, repeats: int) -> list[dict]:
    from funes.chunking import SPLIT_SIZE
    from funes.embedding import cpu_threads

    texts = corpus.realistic_chunks(count, split_size=SPLIT_SIZE, seed=2)
    records = []
    for precision in PRECISIONS:
        for callers in sorted({1, cpu_threads()}):
            embedder = OnnxEmbedder(precision=precision, callers=callers)  # its runs: one thread each
            for batch in (1, 4, 8, 16, 32, 64):
                embedder.batch_size = batch
                wall, cpu = timed(embedder, texts, repeats)
                records.append({"figure": "settings", "precision": precision, "callers": callers, "batch": batch,
                                "chunks": len(texts), "mean_chars": round(sum(map(len, texts)) / len(texts)),
                                "chunks_per_s": round(wall, 1), "chunks_per_cpu_s": round(cpu, 1)})
                emit(records[-1])
    start = time.process_time()
    embedder._tokenizer.encode_batch(texts)
    records.append({"figure": "tokenise_cpu_s", "chunks": len(texts), "cpu_s": round(time.process_time() - start, 3)})
    emit(records[-1])
    return records


def backlog_figures(memory: Path, count: int) -> list[dict]:
    """A real backlog's rate as ``embed_backlog`` meets it: the ``count`` newest rows
    still owed a vector of each default tier, embedded in its 256-row calls, per
    precision: chunks/s wall and per CPU-second, and the share of distinct texts."""
    from funes.embedding import DENSE_TIERS
    from funes.indexing import EMBED_STEP, embedding_input
    from funes.memory.documents import DOCUMENT_COLUMNS
    from funes.memory.location import location_for
    from funes.memory.reader import Memory

    reader = Memory.open(location_for(str(memory)))
    records = []
    for tier in DENSE_TIERS:
        rows = reader.scan([*DOCUMENT_COLUMNS, "ts"], f"vector IS NULL AND tier = {tier}").to_pylist()
        rows.sort(key=lambda r: str(r["ts"] or ""), reverse=True)
        # A tool result is read after its call where the memory embeds it so, as the backlog reads it.
        calls = reader.call_heads(rows[:count]) if reader.results_read_calls else {}
        texts = [embedding_input(r["text"] or "", r["block_type"], r["tool_name"], calls.get(r["id"]))
                 for r in rows[:count]]
        for precision in PRECISIONS:
            embedder = OnnxEmbedder(precision=precision)
            embedder.embed(texts[:32])
            wall, cpu = time.perf_counter(), time.process_time()
            for start in range(0, len(texts), EMBED_STEP):
                embedder.embed(texts[start:start + EMBED_STEP])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            records.append({"figure": "backlog", "tier": tier, "owed": len(rows), "precision": precision,
                            "chunks": len(texts), "mean_chars": round(sum(map(len, texts)) / len(texts)),
                            "distinct_per_call": round(sum(len(set(texts[s:s + EMBED_STEP]))
                                                           for s in range(0, len(texts), EMBED_STEP))
                                                       / len(texts), 3),
                            "chunks_per_s": round(len(texts) / wall, 1), "chunks_per_cpu_s": round(len(texts) / cpu, 1),
                            "load": round(os.getloadavg()[0], 1)})
            emit(records[-1])
    return records


def render(records: list[dict]) -> str:
    """The BENCHMARKS.md section from the emitted records."""
    from report import machine

    by = {}
    for record in records:
        by.setdefault(record["figure"], []).append(record)
    from funes.embedding import CPU_BATCH_SIZE

    lines = ["`python benchmarks/embed_cpu.py --write` — funes' production CPU embedder (all-MiniLM-L6-v2 on"
             f" onnxruntime fp32, batches of {CPU_BATCH_SIZE}, length-sorted, one single-threaded run per core at once).", "",
             f"Machine: {machine()}.", ""]
    if "throughput" in by:
        lines += ["| chunk size (characters) | chunks/s |", "| --- | --- |"]
        lines += [f"| {r['chunk_chars']:,} | {r['chunks_per_s']} |" for r in by["throughput"]] + [""]
    if "cold_start_query_process" in by:
        cold = by["cold_start_query_process"][0]
        lines += [f"A query-only process (interpreter start, onnxruntime, tokenizer, one query; torch never"
                  f" imported): {cold['process_wall_s_median']} s median, {cold['process_wall_s_best']} s best;"
                  f" the query itself {cold['first_query_s_median'] * 1000:.0f} ms.", ""]
    if "session_layouts" in by:
        layouts = by["session_layouts"][0]
        lines += [f"Creating the query embedder's session in a fresh process ({layouts['repeats']} alternated runs,"
                  f" medians): the export as cached, its weights beside the graph, {layouts['external_wall_ms_median']} ms"
                  f" wall / {layouts['external_cpu_ms_median']} ms CPU; the same graph with its weights inside (funes's"
                  f" earlier exports) {layouts['inline_wall_ms_median']} / {layouts['inline_cpu_ms_median']} ms;"
                  f" outputs {'identical' if layouts['same_outputs'] else 'DIFFERENT'}.", ""]
    if "tokens_per_chunk" in by:
        ratio = by.get("chars_per_token", [{}])[0]
        lines += [f"Choosing the split size: real transcript text runs {ratio.get('p50', '?')} characters a token"
                  f" (p10 {ratio.get('p10', '?')}, p90 {ratio.get('p90', '?')}); MiniLM reads 256 tokens. Chunks"
                  " made by funes' own splitter from the fixture transcripts:", "",
                  "| split (characters) | chunks | fit 256 tokens (all) | fit (pieces of split blocks) |"
                  " tokens never read |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r['split_chars']:,} | {r['chunks']:,} | {r['fit_256_all']:.1%} | {r['fit_256_pieces']:.1%} |"
                  f" {r['tokens_unseen_share']:.1%} |" for r in by["tokens_per_chunk"]]
        lines += ["", "funes splits at 600 characters: 94.5 % of chunks are read whole, against 63 % at the Rust"
                  " funes's 1,200.", ""]
    if "settings" in by:
        first = by["settings"][0]
        lines += [f"Settings at the real chunk-length mix ({first['chunks']} chunks, {first['mean_chars']} characters on"
                  " average); wall figures move with the load, CPU-second ones less:", "",
                  "| precision | runs at once | batch | chunks/s | chunks per CPU-second |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r['precision']} | {r['callers']} | {r['batch']} | {r['chunks_per_s']} | {r['chunks_per_cpu_s']} |"
                  for r in by["settings"]]
        if "tokenise_cpu_s" in by:
            tokenise = by["tokenise_cpu_s"][0]
            lines += ["", f"Tokenising those chunks takes {tokenise['cpu_s']} CPU-seconds: the most that overlapping"
                      " it with inference could save."]
        lines += [""]
    if "int8_dynamic_fused" in by:
        q = by["int8_dynamic_fused"][0]
        lines += [f"int8 (`funes.embedding.quantise_onnx`: fused BERT graph, dynamic per-channel):"
                  f" {q['chunks_per_s_int8']} vs {q['chunks_per_s_fp32']} chunks/s fp32, cosine to fp32"
                  f" {q['cos_mean']} on average ({q['cos_min']} worst), top-10 neighbour overlap"
                  f" {q['top10_neighbour_overlap']}; its recall: BENCHMARKS.md \"Recall by embedded tier and precision\"."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=256, help="chunks per throughput measurement")
    parser.add_argument("--repeats", type=int, default=2, help="throughput runs per figure (best is kept)")
    parser.add_argument("--figures", nargs="+", choices=FIGURES, default=FIGURES)
    parser.add_argument("--memory", type=Path, help="for --figures backlog: a memory folder with a backlog")
    parser.add_argument("--write", action="store_true", help="also write the Embedding section of BENCHMARKS.md")
    args = parser.parse_args()
    records: list[dict] = []

    def record(item: dict) -> None:
        records.append(item)
        emit(item)

    start = time.perf_counter()
    embedder = OnnxEmbedder()
    record({"figure": "load_s", "value": round(time.perf_counter() - start, 3), "threads": "cores"})
    if "throughput" in args.figures:
        for size in SIZES:
            record({"figure": "throughput", "chunk_chars": size, "chunks": args.chunks,
                    "chunks_per_s": round(throughput(embedder, corpus.chunks_of_size(size, args.chunks), args.repeats), 1)})
    if "cold" in args.figures:
        record(cold_start())
    if "session" in args.figures:
        record(session_layouts())
    if "tokens" in args.figures:
        for item in token_distribution(embedder):
            record(item)
    if "int8" in args.figures:
        record(int8_figures(embedder, corpus.chunks_of_size(800, 1000, seed=1)))
    if "settings" in args.figures:
        records.extend(settings_figures(args.chunks, args.repeats))
    if "backlog" in args.figures and args.memory:
        records.extend(backlog_figures(args.memory, args.chunks))
    if args.write:
        from report import write_section

        write_section("Embedding", render(records))


if __name__ == "__main__":
    main()
