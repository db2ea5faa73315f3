"""`scan`: exact substring search over every chunk of a memory, not the ranked index.

A needle is a literal string (never a pattern).  Blocks split into several chunks
are reassembled first, so a needle that spans a split is found, once; so "0 blocks"
means the text is absent from what the memory holds (redacted secrets included:
the memory holds their placeholders).

Every block is matched column-wise by polars: the split ones are first stitched back
in polars too (each split cut where the next begins, the pieces joined), so no row
passes through Python unless it matches."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from funes.errors import UsageError, bounded_int
from funes.memory.reader import Memory
from funes.retrieval.bounds import MAX_NEEDLE_CHARS, MAX_NEEDLES, MAX_SCAN_CONTEXT, MAX_SCAN_LIMIT
from funes.retrieval.filters import Filters

COLUMNS = ("session_id", "turn_uuid", "seq", "block_idx", "split_idx", "char_start", "text", "ts", "harness",
           "workdir", "role", "block_type", "tool_name")
BLOCK_KEY = ("session_id", "turn_uuid", "block_idx")


@dataclass(frozen=True)
class ScanMatch:
    needle: str
    session_id: str
    turn_uuid: str
    seq: int
    ts: str
    harness: str
    workdir: str
    role: str
    block_type: str
    tool_name: str | None
    occurrences: int  # of the needle in this block
    offset: int  # of the first one, in the block's text
    excerpt: str  # the first one with up to `context` characters either side

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NeedleTotal:
    needle: str
    blocks: int
    occurrences: int
    sessions: int


@dataclass
class ScanResult:
    totals: list[NeedleTotal]
    matches: list[ScanMatch]  # chronological, at most `limit`
    blocks_scanned: int
    truncated: bool  # more matching blocks than `limit`
    memory_label: str = ""


def checked_needles(needles: list[str]) -> list[str]:
    given = list(needles)
    if not given:
        raise UsageError("give at least one NEEDLE: the exact text to look for")
    if len(given) > MAX_NEEDLES:
        raise UsageError(f"{len(given)} needles: the limit is {MAX_NEEDLES}")
    for needle in given:
        if not needle:
            raise UsageError("an empty NEEDLE matches everything: give the text to look for")
        if len(needle) > MAX_NEEDLE_CHARS:
            raise UsageError(f"a NEEDLE of {len(needle):,} characters: the limit is {MAX_NEEDLE_CHARS:,}")
    return list(dict.fromkeys(given))


def scan_memory(memory: Memory, needles: list[str], *, ignore_case: bool = False, context: int = 80,
                limit: int = 50, filters: Filters = Filters()) -> ScanResult:
    """Every block of ``memory`` (narrowed by ``filters``) holding each needle, with
    totals per needle; the listing holds the first ``limit`` matching blocks in time
    order."""
    import polars as pl

    needles = checked_needles(needles)
    bounded_int("--context", context, 0, MAX_SCAN_CONTEXT)
    bounded_int("--limit", limit, 1, MAX_SCAN_LIMIT)
    filters = filters.bound(memory)
    frame = pl.from_arrow(memory.scan(COLUMNS, filters.where()))
    if frame.is_empty():
        return ScanResult([NeedleTotal(n, 0, 0, 0) for n in needles], [], 0, False, memory.location.label)
    split = frame.with_columns(pl.col("split_idx").fill_null(0).max().over(BLOCK_KEY).alias("last_split"))
    whole = split.filter(pl.col("last_split") == 0).drop("last_split")
    blocks = pl.concat([whole, _stitched_blocks(split.filter(pl.col("last_split") > 0).drop("last_split"))])
    searched = pl.col("text").fill_null("")
    if ignore_case:
        searched = searched.str.to_lowercase()
    found: list[tuple[str, dict[str, Any], str]] = []  # (needle, row, block text)
    for needle in needles:
        wanted = needle.lower() if ignore_case else needle
        for row in blocks.filter(searched.str.contains(wanted, literal=True)).iter_rows(named=True):
            found.append((needle, row, row["text"] or ""))
    matches = [_match(needle, row, text, ignore_case, context) for needle, row, text in found]
    matches.sort(key=lambda m: (m.ts or "\uffff", m.session_id, m.seq, needles.index(m.needle)))
    totals = []
    for needle in needles:
        mine = [m for m in matches if m.needle == needle]
        totals.append(NeedleTotal(needle, len(mine), sum(m.occurrences for m in mine),
                                  len({m.session_id for m in mine})))
    return ScanResult(totals, matches[:limit], blocks.height, len(matches) > limit,
                      memory.location.label)


def _stitched_blocks(pieces: Any) -> Any:
    """Split blocks whole again, one row each (the first split's fields, the block's
    text): each split keeps its text up to where the next one starts (splits may
    overlap) and the block is their join, as :func:`funes.chunking.reassemble` does."""
    import polars as pl

    start = pl.col("char_start").fill_null(0)
    next_start = start.shift(-1).over(BLOCK_KEY)
    text = pl.col("text").fill_null("")
    kept = pl.when(next_start.is_null()).then(text).otherwise(text.str.slice(0, (next_start - start).clip(0)))
    return (pieces.sort([*BLOCK_KEY, "split_idx"]).with_columns(kept.alias("text"))
            .group_by(BLOCK_KEY, maintain_order=True)
            .agg(pl.exclude("text", *BLOCK_KEY).first(), pl.col("text").str.join(""))
            .select(pieces.columns))


def _match(needle: str, row: dict[str, Any], text: str, ignore_case: bool, context: int) -> ScanMatch:
    haystack, wanted = (text.lower(), needle.lower()) if ignore_case else (text, needle)
    offset = haystack.find(wanted)
    occurrences = haystack.count(wanted)
    if len(haystack) != len(text):  # lowercasing changed lengths (rare letters): excerpt around the same place
        offset = min(offset, len(text))
    start, end = max(0, offset - context), min(len(text), offset + len(needle) + context)
    excerpt = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return ScanMatch(needle=needle, session_id=row["session_id"], turn_uuid=row["turn_uuid"], seq=int(row["seq"] or 0),
                     ts=row["ts"] or "", harness=row["harness"] or "", workdir=row["workdir"] or "",
                     role=row["role"] or "", block_type=row["block_type"] or "", tool_name=row["tool_name"],
                     occurrences=occurrences, offset=offset, excerpt=excerpt)


def format_scan(result: ScanResult) -> str:
    """The agent format (docs/contract.md): per matching block a header, its `→ get`
    line, the excerpt quoted, ``---``; then one total line per needle."""
    from funes.retrieval.format import SEPARATOR, field, get_line, quoted

    parts = []
    for m in result.matches:
        parts.append(f"[{field(m.ts)}] {field(m.harness)} {field(m.workdir)}/{field(m.session_id[:8])} "
                     f"{field(m.block_type)} seq{m.seq}  match={field(m.needle)} count={m.occurrences}\n"
                     f"{get_line(m.session_id, m.turn_uuid, result.memory_label)}\n"
                     f"{quoted(m.excerpt)}\n{SEPARATOR}")
    for total in result.totals:
        parts.append(f"total match={field(total.needle)}: {total.blocks} block(s), {total.occurrences} "
                     f"occurrence(s), {total.sessions} session(s)")
    shown = len(result.matches)
    listed = sum(t.blocks for t in result.totals)
    parts.append(f"scanned {result.blocks_scanned} block(s)" +
                 (f"; listed the first {shown} of {listed} matching block(s): narrow with filters or raise --limit"
                  if result.truncated else ""))
    return "\n".join(parts)


def scan_json(result: ScanResult) -> dict[str, Any]:
    return {"memory": result.memory_label, "blocks_scanned": result.blocks_scanned, "truncated": result.truncated,
            "totals": [asdict(t) for t in result.totals], "matches": [m.to_json() for m in result.matches]}
