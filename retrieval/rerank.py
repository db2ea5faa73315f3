"""The optional cross-encoder stage, loaded once per process.

When no cross-encoder can be loaded (none ships on PyPI; the Hub may be out of
reach), recall keeps the fused ranking and says why, in `status` and `--json`."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def shared_reranker() -> tuple[Any, str | None]:
    """(reranker, None) or (None, one-line reason)."""
    from funes.reranking import load_reranker

    return load_reranker()


def reranker_status() -> dict[str, Any]:
    from funes.reranking import configured_model

    reranker, reason = shared_reranker()
    return {
        "available": reranker is not None,
        "model": getattr(reranker, "model_id", None) or configured_model(),
        "reason": reason,
    }
