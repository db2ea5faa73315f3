"""Transcripts → the memory, in two speeds.

Parsing, chunking, redaction and BM25 are fast; embedding is compute-bound
(tens of chunks a second on a laptop CPU).  So indexing first makes every new
chunk lexically searchable (:func:`index_units`: rows are stored with no vector),
then fills in vectors in bounded, resumable steps (:func:`embed_backlog`): the
backlog is simply the rows whose vector is still null, so an interrupted run loses
nothing and the next one resumes.  The hook worker, ``funes index`` and the
Dagster assets all call these functions.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from funes.chunking import Chunk, ChunkReport, chunk_session
from funes.errors import TraceReadError
from funes.memory.store import MemoryWriter
from funes.traces import parse_unit
from funes.traces.model import ParseWarning, Session, SourceUnit

# Chunks written per Lance commit during a bulk index (fewer, larger fragments).
FLUSH_CHUNKS = 4096
# Rows embedded per vector write.
EMBED_WRITE_BATCH = 256


class Progress(Protocol):
    """How long work reports progress (the CLI renders it; the hook ignores it)."""

    def __call__(self, stage: str, advance: int, total: int | None) -> None: ...


def _no_progress(stage: str, advance: int, total: int | None) -> None:
    return None


class TextEmbedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray: ...


@dataclass
class IndexReport:
    units: int = 0  # units looked at
    changed: int = 0  # units parsed because new or grown
    sessions: int = 0
    turns: int = 0
    chunks_added: int = 0
    chunks_skipped: int = 0  # already in the memory
    embedded: int = 0
    pending: int = 0  # rows still lacking a vector
    dropped_blocks: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    warnings: list[ParseWarning] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0


def embedding_input(text: str, block_type: str | None = None, tool_name: str | None = None) -> str:
    """What the embedding model reads for a chunk: its text, with the tool named
    for tool calls and output (the name carries meaning the JSON often lacks)."""
    if tool_name and block_type in ("tool_use", "tool_result"):
        return f"{tool_name}: {text}"
    return text


@dataclass(slots=True)
class ParsedUnit:
    """A unit, its session and the session's chunks, ready to be stored."""

    unit: SourceUnit
    session: Session
    chunks: list[Chunk]


def vectors_for_new(known: Set[str], embedder: TextEmbedder, chunks: Sequence[Chunk]) -> dict[str, np.ndarray]:
    """Vectors for the chunks not among ``known`` (stored ones keep their vectors)."""
    fresh = list({c.id: c for c in chunks if c.id not in known}.values())
    if not fresh:
        return {}
    vectors = embedder.embed([embedding_input(c.text, c.block_type, c.tool_name) for c in fresh])
    return {chunk.id: vector for chunk, vector in zip(fresh, vectors, strict=True)}


def commit_parsed(
    writer: MemoryWriter,
    parsed: Sequence[ParsedUnit],
    vectors: Mapping[str, np.ndarray] | None = None,
    *,
    update_lexical: bool = True,
) -> tuple[int, int]:
    """Store the chunks of parsed units (with vectors where given), then record the
    units as indexed: only after their rows are committed, so a run killed at any
    moment is completed, without duplicates, by the next one.  Returns (added,
    already stored)."""
    chunks = [chunk for item in parsed for chunk in item.chunks]
    added = 0
    if chunks:
        with_vectors = [c for c in chunks if vectors and c.id in vectors]
        without = [c for c in chunks if not (vectors and c.id in vectors)]
        if with_vectors:
            stacked = np.stack([vectors[c.id] for c in with_vectors])  # type: ignore[index]
            added += len(writer.add_chunks(with_vectors, stacked, update_lexical=update_lexical))
        if without:
            added += len(writer.add_chunks(without, update_lexical=update_lexical))
    for item in parsed:
        writer.coverage.record_success(item.unit, turns=len(item.session.turns), chunks=len(item.chunks),
                                       warnings=len(item.session.warnings))
    return added, len(chunks) - added


def index_units(
    writer: MemoryWriter,
    units: Sequence[SourceUnit],
    *,
    include_thinking: bool = True,
    progress: Progress = _no_progress,
    embedder: TextEmbedder | None = None,
) -> IndexReport:
    """Parse, chunk, redact and store every new or grown unit.

    With ``embedder`` the new chunks get their vectors in the same write (small
    increments such as one turn); without it they are stored lexical-only, for
    :func:`embed_backlog` to fill in."""
    started = time.monotonic()
    report = IndexReport(units=len(units))
    changed = writer.coverage.changed(units)
    report.changed = len(changed)
    batch: list[ParsedUnit] = []
    batch_chunks = 0

    def flush() -> None:
        nonlocal batch_chunks
        chunks = [c for item in batch for c in item.chunks]
        vectors = vectors_for_new(writer.known_ids(), embedder, chunks) if embedder is not None else None
        added, skipped = commit_parsed(writer, batch, vectors, update_lexical=False)
        report.chunks_added += added
        report.chunks_skipped += skipped
        report.embedded += len(vectors or {})
        batch.clear()
        batch_chunks = 0

    for unit in changed:
        try:
            session = parse_unit(unit)
        except TraceReadError as exc:
            writer.coverage.record_error(unit, str(exc))
            report.errors.append(str(exc))
            progress("parse", 1, len(changed))
            continue
        chunk_report = ChunkReport()
        chunks = list(chunk_session(session, include_thinking=include_thinking, report=chunk_report))
        report.sessions += 1
        report.turns += len(session.turns)
        report.dropped_blocks += chunk_report.dropped_blocks
        report.redactions.update(chunk_report.redactions)
        report.warnings.extend(session.warnings)
        batch.append(ParsedUnit(unit, session, chunks))
        batch_chunks += len(chunks)
        if batch_chunks >= FLUSH_CHUNKS:
            flush()
        progress("parse", 1, len(changed))
    if batch:
        flush()
    writer.sync_lexical()
    report.pending = writer.pending_count()
    report.elapsed = time.monotonic() - started
    return report


def embed_backlog(
    writer: MemoryWriter,
    embedder: TextEmbedder,
    *,
    budget_s: float | None = None,
    limit: int | None = None,
    progress: Progress = _no_progress,
    should_stop: Callable[[], bool] = lambda: False,
) -> int:
    """Give vectors to rows lacking one, tier by tier (text first), newest first,
    until done, ``budget_s`` seconds have passed or ``limit`` rows are embedded.
    Returns how many were embedded; every batch is committed, so stopping (or
    being killed) loses at most the batch in flight."""
    started = time.monotonic()
    queue = writer.backlog(limit or 10**12)
    total = queue.num_rows
    ids = queue.column("id").to_pylist()
    texts = queue.column("text").to_pylist()
    block_types = queue.column("block_type").to_pylist()
    tools = queue.column("tool_name").to_pylist()
    done = 0
    for start in range(0, total, EMBED_WRITE_BATCH):
        if should_stop() or (budget_s is not None and time.monotonic() - started >= budget_s):
            break
        end = min(start + EMBED_WRITE_BATCH, total)
        inputs = [embedding_input(texts[i], block_types[i], tools[i]) for i in range(start, end)]
        vectors = embedder.embed(inputs)
        writer.set_vectors(ids[start:end], vectors)
        done += end - start
        progress("embed", end - start, total)
    return done
