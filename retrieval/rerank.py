"""The rerank stage, loaded once per process.

By default late interaction over the shipped model's word pieces; when the stage
named cannot be loaded (a cross-encoder not in the cache with the Hub out of
reach, damaged weights), recall keeps the fused ranking and says why, in `status`
and `--json`."""

from __future__ import annotations

import functools
from concurrent.futures import Future
from typing import Any

from funes.threads import in_background


@functools.cache
def shared_reranker() -> tuple[Any, str | None]:
    """(reranker, None) or (None, one-line reason)."""
    from funes.reranking import load_reranker

    return load_reranker()


def loading_reranker() -> Future[tuple[Any, str | None]]:
    """:func:`shared_reranker`, loading in a thread: a cold recall reads the
    stage's tokenizer while it opens the memory and runs its BM25 pass."""
    return in_background("reranker", shared_reranker)


def reranker_status() -> dict[str, Any]:
    from funes.reranking import configured_model

    reranker, reason = shared_reranker()
    return {
        "available": reranker is not None,
        "model": getattr(reranker, "model_id", None) or configured_model(),
        "reason": reason,
    }
