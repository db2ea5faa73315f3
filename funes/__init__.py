"""funes: verbatim recall over coding-agent transcripts.

The domain layers (this package, without its mapped sub-packages ``funes.assets``,
``funes.pipelines``, ``funes.retrieval`` and ``funes.cli``) import neither Dagster nor
the CLI, so the hook worker, the Dagster assets and the tests all call the same
functions.  The layers, what each may import and where a new function goes are
:data:`funes.layers.LAYERS` and docs/architecture.md ("Layers and folders"), held by
tests/cli/test_layers.py.
"""

import os

__version__ = "0.2.0"

# A local, private memory sends nothing and leaves no identity behind.  onnxruntime
# 1.32 (1DS telemetry, on Linux and macOS too) writes a device id and an event queue
# under ~/.cache/Microsoft/DeveloperTools/.onnxruntime and a session file in $TMPDIR
# when it is *imported*, unless ORT_DISABLE_TELEMETRY=1 is set by then (its later
# disable_telemetry_events() is too late); huggingface_hub sends telemetry from some
# calls unless HF_HUB_DISABLE_TELEMETRY=1.  Set here, before anything can import them,
# and inherited by every process funes starts; a value the user set is kept.
for _name in ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ.setdefault(_name, "1")
# Lance and lancedb log from Rust straight to stderr, read once when each loads: a
# vector index build (which `funes index` and the hook worker now run) prints its k-means
# warnings ("more than 10% of clusters are empty") on the user's terminal.  Errors only,
# unless the user set a level.
for _name in ("LANCE_LOG", "LANCEDB_LOG"):
    os.environ.setdefault(_name, "error")
del _name


def _limit_malloc_arenas(arenas: int = 2) -> None:
    """At most ``arenas`` glibc malloc arenas in this process and those it starts.
    glibc gives threads arenas of their own, up to 8 per core, and keeps what each
    frees for reuse in it: Lance's reader and writer threads spread a backlog's
    pages over all of them, and the writer of a 1M-row memory held 0.9 GiB of heap
    between pages with the default, ~0.4 GiB with two (BENCHMARKS.md, "Decisions",
    "The backlog's writer").  ``mallopt`` covers this process from here on (its threads
    are not started yet), the variable the processes it starts; a value the user set
    is kept.  Not glibc (macOS, musl): nothing to set."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


_limit_malloc_arenas()
