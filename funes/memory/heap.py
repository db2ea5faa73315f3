"""Giving the heap a scan freed back to the operating system."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc
    except (OSError, AttributeError):  # macOS, musl: nothing to call
        return None


def return_freed_memory() -> None:
    """Give the memory a scan of a whole column freed back to the OS.  Lance reads on
    its own threads, and glibc keeps what each thread frees in that thread's arena for
    reuse: without a trim after each such scan, a first index keeps hundreds of MB it
    no longer uses for as long as it embeds (BENCHMARKS.md, "The backlog's writer")."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
