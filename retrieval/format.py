"""The agent format: the stable, parseable text `recall` and `get` print (and the
MCP tools return).  The contract lives in docs/contract.md and is tested
verbatim; change both together or not at all."""

from __future__ import annotations

from typing import Any

from funes.retrieval.search import Hit, RecallResult

SEPARATOR = "---"
NO_RESULTS = "no results"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def format_hit(hit: Hit, memory_label: str) -> str:
    lines = [
        f"[{hit.ts}] {hit.harness} {hit.workdir}/{hit.session_id[:8]} {hit.block_type}  score={hit.score:.3f}",
        f"  → get {hit.session_id} {hit.turn_uuid} --memory {memory_label}",
        hit.text,
    ]
    for neighbor in hit.neighbors:
        lines.append(f"  ~ [{neighbor.role} {neighbor.block_type} seq{neighbor.seq}] {_one_line(neighbor.text)[:160]}")
    lines.append(SEPARATOR)
    return "\n".join(lines)


def format_recall(result: RecallResult) -> str:
    if not result.hits:
        return NO_RESULTS
    return "\n".join(format_hit(hit, result.memory_label) for hit in result.hits)


def hits_json(result: RecallResult) -> list[dict[str, Any]]:
    """`--json`: a list of hits, each with every provenance field, the text, the
    score of each stage, and how the ranking was made (so a reranker that could
    not be loaded is visible on every hit)."""
    hits = []
    for hit in result.hits:
        record = hit.to_json(result.memory_label)
        record["reranker"] = result.reranker
        record["reranker_note"] = result.reranker_note
        hits.append(record)
    return hits
