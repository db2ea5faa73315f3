"""Transcripts → the memory: one path, in four stages, at two speeds.

The stages are plain functions over one session at a time — parse
(:func:`parse_stage`), chunk and redact (:func:`chunk_stage`), embed
(:func:`embed_stage`), store (:func:`store_stage`) — each adding its figures to
the session's :class:`SessionReport`.  :func:`index_units` runs them in turn
for a set of transcript units; the Dagster assets run one stage each over the
sessions of a run.  So ``funes index``, ``funes add``, the hook worker and the
asset chain store the same rows, and report the same figures.

Parsing, chunking, redaction and BM25 are fast; embedding is compute-bound
(tens of chunks a second on a laptop CPU).  So a bulk index first makes every
new chunk lexically searchable (rows are stored with no vector), then fills in
vectors in bounded, resumable steps (:func:`embed_backlog`): the backlog is
simply the rows whose vector is still null among the tiers the memory embeds
(:func:`funes.embedding.dense_tiers`: by default not tool calls, which BM25
alone finds as well), so an interrupted run loses nothing and the next one
resumes.  Small increments (a hook's turn) embed their chunks
in the same write.  :func:`index_memory` is the whole sequence a command runs:
open the writer stamped with the pinned model, index, fill a bounded backlog,
then hand the report to a recorder once the writer lock is released.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Container, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow.compute as pc

from funes.chunking import Chunk, ChunkReport, chunk_session
from funes.discovery import parse_unit
from funes.embedding import DENSE_TIERS, IDENTITY, INT8_TIERS
from funes.errors import TraceReadError
from funes.exclusion import Exclusions, load_exclusions
from funes.memory.documents import call_heads, document_rows, session_term_counts, text_head
from funes.memory.tokens import TermCounts
from funes.memory.location import MemoryLocation
from funes.memory.writer import BACKLOG_PAGE, MemoryWriter
from funes.traces import session_key
from funes.traces.model import ParseWarning, Session, SourceUnit

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from pathlib import Path

# Chunks written per Lance commit during a bulk index (fewer, larger fragments).
FLUSH_CHUNKS = 4096
# Transcript bytes each worker process must have to parse: a worker's start (imports,
# the secret rules from their cache) costs ~1.1 CPU s, parsing, chunking and redacting
# ~6 MB a CPU second (measured, 2-core EPYC), so 8 MB is ~1.3 s of work.  Below two
# workers' worth (a hook's one turn, a few sessions) everything runs in this process.
POOL_BYTES_PER_WORKER = 8_000_000
# Work handed to the pool ahead of the unit being stored, per worker: transcript
# bytes enough to keep every worker busy while this process stores a flush (a Lance
# commit and a BM25 segment: 0.2-0.5 s, when two units each ahead left the workers
# idle), and a bound on what waits in memory; units too (a database's sessions have
# no size of their own).
POOL_AHEAD_BYTES_PER_WORKER = 4_000_000
POOL_AHEAD_UNITS_PER_WORKER = 256
# How many processes parse, chunk and redact a bulk index (default: the CPUs this
# process may run on).
WORKERS_ENV = "FUNES_INDEX_WORKERS"
# Rows embedded per call to the embedder: between two calls the backlog looks at its
# budget and at ``should_stop``, and reports progress.  Their vectors are stored a
# page (BACKLOG_PAGE rows) at a time: each merge moves the fragments it touches out of
# the id and vector indexes until they are folded back in, so one merge and one fold
# per page, not one merge per step (BENCHMARKS.md, "Decisions", "The backlog's writer").
EMBED_STEP = 256


@dataclass(frozen=True)
class EmbedProgress:
    """Where a backlog embedding pass stands, beside its chunk counts: characters
    (what its time follows) and dense coverage (rows with a vector of all the rows
    the backlog holds or held)."""
    chunks_done: int
    chars_done: int
    chars_total: int
    seconds: float
    embedded: int
    embeddable: int


class Progress(Protocol):
    """How long work reports progress (the CLI renders it; the hook ignores it)."""

    def __call__(self, stage: str, advance: int, total: int | None, detail: EmbedProgress | None = None) -> None: ...


def _no_progress(stage: str, advance: int, total: int | None, detail: EmbedProgress | None = None) -> None:
    return None


class TextEmbedder(Protocol):
    def embed_chunks(self, texts: Sequence[str], tiers: Sequence[int], int8_tiers: Sequence[int] = ()) -> np.ndarray:
        """See :meth:`funes.embedding.Embedder.embed_chunks`."""
        ...

    def prepare(self, int8_tiers: Sequence[int]) -> None:
        """See :meth:`funes.embedding.Embedder.prepare`."""
        ...


@dataclass
class SessionReport:
    """What indexing did to one session (one partition of the Dagster chain)."""

    key: str
    signature: str
    turns: int = 0
    warnings: list[ParseWarning] = field(default_factory=list)
    error: str | None = None  # could not be read now (retried next time)
    excluded: bool = False  # on the exclusion list (funes.exclusion): nothing of it kept, nor recorded
    chunks: int = 0  # chunks the session yields
    blocks: int = 0
    blocks_dropped: int = 0  # secrets that could not be located safely
    redactions: Counter[str] = field(default_factory=Counter)
    chunks_added: int = 0
    chunks_already_stored: int = 0
    embedded_by_tier: Counter[int] = field(default_factory=Counter)  # rows given a vector, by tier

    @property
    def embedded(self) -> int:
        return sum(self.embedded_by_tier.values())


@dataclass
class IndexReport:
    units: int = 0  # units looked at
    changed: int = 0  # units parsed because new or grown
    per_session: dict[str, SessionReport] = field(default_factory=dict)  # the sessions parsed or tried
    embedded: int = 0  # rows given a vector, this session's or earlier ones'
    backlog_by_tier: Counter[int] = field(default_factory=Counter)  # rows embedded from the backlog
    backlog_chars: int = 0  # characters of text embedded from the backlog (what its time follows)
    embed_seconds: float = 0.0  # time spent filling the backlog
    pending: int = 0  # rows still lacking a vector
    kept: int = 0  # rows kept for re-embedding (rebuild)
    warnings: list[ParseWarning] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    workers: int = 0  # processes that parsed, chunked and redacted (0: this one alone)
    peak_rss_bytes: int = 0  # most resident memory of this process or of one of its workers

    def _indexed(self) -> list[SessionReport]:
        return [s for s in self.per_session.values() if s.error is None and not s.excluded]

    @property
    def excluded(self) -> int:
        return sum(s.excluded for s in self.per_session.values())

    @property
    def sessions(self) -> int:
        return len(self._indexed())

    @property
    def turns(self) -> int:
        return sum(s.turns for s in self._indexed())

    @property
    def chunks_added(self) -> int:
        return sum(s.chunks_added for s in self._indexed())

    @property
    def chunks_skipped(self) -> int:
        return sum(s.chunks_already_stored for s in self._indexed())

    @property
    def dropped_blocks(self) -> int:
        return sum(s.blocks_dropped for s in self._indexed())

    @property
    def redactions(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for session in self._indexed():
            total.update(session.redactions)
        return total


# How much of a tool result's call its vector reads: the model reads 256 word pieces at
# most, and each character of the call costs CPU on every result.  200 scored as 400
# (the BM25 document's head) on both coding dev sets, and embeds results about
# 7 % faster (BENCHMARKS.md, "A tool result embedded with its call").
RESULT_CALL_CHARS = 200


def embedding_input(text: str, block_type: str | None = None, tool_name: str | None = None,
                    call: str | None = None) -> str:
    """What the embedding model reads for a chunk: its text, with the tool named
    for tool calls and output (the name carries meaning the JSON often lacks), and
    for a tool result the head of the ``call`` that produced it (paired as its BM25
    document pairs it, funes/memory/documents.py; :data:`RESULT_CALL_CHARS` of it):
    output such as "EISDIR: illegal operation on a directory" means something only
    beside the path that was read.  Measured on both coding dev sets, the vectors of
    results read with their call lift R@10 and the evidence shown within 1,000
    tokens, while text read with the conversation before it lowers both
    (BENCHMARKS.md, "A tool result embedded with its call")."""
    if block_type == "tool_result" and call:
        call = text_head(call, RESULT_CALL_CHARS)
        return f"{tool_name}: {call}\n{text}" if tool_name else f"{call}\n{text}"
    if tool_name and block_type in ("tool_use", "tool_result"):
        return f"{tool_name}: {text}"
    return text


# --------------------------------------------------------------------------- stages


@dataclass(slots=True)
class ParsedSession:
    """Stage 1's output: a unit and its session, unredacted (never stored)."""

    unit: SourceUnit
    session: Session
    report: SessionReport


@dataclass(slots=True)
class SessionChunks:
    """Stage 2's output: a session's redacted chunks, ready to embed and store."""

    unit: SourceUnit
    chunks: list[Chunk]
    report: SessionReport
    # Its chunks' BM25 documents counted into terms by the process that chunked them
    # (a pool worker's work, not the writer's), for a session new to the table when
    # it was handed out: see :func:`prepare_unit` and :func:`counted_sessions`.
    terms: TermCounts | None = None


def parse_stage(unit: SourceUnit, exclusions: Exclusions | None = None) -> ParsedSession:
    """A unit parsed into turns; raises :class:`TraceReadError` when it cannot be
    read now (see :func:`unreadable`).  A session on the exclusion list (``exclusions``,
    default the user's: :mod:`funes.exclusion`) comes back without its turns, marked
    excluded: every path into a memory runs this stage, so none keeps a byte of it."""
    exclusions = load_exclusions() if exclusions is None else exclusions
    if exclusions.excludes_transcript(unit.path):
        return excluded_session(unit)
    session = parse_unit(unit)
    if exclusions.excludes_session(session):
        return excluded_session(unit)
    report = SessionReport(unit.key, unit.signature, turns=len(session.turns), warnings=list(session.warnings))
    return ParsedSession(unit, session, report)


def excluded_session(unit: SourceUnit) -> ParsedSession:
    """An excluded unit's stage-1 output: no turns, no text, not even its cwd."""
    return ParsedSession(unit, Session(unit.harness, unit.session_id, "", "", ""),
                         SessionReport(unit.key, unit.signature, excluded=True))


def unreadable(unit: SourceUnit, error: TraceReadError) -> SessionReport:
    return SessionReport(unit.key, unit.signature, error=str(error))


def chunk_stage(parsed: ParsedSession, *, include_thinking: bool = True) -> SessionChunks:
    """A session's blocks as chunks with stable ids, data: URIs elided and secrets
    redacted (a block whose secrets cannot be located is dropped)."""
    counts = ChunkReport()
    chunks = list(chunk_session(parsed.session, include_thinking=include_thinking, report=counts))
    report = parsed.report
    report.chunks, report.blocks, report.blocks_dropped = counts.chunks, counts.blocks, counts.dropped_blocks
    report.redactions = Counter(counts.redactions)
    return SessionChunks(parsed.unit, chunks, report)


def embed_stage(sessions: Sequence[SessionChunks], known: Set[str], embedder: TextEmbedder,
                tiers: Container[int] = DENSE_TIERS, int8_tiers: Sequence[int] = INT8_TIERS,
                read_calls: bool = True) -> dict[str, np.ndarray]:
    """Vectors for the sessions' chunks of ``tiers`` (the memory's policy, see
    :func:`funes.embedding.dense_tiers`) not among ``known`` (stored ones keep
    theirs), those of ``int8_tiers`` at int8 on CPU (:func:`funes.embedding.int8_tiers`),
    a tool result after the head of its call when the memory reads calls
    (``read_calls``, :func:`funes.embedding.results_read_calls`): chunk id → vector."""
    fresh = list({c.id: c for item in sessions for c in item.chunks if c.id not in known and c.tier in tiers}.values())
    if not fresh:
        return {}
    # A result's call is among its own session's chunks (a session is chunked whole).
    results = [c for c in fresh if c.block_type == "tool_result"] if read_calls else []
    calls = call_heads(document_rows(results), document_rows(
        c for item in sessions for c in item.chunks if c.block_type == "tool_use")) if results else {}
    vectors = embedder.embed_chunks([embedding_input(c.text, c.block_type, c.tool_name, calls.get(c.id))
                                     for c in fresh], [c.tier for c in fresh], int8_tiers)
    return {chunk.id: vector for chunk, vector in zip(fresh, vectors, strict=True)}


def tiers_embedded(chunks: Sequence[Chunk], embedded: Container[str]) -> Counter[int]:
    """How many of ``chunks`` are among the ``embedded`` ids, by tier."""
    return Counter(c.tier for c in {c.id: c for c in chunks}.values() if c.id in embedded)


def store_stage(writer: MemoryWriter, sessions: Sequence[SessionChunks],
                vectors: Mapping[str, np.ndarray] | None = None) -> None:
    """Store the sessions' chunks the memory lacks (merge on id, with vectors where
    given), then record the units as indexed: only after their rows are committed,
    so a run killed at any moment is completed, without duplicates, by the next
    one.  Each session's report gets what was added and already there.  The added
    chunks get their BM25 segment (:meth:`MemoryWriter.index_lexical`) once their
    rows are committed and before the units are recorded: a reader opened at any
    moment indexes in memory at most this batch (a crash between the two leaves
    rows that :meth:`MemoryWriter.sync_lexical` indexes)."""
    vectors = vectors or {}
    chunks = [chunk for item in sessions for chunk in item.chunks]
    added: set[str] = set()
    new_sessions = writer.sessions_new_to_table(chunks)
    covered_version = writer.version
    if chunks:
        with_vectors = [c for c in chunks if c.id in vectors]
        without = [c for c in chunks if c.id not in vectors]
        if with_vectors:
            stacked = np.stack([vectors[c.id] for c in with_vectors])
            added.update(writer.add_chunks(with_vectors, stacked, update_lexical=False))
        if without:
            added.update(writer.add_chunks(without, update_lexical=False))
    if added:
        writer.index_lexical([c.id for c in chunks if c.id in added], chunks, new_sessions, covered_version,
                             counted_sessions(sessions))
    stored_with_vector = {cid for cid in vectors if cid in added}
    for item in sessions:
        ids = {c.id for c in item.chunks}
        item.report.chunks_added = len(ids & added)
        item.report.chunks_already_stored = len(ids) - item.report.chunks_added
        item.report.embedded_by_tier.update(tiers_embedded(item.chunks, stored_with_vector))
        if item.report.excluded:
            continue  # not recorded: taken off the list, it is indexed by the next run
        writer.coverage.record_success(item.unit, turns=item.report.turns, chunks=len(item.chunks),
                                       warnings=len(item.report.warnings))


def counted_sessions(sessions: Sequence[SessionChunks]) -> dict[str, TermCounts]:
    """Session id → the term counts its chunks came with, for the sessions no other
    item of ``sessions`` holds: two units of one session make its documents together,
    which the counts of either alone are not."""
    holders = Counter(session for item in sessions for session in {c.session_id for c in item.chunks})
    counted = {}
    for item in sessions:
        held = {c.session_id for c in item.chunks}
        if item.terms is not None and len(held) == 1 and holders[next(iter(held))] == 1:
            counted[next(iter(held))] = item.terms
    return counted


def settle_store(writer: MemoryWriter) -> None:
    """What every writer does once it has stored rows: index those a killed run left
    without a BM25 segment, then keep the table's indexes in step (new rows, with a
    vector or not, are read flat by every search until folded into them)."""
    writer.sync_lexical()
    writer.keep_indexes()


# --------------------------------------------------------------------------- the path


def index_workers() -> int:
    """Worker processes for a bulk index: ``$FUNES_INDEX_WORKERS`` when set (1: none),
    else the CPUs this process may run on."""
    given = os.environ.get(WORKERS_ENV, "").strip()
    if given:
        try:
            return max(1, int(given))
        except ValueError:
            pass
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def peak_rss_bytes() -> int:
    """The most resident memory this process, or one of its finished children, held."""
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
    return scale * max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                       resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def prepare_unit(unit: SourceUnit, include_thinking: bool = True, count_terms: bool = False,
                 exclusions: Exclusions | None = None) -> SessionChunks | SessionReport:
    """Stages 1 and 2 for one unit: its redacted chunks, or the report of why it
    cannot be read now (what a worker process returns).  With ``count_terms`` (its
    session is new to the table) also its chunks' BM25 term counts, which the writer
    would otherwise make itself: in a pool they are made beside the chunking, not in
    the one process that stores."""
    try:
        parsed = parse_stage(unit, exclusions)
    except TraceReadError as exc:
        return unreadable(unit, exc)
    item = chunk_stage(parsed, include_thinking=include_thinking)
    if count_terms:
        item.terms = session_term_counts(item.chunks)
    return item


def _worker_start(parent: int) -> None:
    # Ctrl-C reaches the whole process group: the parent alone decides, and stops the
    # workers; a worker whose parent is killed outright is ended with it (Linux).  A
    # parent killed while this worker was still starting, before the death signal was
    # asked for, would leave it waiting on the pool's queue for ever: it ends itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:
            os._exit(1)


def pool_size(units: Sequence[SourceUnit], workers: int) -> int:
    """How many of ``workers`` pay for themselves on ``units`` (1: none)."""
    if workers <= 1 or len(units) < 2:
        return 1
    size = 0
    for path in {unit.path for unit in units}:  # a database holds many units: counted once
        try:
            size += path.stat().st_size if path.is_file() else 0
        except OSError:
            continue
        if size >= workers * POOL_BYTES_PER_WORKER:
            return min(workers, len(units))
    return max(1, min(workers, len(units), size // POOL_BYTES_PER_WORKER))


def unit_sizes(units: Sequence[SourceUnit]) -> dict[SourceUnit, int]:
    """Each unit's share of its file's bytes: a transcript's size, a database's split
    evenly between the sessions of it among ``units`` (0 where it cannot be read)."""
    sharing = Counter(unit.path for unit in units)
    size: dict[Path, int] = {}
    for path in sharing:
        try:
            size[path] = path.stat().st_size if path.is_file() else 0
        except OSError:
            size[path] = 0
    return {unit: size[unit.path] // sharing[unit.path] for unit in units}


def prepared_units(units: Sequence[SourceUnit], *, include_thinking: bool = True, workers: int = 1,
                   known_sessions: Container[str] | None = None, exclusions: Exclusions | None = None,
                   ) -> Iterator[tuple[SourceUnit, SessionChunks | SessionReport]]:
    """Each unit with its :func:`prepare_unit`, in order; with ``workers`` > 1 (at most
    one per :data:`POOL_BYTES_PER_WORKER` of transcripts) by a pool of spawned
    processes working ahead of the caller, stopped when the caller stops reading.
    Units whose session is not among ``known_sessions`` (the table's) come with
    their term counts (None: none do).

    A worker that dies (killed for memory, a crash in a parser's native code) takes
    with it the units it held, and the pool cannot say which: the units in flight
    are prepared again, each in a process of its own, and one whose process dies
    again is reported as unreadable now (retried next run), then a new pool goes on
    with the rest (units a worker had finished keep their item).  Without this the
    index would wait forever for the lost units."""
    workers = pool_size(units, workers)
    if workers > 1:
        sizes = unit_sizes(units)

    def arguments(unit: SourceUnit) -> tuple[SourceUnit, bool, bool, Exclusions | None]:
        return unit, include_thinking, known_sessions is not None and unit.session_id not in known_sessions, exclusions

    if workers <= 1:
        for unit in units:
            yield unit, prepare_unit(*arguments(unit))
        return
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    from funes.redaction import get_scanner

    get_scanner()  # compiled once here, so workers load the rules from the cache, not compile them each
    pool = _worker_pool(workers)
    pending: deque = deque()
    queued = iter(units)
    ahead = 0  # transcript bytes of the pending units

    def submit_ahead() -> None:
        nonlocal ahead
        while ahead < workers * POOL_AHEAD_BYTES_PER_WORKER and len(pending) < workers * POOL_AHEAD_UNITS_PER_WORKER:
            unit = next(queued, None)
            if unit is None:
                return
            pending.append((unit, pool.submit(prepare_unit, *arguments(unit))))
            ahead += sizes[unit]

    try:
        submit_ahead()
        while pending:
            unit, result = pending.popleft()
            ahead -= sizes[unit]
            try:
                item = result.result()
            except BrokenProcessPool:
                _stop_pool(pool)
                in_flight = list(pending)
                pending.clear()
                ahead = 0
                yield unit, _prepare_alone(unit, arguments(unit))
                for later, future in in_flight:  # those finished before the break keep their item
                    finished = (future.done() and not future.cancelled()
                                and not isinstance(future.exception(), BrokenProcessPool))
                    yield later, future.result() if finished else _prepare_alone(later, arguments(later))
                pool = _worker_pool(workers)
                submit_ahead()
                continue
            submit_ahead()
            yield unit, item
        pool.shutdown()
    finally:
        _stop_pool(pool)  # an error, Ctrl-C or a caller that stopped early: no worker outlives this


def _worker_pool(workers: int) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start,
                               initargs=(os.getpid(),))


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down now: its workers are ended, not left to finish the units
    they hold (``shutdown`` alone waits for those; Python 3.14's ``terminate_workers``
    is what this does, and until then the processes are reachable only here)."""
    for process in list((pool._processes or {}).values()):
        process.terminate()
    pool.shutdown(cancel_futures=True)


def _prepare_alone(unit: SourceUnit,
                   arguments: tuple[SourceUnit, bool, bool, Exclusions | None]) -> SessionChunks | SessionReport:
    """:func:`prepare_unit` in a process of its own, for a unit that was in a worker
    when it died: its item, or if this process dies too, the report that it cannot
    be read now."""
    from concurrent.futures.process import BrokenProcessPool

    pool = _worker_pool(1)
    try:
        return pool.submit(prepare_unit, *arguments).result()
    except BrokenProcessPool:
        return unreadable(unit, TraceReadError(
            f"cannot read {unit.path}: the process parsing it ended abruptly (killed, out of memory, or a crash "
            "in its parser)"))
    finally:
        _stop_pool(pool)


def index_units(
    writer: MemoryWriter,
    units: Sequence[SourceUnit],
    *,
    include_thinking: bool = True,
    progress: Progress = _no_progress,
    embedder: TextEmbedder | None = None,
    workers: int | None = None,
) -> IndexReport:
    """Parse, chunk, redact and store every new or grown unit.

    With ``embedder`` the new chunks get their vectors in the same write (small
    increments such as one turn); without it they are stored lexical-only, for
    :func:`embed_backlog` to fill in.  Parsing, chunking and redaction, and a new
    session's BM25 term counts, run in ``workers`` processes (default
    :func:`index_workers`) when there are enough units to pay for them; this
    process alone stores, in the units' order, and records a unit only once its
    rows are committed."""
    started = time.monotonic()
    exclusions = load_exclusions()  # once, before anything is read: a broken list stops the run
    report = IndexReport(units=len(units))
    changed = writer.coverage.changed(units)
    report.changed = len(changed)
    workers = pool_size(changed, index_workers() if workers is None else workers)
    report.workers = workers if workers > 1 else 0
    batch: list[SessionChunks] = []
    batch_chunks = 0
    writer.sync_lexical()  # rows a killed run stored without their segment: indexed before new ones

    def flush() -> None:
        nonlocal batch_chunks
        vectors = (embed_stage(batch, writer.known_ids(), embedder, writer.dense_tiers, writer.int8_tiers,
                               writer.results_read_calls)
                   if embedder is not None else None)
        store_stage(writer, batch, vectors)
        report.embedded += len(vectors or {})
        batch.clear()
        batch_chunks = 0

    # A new session's documents are counted into terms as it is chunked (in the pool, when
    # there is one); a grown one's take their context from the table, here.  The table's
    # sessions are read only when there is something to index (a run that finds nothing
    # changed reads no ids).
    for unit, item in prepared_units(changed, include_thinking=include_thinking, workers=workers,
                                     known_sessions=writer.known_sessions() if changed else None,
                                     exclusions=exclusions):
        if isinstance(item, SessionReport):  # could not be read now: retried next run
            writer.coverage.record_error(unit, item.error or "")
            report.per_session[unit.key] = item
            report.errors.append(item.error or "")
            progress("parse", 1, len(changed))
            continue
        report.per_session[item.unit.key] = item.report
        report.warnings.extend(item.report.warnings)
        batch.append(item)
        batch_chunks += len(item.chunks)
        if batch_chunks >= FLUSH_CHUNKS:
            flush()
        progress("parse", 1, len(changed))
    if batch:
        flush()
    settle_store(writer)
    report.pending = writer.pending_count()
    report.elapsed = time.monotonic() - started
    report.peak_rss_bytes = peak_rss_bytes()
    return report


def embed_backlog(
    writer: MemoryWriter,
    embedder: TextEmbedder,
    *,
    budget_s: float | None = None,
    limit: int | None = None,
    progress: Progress = _no_progress,
    should_stop: Callable[[], bool] = lambda: False,
    report: IndexReport | None = None,
) -> int:
    """Give vectors to rows owed one under the memory's tier policy, tier by tier
    (text first), newest first, until done, ``budget_s`` seconds have passed (after
    at least one step of :data:`EMBED_STEP` rows) or ``limit`` rows are embedded.
    Returns how many were embedded.  A page's vectors are stored in one commit, then
    the indexes are kept (:meth:`MemoryWriter.keep_indexes`); stopping (the budget,
    ``should_stop``, Ctrl-C) stores what was embedded of the page first, so only being
    killed loses work: at most the page in flight.  With ``report``, what was
    embedded is added to it, by tier, and to the sessions it holds."""
    started = time.monotonic()
    writer.drop_known_ids()
    int8 = writer.int8_tiers
    order = writer.backlog_order(limit or 10**12)
    total = len(order)
    # The vectors stored and the backlog's characters (for the time left): the
    # memory's saved counts, each page's vectors then saved into them (set_vectors).
    counts = writer.stats() if total else None
    embedded_before = counts.embedded if counts else 0
    chars_total = sum(counts.pending_chars_by_tier.values()) if counts else 0
    if counts and any(counts.pending_by_tier.get(tier) for tier in int8):
        # The int8 model now, before the first page, not when the backlog reaches tool
        # results: deriving it (once per machine) takes a child of ~0.7 GB for seconds,
        # beside an indexer that has by then grown (at 1M chunks from ~0.95 GiB here to
        # 1.5-1.75 GiB within 26 minutes of tier 1; BENCHMARKS.md, "Decisions", "The
        # backlog's writer").
        embedder.prepare(int8)
    filled: list[tuple[int, int]] = []
    done = chars_done = 0
    unstored: list[tuple[list[str], np.ndarray]] = []

    def halted() -> bool:
        # The budget counts only once a step is embedded: a pass that was given time
        # always measures a rate, so the offer of the rest quotes one whatever the
        # host's speed and however small the budget.
        return should_stop() or (budget_s is not None and done > 0 and time.monotonic() - started >= budget_s)

    def store() -> None:
        if unstored:
            writer.set_vectors([i for ids, _ in unstored for i in ids], np.concatenate([v for _, v in unstored]),
                               filled=filled)
            unstored.clear()
            filled.clear()

    try:
        for queue in writer.rows_in_pages(order, page=BACKLOG_PAGE):
            if halted():
                break
            ids = queue.column("id").to_pylist()
            texts = queue.column("text").to_pylist()
            block_types = queue.column("block_type").to_pylist()
            tools = queue.column("tool_name").to_pylist()
            tiers = queue.column("tier").to_pylist()
            keys = [session_key(h, s) for h, s in zip(queue.column("harness").to_pylist(),
                                                       queue.column("session_id").to_pylist(), strict=True)]
            calls = writer.call_heads(queue.filter(pc.equal(queue.column("block_type"), "tool_result")).to_pylist())
            stopped = False
            for start in range(0, len(ids), EMBED_STEP):
                if start and halted():
                    stopped = True
                    break
                end = min(start + EMBED_STEP, len(ids))
                inputs = [embedding_input(texts[i], block_types[i], tools[i], calls.get(ids[i]))
                          for i in range(start, end)]
                unstored.append((ids[start:end], embedder.embed_chunks(inputs, tiers[start:end], int8)))
                filled.extend((tiers[i], len(texts[i] or "")) for i in range(start, end))
                if report is not None:
                    for i in range(start, end):
                        report.backlog_chars += len(texts[i])
                        report.backlog_by_tier[tiers[i]] += 1
                        if keys[i] in report.per_session:
                            report.per_session[keys[i]].embedded_by_tier[tiers[i]] += 1
                done += end - start
                chars_done += sum(len(t or "") for t in texts[start:end])
                progress("embed", end - start, total,
                         EmbedProgress(done, chars_done, max(chars_total, chars_done), time.monotonic() - started,
                                       embedded_before + done, embedded_before + total))
            store()
            if not should_stop():
                writer.keep_indexes()
            if stopped:
                break
    except KeyboardInterrupt:
        # Ctrl-C keeps every vector embedded, and folds the fragments they went into
        # back into the indexes (0.65 s at 300k rows), else each recall reads them flat
        # until the next write (1.4 s a cold recall instead of 1.1 s).
        store()
        if done:
            writer.keep_indexes(vector_kind=False)
        raise
    seconds = time.monotonic() - started
    if done:
        writer.coverage.record_embed_run(chunks=done, chars=chars_done, seconds=seconds)
    if report is not None:
        report.embedded += done
        report.embed_seconds += seconds
    return done


@contextmanager
def open_writer(location: MemoryLocation, *, wait_s: float = 5.0,
                allow_other_model: bool = False) -> Iterator[MemoryWriter]:
    """The memory at ``location`` opened for writing, stamped with (and checked
    against) the pinned embedding model."""
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim, wait_s=wait_s,
                           allow_other_model=allow_other_model) as writer:
        yield writer


# What follows indexing: the report of what was done, once the writer is closed.
Recorder = Callable[[MemoryLocation, IndexReport], None]


def index_memory(
    location: MemoryLocation,
    units: Sequence[SourceUnit],
    *,
    embedder: Callable[[], TextEmbedder],
    include_thinking: bool = True,
    embed_new: bool = False,
    backlog_budget_s: float | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    offer_rest: Callable[[MemoryWriter, IndexReport], bool] | None = None,
    limit: int | None = None,
    rebuild: bool = False,
    embed_all: bool = False,
    wait_s: float = 5.0,
    progress: Progress = _no_progress,
    on_indexed: Callable[[IndexReport], None] | None = None,
    record: Recorder | None = None,
) -> IndexReport:
    """Everything a command does to index ``units`` into ``location``.

    Open the writer with the model identity (``rebuild``: keep the rows of a memory
    built with another model, their vectors to be recomputed), index at most
    ``limit`` new or grown units (``embed_new``: their chunks embedded in the same
    write), call ``on_indexed``, then fill the backlog for ``backlog_budget_s``
    seconds (None: all of it; 0: none) unless ``should_stop``; with rows still
    pending, ``offer_rest`` may ask for the rest to be embedded now.  ``embed_all``
    stamps the memory to embed every tier from now on (tool calls too).  ``embedder``
    loads the model, only when there is something to embed.  Once the writer lock
    is released the report goes to ``record``."""
    loaded: list[TextEmbedder] = []

    def model() -> TextEmbedder:
        if not loaded:
            loaded.append(embedder())
        return loaded[0]

    if units:
        from funes.redaction import start_compiling_scanner

        start_compiling_scanner()  # meanwhile the memory opens (lancedb's import alone: 2 s cold)
    with open_writer(location, wait_s=wait_s, allow_other_model=rebuild) as writer:
        kept = writer.rebuild_for_new_model(IDENTITY.to_metadata(), IDENTITY.dim) if rebuild else 0
        if embed_all:
            writer.embed_every_tier()
        if limit is not None:
            units = writer.coverage.changed(units)[:limit]
        inline = model() if embed_new and units else None
        report = index_units(writer, units, include_thinking=include_thinking, progress=progress, embedder=inline)
        report.kept = kept
        if on_indexed is not None:
            on_indexed(report)
        if backlog_budget_s != 0 and writer.pending_count():
            embed_backlog(writer, model(), budget_s=backlog_budget_s, progress=progress,
                          should_stop=should_stop, report=report)
        if offer_rest is not None and writer.pending_count() and offer_rest(writer, report):
            embed_backlog(writer, model(), progress=progress, report=report)
        report.pending = writer.pending_count()
    if record is not None:
        record(location, report)
    return report
