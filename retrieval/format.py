"""The agent format: the stable, parseable text `recall` and `get` print (and the
MCP tools return).  The contract lives in docs/contract.md and is tested
verbatim; change both together or not at all.

Recalled text comes from transcripts, so it may hold anything, including lines that
look like a hit's header, its ``→ get`` line or the ``---`` separator.  So every line
of recalled text is quoted (``> ``), and every field of a structural line is printed
on one line (:func:`field`): a line that does not start with ``>`` is funes's own,
whatever the transcripts hold."""

from __future__ import annotations

from typing import Any

from funes.retrieval.search import Hit, RecallResult

SEPARATOR = "---"
NO_RESULTS = "no results"
QUOTE = "> "


def _one_line(text: str) -> str:
    return " ".join(text.split())


def field(value: object) -> str:
    """``value`` for a structural line: whitespace and unprintable characters (line
    breaks of every kind, tabs, escape codes) become ``\\xNN`` / ``\\uNNNN``, so the
    line stays one line and its fields split on single spaces."""
    text = str(value)
    if text.isprintable() and not any(ch.isspace() for ch in text):
        return text
    return "".join(ch if ch.isprintable() and not ch.isspace() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def quoted(text: str) -> str:
    """Every line of ``text`` prefixed ``> `` (``>`` alone for an empty line).  Lines
    break wherever Python's ``str.splitlines`` breaks them (``\\r``, ``\\u2028`` and
    the rest, not only ``\\n``), so no parser finds an unquoted line inside the text."""
    return "\n".join(QUOTE + line if line else QUOTE.rstrip() for line in text.splitlines() or [""])


def format_hit(hit: Hit, memory_label: str) -> str:
    lines = [
        f"[{field(hit.ts)}] {field(hit.harness)} {field(hit.workdir)}/{field(hit.session_id[:8])} "
        f"{field(hit.block_type)}  score={hit.score:.3f}",
        f"  → get {field(hit.session_id)} {field(hit.turn_uuid)} --memory {field(memory_label)}",
        quoted(hit.text),
    ]
    for neighbor in hit.neighbors:
        lines.append(f"  ~ [{field(neighbor.role)} {field(neighbor.block_type)} seq{neighbor.seq}] "
                     f"{_one_line(neighbor.text)[:160]}")
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
