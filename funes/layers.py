"""The layers of the product, lowest first: what each module may import.

A module may import its own layer and every layer listed before it, never one
after it; tests/cli/test_layers.py walks every module's imports (those inside
functions too) against this table, and checks docs/architecture.md's
"Layers and folders" table lists the same rows.  A module belongs to the first
layer one of whose prefixes names it or a package above it; the longest
matching prefix wins, so ``funes.agents`` can sit above ``funes``.
"""

from __future__ import annotations

# (layer, module prefixes, what it holds), lowest first.
LAYERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("base", ("funes", "funes.errors", "funes.config", "funes.hook", "funes.layers"),
     "errors, paths and settings, the hook entry point, this table"),
    ("traces", ("funes.traces",),
     "the trace model (Session → Turn → Block, SourceUnit) and the helpers parsers share"),
    ("text", ("funes.provenance", "funes.projects", "funes.redaction", "funes.chunking", "funes.embedding",
              "funes.late_interaction", "funes.reranking"),
     "tool-call provenance, projects by repository, redaction, chunking, embedding and reranking models"),
    ("memory", ("funes.memory",),
     "the Lance table, BM25 segments, coverage, the writer lock, where a memory lives"),
    ("wiring", ("funes.wiring",),
     "the config-file editors an agent's wiring plans with"),
    ("agents", ("funes.agents", "funes.discovery"),
     "one folder per agent, the contract and registry; discovery and parsing over every agent"),
    ("indexing", ("funes.indexing", "funes.forgetting", "funes.repair", "funes.exclusion"),
     "the index chain (parse → chunk → redact → embed → store), forgetting, repair, the exclusion list"),
    ("hub", ("funes.hub",),
     "Hub transport: push, release, read, curation, receipts"),
    ("retrieval", ("funes.retrieval",),
     "the read side: open a memory, search, fuse, rank, format, status"),
    ("assets", ("funes.assets",),
     "Dagster assets (thin wrappers over domain functions) and the resources, partitions and "
     "I/O manager they need"),
    ("pipelines", ("funes.pipelines",),
     "the code location: Definitions, checks, jobs, sensors, schedules, the instance, records of CLI work"),
    ("cli", ("funes.cli",),
     "one module per command, the MCP server, the hook worker, terminal rendering, the browse web page"),
)

def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module`` (a dotted name under ``funes``)."""
    best, best_len = -1, -1
    for index, (_name, prefixes, _job) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best < 0:
        raise KeyError(f"{module} is in no layer of funes.layers.LAYERS")
    return best
