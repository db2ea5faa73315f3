"""The egress gate: which chunks may leave this machine, decided block by block.

Index-time redaction is the first line; this is the last, always on and fail closed.
A secret can straddle the split between two chunks of one block, so the gate rebuilds
every block that has a chunk about to be published from *all* its stored chunks (each
knows where it starts in its block) and scans the whole block, with the files and
commands of its turn (stored on each of its chunks).  A block with a finding,
or one that could not be scanned (a scanner missing or failing counts as not clean),
is held back entirely; so is a block still owed a vector (a tier the memory does not embed
owes none), so a block always ships
whole.  Only rule ids and counts leave this module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from funes.chunking import reassemble
from funes.embedding import awaiting_vector_sql
from funes.memory.sql import sql_in
from funes.memory.reader import Memory
from funes.redaction import rule_label, scan_for_egress

BlockKey = tuple[str, str, int]  # (session_id, turn_uuid, block_idx)
# Above this many ids a full scan with an in-memory filter beats batches of `id IN (…)`.
FULL_SCAN_IDS = 2000


def rows_by_id(memory: Memory, ids: Sequence[str], columns: Sequence[str]) -> pa.Table:
    """The stored rows of ``ids`` (those that exist), with ``columns``."""
    if not ids:
        return memory.scan(columns, "false")
    if len(ids) > FULL_SCAN_IDS:
        table = memory.scan(columns)
        return table.filter(pc.is_in(table.column("id"), value_set=pa.array(list(ids), pa.string())))
    batches = [memory.scan(columns, sql_in("id", ids[start:start + 500])) for start in range(0, len(ids), 500)]
    return pa.concat_tables(batches)


@dataclass
class GateResult:
    publishable: list[str] = field(default_factory=list)  # chunk ids, in storage order
    held_chunks: int = 0  # candidates in blocks with findings or that could not be scanned
    held_blocks: int = 0
    findings: Counter[str] = field(default_factory=Counter)  # rule label → findings
    unscannable: dict[str, int] = field(default_factory=dict)  # reason → blocks
    awaiting_vectors: int = 0  # candidates in blocks not fully embedded yet

    def describe_held(self) -> str:
        """``3 chunk(s) in 2 block(s) with secrets (aws-access-token×2, …)``, or ''."""
        if not self.held_chunks:
            return ""
        reasons = []
        if self.findings:
            reasons.append("secrets (" + ", ".join(f"{rule}×{n}" for rule, n in sorted(self.findings.items())) + ")")
        if self.unscannable:
            reasons.append("no clean scan (" + "; ".join(sorted(self.unscannable)) + ")")
        return f"{self.held_chunks} chunk(s) in {self.held_blocks} block(s) with {' and '.join(reasons)}"


def gate(memory: Memory, candidates: Iterable[str]) -> GateResult:
    """Split ``candidates`` (chunk ids of ``memory``) into what may be published and what
    is held back."""
    wanted = set(candidates)
    result = GateResult()
    if not wanted:
        return result
    layout = memory.scan(["id", "session_id", "turn_uuid", "block_idx", "split_idx", "char_start"])
    # Ready: every chunk has its vector, or is of a tier the memory does not embed.
    owed = awaiting_vector_sql(memory.dense_tiers)
    vector_ready = set(memory.scan(["id"], f"NOT ({owed})").column("id").to_pylist())
    blocks: dict[BlockKey, list[tuple[int, int | None, str]]] = {}
    for row in layout.to_pylist():
        key = (row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0))
        blocks.setdefault(key, []).append((int(row["split_idx"] or 0), row["char_start"], row["id"]))
    touched = {key: sorted(chunks) for key, chunks in blocks.items() if any(c[2] in wanted for c in chunks)}

    ready: dict[BlockKey, list[tuple[int, int | None, str]]] = {}
    for key, chunks in touched.items():
        if all(chunk_id in vector_ready for _, _, chunk_id in chunks):
            ready[key] = chunks
        else:
            result.awaiting_vectors += sum(chunk_id in wanted for _, _, chunk_id in chunks)
    texts_table = rows_by_id(memory, [c[2] for chunks in ready.values() for c in chunks],
                             ("id", "text", "files", "commands"))
    texts = dict(zip(texts_table.column("id").to_pylist(), texts_table.column("text").to_pylist(), strict=True))
    # Every chunk of a turn carries the turn's files and commands: they leave with the
    # block, so they are scanned with it.
    provenance = {row["id"]: "\n".join(v for v in (row["files"], row["commands"]) if v)
                  for row in texts_table.select(["id", "files", "commands"]).to_pylist()
                  if row["files"] or row["commands"]}
    report = scan_for_egress((key, block_text([(start, texts.get(chunk_id, "")) for _, start, chunk_id in chunks])
                              + "\n" + provenance.get(chunks[0][2], ""))
                             for key, chunks in ready.items())

    for key, chunks in ready.items():
        mine = [chunk_id for _, _, chunk_id in chunks if chunk_id in wanted]
        if key in report.flagged or key in report.failed:
            result.held_chunks += len(mine)
            result.held_blocks += 1
            for rule, count in report.flagged.get(key, Counter()).items():
                result.findings[rule_label(rule)] += count
            if key in report.failed:
                reason = report.failed[key]
                result.unscannable[reason] = result.unscannable.get(reason, 0) + 1
        else:
            result.publishable += mine
    return result


def block_text(pieces: list[tuple[int | None, str]]) -> str:
    """A block back from its ``(char_start, text)`` splits in split order; without offsets
    (a memory written by another tool) the splits are joined, which still shows every byte."""
    if all(start is not None for start, _ in pieces):
        return reassemble(pieces)  # type: ignore[arg-type]
    return "\n".join(text for _, text in pieces)
