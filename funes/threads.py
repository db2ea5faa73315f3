"""Work started on a thread of its own, for what a command loads while it does
something else (the query model, the rerank stage: torch, onnxruntime and Lance
release the GIL while they work)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

_T = TypeVar("_T")


def in_background(name: str, work: Callable[..., _T], *args: Any, **kwargs: Any) -> Future[_T]:
    """``work(*args, **kwargs)`` started on a thread named ``funes-<name>``; its
    Future, at once.  The thread ends with the work (nothing waits to join it)."""
    loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"funes-{name}")
    try:
        return loader.submit(work, *args, **kwargs)
    finally:
        loader.shutdown(wait=False)
