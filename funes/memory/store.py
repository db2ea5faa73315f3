"""The memory: reading and writing the Lance ``chunks`` table and its BM25 index.

Readers (:class:`Memory`) use pylance directly: it imports in 0.3 s where lancedb
takes 1.0 s, which matters for a cold ``funes recall``.  The writer
(:class:`MemoryWriter`) uses lancedb's table API (merge-insert, optimize, index
builds) under a lock file, so there is one writer at a time while readers never
wait: Lance commits are atomic, and readers index in memory whatever rows the BM25
manifest does not cover yet.
"""

from __future__ import annotations

import ctypes
import functools
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar
from pathlib import Path

import numpy as np
import pyarrow as pa

from funes.chunking import SPLIT_SIZE, Chunk, chunking_metadata
from funes.embedding import (
    EMBED_EVERY_TIER,
    EVERY_TIER,
    TIERS_KEY,
    awaiting_vector_sql,
    dense_tiers,
    int8_tiers,
    precision_metadata,
)
from funes.errors import (
    FunesError,
    MemoryIncompatibleError,
    MemoryMissingError,
    RemoteError,
    UsageError,
    WriterBusyError,
    refused_write,
)
from funes.memory.coverage import Coverage
from funes.memory.health import (
    TableDamage,
    damaged_error,
    damaged_fragments,
    inspect,
    intact_fragments,
    lost_versions,
    open_newest_readable,
)
from funes.memory.lexical import (
    DOCUMENT,
    DOCUMENT_COLUMNS,
    LexicalIndex,
    TermCounts,
    document_rows,
    documents_from_rows,
)
from funes.memory.location import MemoryLocation
from funes.memory.stats import MemoryStats, load_stats, save_stats, table_state
from funes.memory.sql import quote, spans_sql, sql_in
from funes.memory.schema import (
    META_PREFIX,
    ROW_COLUMNS,
    SCHEMA_VERSION,
    TABLE_NAME,
    chunk_schema,
    decode_metadata,
    missing_fields,
)

_T = TypeVar("_T")
IDENTITY_KEYS = ("model_id", "revision", "dim")
# From this many embedded rows an IVF_PQ index (with a refine step: without one its
# recall@30 was 0.48 here) keeps search in ms.
VECTOR_INDEX_MIN_ROWS = 25_000
NPROBES = 20
REFINE_FACTOR = 5
# Below VECTOR_INDEX_MIN_ROWS, from this many, an IVF_FLAT index of EXACT_INDEX_PARTITIONS
# partitions.  A search probes NPROBES partitions, so it probes all of these and compares
# the query with every vector, as a flat search does: the same hits.  What it saves is
# the rows without a vector: a flat search reads the vector column of every row, and a
# first index leaves most rows without one for hours (12k vectors among 300k rows:
# 383 ms a warm search flat, 16 ms indexed; BENCHMARKS.md, "Vector index upkeep").
EXACT_INDEX_MIN_ROWS = 4096
EXACT_INDEX_PARTITIONS = 8
# Rows an index does not cover (new fragments, rows given a vector since) that make
# folding them into it pay: until then a search reads them flat, and a merge on ``id``
# reads every id of the fragments the id index lost.
INDEX_REFRESH_ROWS = 4096
# The vectors an IVF_PQ partition holds, recorded in the index as its target size.
# Lance's refresh (``optimize_indices``) joins partitions under a quarter of the
# target and splits those over four times it.  Built without one, the index got
# Lance's own: a 1M backlog's 128 partitions became 10 at the first refresh and 66
# (~11k vectors each) by 720k vectors, where a vector search took 34.0 ms p50; with
# this target, 605 partitions and 12.2 ms (BENCHMARKS.md, "Runs of 2026-12-03
# (stop 27)").
IVF_PARTITION_ROWS = 1024
# Vectors per partition an IVF_PQ's k-means trains on (Lance's default: 256).  Its
# sample is the build's memory: building one over 720k vectors into 848 partitions
# took +0.91 GiB and 68 s at 256, +0.46 GiB at 128, +0.25 GiB and 40 s at 64; on the
# 28,672 real vectors of the day-zero memory its hits were as near as at 256
# (BENCHMARKS.md, "Runs of 2026-12-03 (stop 27)").
IVF_SAMPLE_RATE = 64
# Columns readers filter on, each given a BTREE once the table holds INDEX_REFRESH_ROWS
# rows: ``id`` (the ranking columns of a recall's pool, the merge that fills in
# vectors) and ``session_id`` (a recall's block splits and neighbours, ``get``, a
# session filter).  Without one each such read scans the whole column: 45-60 ms a
# read at 302k rows, 9-10 ms with one.
SCALAR_INDEX_COLUMNS = ("id", "session_id")
# Every Lance fragment costs each cold reader: a file to open and a task in each scan,
# ~1.5 ms a fragment at 302k chunks.  A hook stores a turn as a fragment or two of a
# few rows, so a memory the hooks keep grows fragments without bound: 300 of them took
# a cold recall from ~0.5 s to ~0.9 s, 200 turns from 0.77 s to 1.24 s (BENCHMARKS.md,
# "Cold recall after the hooks' turns").  Once COMPACT_SMALL_FRAGMENTS fragments under SMALL_FRAGMENT_ROWS
# rows have gathered, a writer compacts them into fragments of up to that many rows.
# A bulk index's flushes (funes.indexing.FLUSH_CHUNKS chunks) are not small: a larger
# fragment makes each later merge of vectors into it rewrite more (the whole vector
# column of each fragment a page touches: 15 MB a page of 4,096 vectors into 5k-row
# fragments, 269 MB into one of 168k rows).
SMALL_FRAGMENT_ROWS = 4096
COMPACT_SMALL_FRAGMENTS = 32
# What a writer's Lance session may cache, of indexes and of manifests and file
# metadata.  lancedb's default session keeps every index version a writer opens, and
# each page of the backlog folds its vectors into new ones: a writer grew 28-33 MB a
# page at 1M rows (3.7 GB after 95 pages); with these bounds it stayed at ~900 MB, no
# slower (BENCHMARKS.md, "Day zero", stop 22).
WRITER_INDEX_CACHE_BYTES = 128 << 20
WRITER_METADATA_CACHE_BYTES = 64 << 20
# How far ahead a count of the whole table reads (Lance's default reads 16 batches of
# several fragments at once): at a million rows, counting the pending rows' text peaked
# at +685 MB, +336 MB at this, both in ~1.5 s; the vector column +346 MB in 1.2 s,
# +125 MB in 1.6 s (it is counted once per state of the rows: funes/memory/stats.py).
COUNT_READAHEAD = {"batch_readahead": 1, "fragment_readahead": 1}
# What the embedding backlog reads of a row, and how many rows it reads at a time.
BACKLOG_COLUMNS = ("id", "text", "tier", "ts", "tool_name", "block_type", "harness", "session_id")
BACKLOG_PAGE = 4096
# Rows :meth:`MemoryWriter.sync_lexical` indexes per segment (whole sessions at a time).
LEXICAL_PAGE = 4096
# Every hit prints its session's first 8 characters: that much names a session.
MIN_SESSION_PREFIX = 8


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc
    except (OSError, AttributeError):  # macOS, musl: nothing to call
        return None


def return_freed_memory() -> None:
    """Give the memory a scan of a whole column freed back to the OS.  Lance reads on
    its own threads, and glibc keeps what each thread frees in that thread's arena for
    reuse: a first index of 1M chunks grew 430 MB ordering its backlog, 310 MB summing
    its characters and 230 MB counting its vectors, and kept all of it while it
    embedded; trimmed after each, 300-500 MB less (BENCHMARKS.md, "Day zero", stop 22)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _identity_of(metadata: Mapping[str, str]) -> dict[str, str]:
    return {key: metadata.get(f"{META_PREFIX}embedding.{key}", "") for key in IDENTITY_KEYS}


def check_identity(location: MemoryLocation, stored: Mapping[str, str], expected: Mapping[str, str]) -> None:
    have, want = _identity_of(stored), _identity_of(expected)
    if have != want:
        raise MemoryIncompatibleError(
            f"memory at {location.label} was built with {have['model_id'] or 'an unknown model'}"
            f" (revision {have['revision'][:12] or '?'}, dim {have['dim'] or '?'}) but this funes embeds with"
            f" {want['model_id']} (revision {want['revision'][:12]}, dim {want['dim']}):"
            " run `funes index --rebuild` to re-embed it"
        )


def resolve_session(scan: Any, given: str) -> str:
    """The session id ``given`` names: itself when stored, else the one stored session
    whose id starts with it (at least :data:`MIN_SESSION_PREFIX` characters), else
    ``given`` unchanged (the caller finds nothing under it).  ``scan`` reads the table
    (``Memory.scan``, ``MemoryWriter._scan``)."""
    if len(given) < MIN_SESSION_PREFIX:
        return given
    found = scan(["session_id"], f"starts_with(session_id, {quote(given)})").column("session_id")
    matches = sorted(set(found.to_pylist()))
    if given in matches or not matches:
        return given
    if len(matches) > 1:
        listed = ", ".join(matches[:5]) + (f" and {len(matches) - 5} more" if len(matches) > 5 else "")
        raise UsageError(f"session {given!r} is ambiguous: {len(matches)} sessions start with it ({listed});"
                         " give more of the id")
    return matches[0]


def lexical_documents(scan: Any, ids: Sequence[str], total_rows: int) -> dict[str, str]:
    """The BM25 documents (:func:`funes.memory.lexical.document`) of chunk ``ids``,
    read through ``scan(columns, where) -> pa.Table``; ids not in the table are absent.

    A document holds the chunks just before its own in the session, so besides the
    ids' rows this reads the rows of their sessions from ``context_turns`` turns
    before the earliest wanted one; when the ids are much of the table, one scan
    of the whole table is cheaper."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    if len(wanted) * 4 >= total_rows:
        return documents_from_rows(scan(DOCUMENT_COLUMNS, None).to_pylist(), wanted)
    own: list[dict[str, Any]] = []
    for start in range(0, len(wanted), 500):
        own += scan(DOCUMENT_COLUMNS, sql_in("id", wanted[start:start + 500])).to_pylist()
    spans: dict[str, tuple[int, int]] = {}
    for row in own:
        seq = int(row["seq"] or 0)
        low, high = spans.get(row["session_id"], (seq, seq))
        spans[row["session_id"]] = (min(low, seq), max(high, seq))
    context: list[dict[str, Any]] = []
    sessions = list(spans)
    for start in range(0, len(sessions), 100):
        context += scan(DOCUMENT_COLUMNS, spans_sql({sid: (spans[sid][0] - DOCUMENT["context_turns"], spans[sid][1])
                                                     for sid in sessions[start:start + 100]})).to_pylist()
    return documents_from_rows(own + context, wanted)


class _NoPandas:
    """A finder that has no pandas (see :func:`_import_pyarrow_dataset_without_pandas`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not imported by a reader", name=name)
        return None


def _import_pyarrow_dataset_without_pandas() -> None:
    """Import ``pyarrow.dataset`` (what ``lance`` imports) without the pandas its
    module init pulls in: 0.4 s of CPU (over 1 s on a loaded machine) that a cold
    `funes recall` never uses.  pyarrow then only assumes no pandas for implicit
    conversions; ``to_pandas``/``from_pandas`` import it when called, and lance
    imports it lazily itself."""
    import sys

    if "pyarrow.dataset" in sys.modules or "pandas" in sys.modules:
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        import pyarrow.dataset  # noqa: F401
    finally:
        sys.meta_path.remove(blocker)


def vector_index_kind(embedded: int) -> str | None:
    """The vector index a memory with ``embedded`` rows with vectors keeps: none below
    :data:`EXACT_INDEX_MIN_ROWS`, an exact IVF_FLAT, from :data:`VECTOR_INDEX_MIN_ROWS`
    an IVF_PQ."""
    if embedded >= VECTOR_INDEX_MIN_ROWS:
        return "IVF_PQ"
    return "IVF_FLAT" if embedded >= EXACT_INDEX_MIN_ROWS else None


def ivf_pq_partitions(embedded: int) -> int:
    """The partitions an IVF_PQ built over ``embedded`` vectors starts with: one per
    :data:`IVF_PARTITION_ROWS` vectors, at least 16."""
    return max(16, embedded // IVF_PARTITION_ROWS)


def _kept_by_refreshes(vector: IndexState | None) -> bool:
    """Whether the vector index is the one a memory keeps once large: an IVF_PQ with
    :data:`IVF_PARTITION_ROWS` as its target, whose partitions each refresh splits and
    joins as vectors are added."""
    return vector is not None and vector.index_type == "IVF_PQ" and vector.target_partition_size == IVF_PARTITION_ROWS


@dataclass(frozen=True)
class IndexState:
    name: str
    columns: tuple[str, ...]
    index_type: str  # as Lance names it: BTree, IVF_FLAT, IVF_PQ
    uncovered_rows: int  # rows of fragments the index does not cover
    target_partition_size: int | None = None  # an IVF index's, when it records one


class Memory:
    """A memory opened for reading.

    A damaged memory is still read: when a read fails, :mod:`funes.memory.health` is
    asked which fragments cannot be read, and this and every later read of this
    memory skip them (``damage`` then says what is skipped).  A memory whose newest
    manifest is unreadable is read as of the newest version that opens."""

    def __init__(self, location: MemoryLocation, dataset: Any, damage: TableDamage | None = None):
        self.location = location
        self.dataset = dataset
        self.damage = damage or TableDamage(version=int(dataset.version))
        self._intact: list[Any] | None = None  # the fragments read, once some are known damaged
        self._checked_deep = False
        self._lexical: LexicalIndex | None = None
        self._absent: dict[str, pa.Field] | None = None  # columns of our schema the table lacks
        self._vector_indexed: bool | None = None
        self._saved: MemoryStats | None | bool = False  # False: not looked up yet

    @classmethod
    def open(cls, location: MemoryLocation) -> Memory:
        _import_pyarrow_dataset_without_pandas()
        import lance

        try:
            dataset = lance.dataset(location.table_uri, storage_options=location.storage_options or None)
        except Exception as exc:  # noqa: BLE001 - lance raises plain errors: which one is asked below
            if isinstance(exc, FileNotFoundError) or "not found" in str(exc).lower() or "does not exist" in str(
                exc
            ).lower():
                raise MemoryMissingError(f"no memory at {location.label}: run funes index") from exc
            if not location.is_local:
                raise RemoteError(f"cannot read memory at {location.label}: {_remote_failure(location, exc)}") from exc
            try:
                Path(location.table_uri).stat()
            except FileNotFoundError:
                raise MemoryMissingError(f"no memory at {location.label}: run funes index") from exc
            except OSError as unreachable:  # a name too long, a component that is a file, no permission
                raise MemoryMissingError(f"no memory at {location.label}: {unreachable.strerror or unreachable}") \
                    from exc
            dataset, damage = open_newest_readable(location, exc)
            return cls(location, dataset, damage)
        return cls(location, dataset)

    def _read(self, read: Callable[[], _T]) -> _T:
        """``read()``, again without the damaged fragments when it fails on them."""
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - re-raised unless the memory is found damaged
            if not self.location.is_local:
                raise RemoteError(f"cannot read memory at {self.location.label}: "
                                  f"{_remote_failure(self.location, exc)}") from exc
            if not self._skip_damaged():
                raise
        return read()

    def _skip_damaged(self) -> bool:
        """Find damaged fragments not skipped yet (the cheap check first, then a whole
        read of every fragment); True when some were found."""
        known = self.damage.fragments
        found = damaged_fragments(self.location, self.dataset, deep=False, known=known)
        if len(found) == len(known) and not self._checked_deep:
            self._checked_deep = True
            found = damaged_fragments(self.location, self.dataset, deep=True, known=known)
        if len(found) == len(known):
            return False
        self.damage.fragments = found
        self._intact = intact_fragments(self.dataset, found)
        return True

    def check(self) -> TableDamage:
        """The damage known, after the cheap check of every fragment's files (for
        `funes status`: one stat per file) and of the BM25 index."""
        self._check_files()
        self.lexical()
        return self.damage

    def _check_files(self) -> None:
        """The cheap check of every fragment's files (one stat each), its damage skipped
        from then on."""
        if self.location.is_local:
            found = damaged_fragments(self.location, self.dataset, deep=False, known=self.damage.fragments)
            if len(found) != len(self.damage.fragments):
                self.damage.fragments = found
                self._intact = intact_fragments(self.dataset, found)

    def _scanner(self, **options: Any) -> Any:
        if self._intact is not None:
            options["fragments"] = self._intact
        return self.dataset.scanner(**options)

    # ------------------------------------------------------------------ facts
    @property
    def metadata(self) -> dict[str, str]:
        return decode_metadata(self.dataset.schema)

    @property
    def identity(self) -> dict[str, str]:
        return _identity_of(self.metadata)

    @property
    def dense_tiers(self) -> tuple[int, ...]:
        """The tiers this memory gives vectors to (:func:`funes.embedding.dense_tiers`)."""
        return dense_tiers(self.metadata)

    @property
    def int8_tiers(self) -> tuple[int, ...]:
        """The tiers whose vectors CPU writers compute at int8 (:func:`funes.embedding.int8_tiers`)."""
        return int8_tiers(self.metadata)

    @property
    def version(self) -> int:
        return int(self.dataset.version)

    def count(self, where: str | None = None) -> int:
        def count() -> int:
            if self._intact is None:
                return int(self.dataset.count_rows(filter=where))
            return int(self._scanner(columns=[], filter=where, with_row_id=True).count_rows())

        return self._read(count)

    def require_rows(self) -> None:
        if self.count() == 0:
            raise MemoryMissingError(f"memory at {self.location.label} is empty: run funes index")

    def check_identity(self, expected: Mapping[str, str]) -> None:
        check_identity(self.location, self.metadata, expected)

    # ------------------------------------------------------------------ reading rows
    def scan(self, columns: Sequence[str], where: str | None = None, *, row_ids: bool = False,
             computed: Mapping[str, str] | None = None) -> pa.Table:
        """``columns`` of the rows ``where`` keeps (``row_ids``: and each row's
        ``_rowid``, for :meth:`rows_at`; ``computed``: and a column per name, the
        value of its SQL expression); a column of this funes's schema that the
        table lacks (one written by an older funes, never migrated) reads as nulls."""
        computed = dict(computed or {})
        return self._with_absent(columns, lambda present: self._scanner(
            columns={**{c: c for c in present}, **computed} if computed else present, filter=where,
            with_row_id=row_ids).to_table(), extra=[*computed, *(["_rowid"] if row_ids else [])])

    def _with_absent(self, columns: Sequence[str], read: Callable[[list[str]], pa.Table],
                     extra: Sequence[str] = ()) -> pa.Table:
        """``read(present columns)`` with the columns the table lacks added as nulls."""
        if self._absent is None:
            self._absent = {f.name: f for f in missing_fields(self.dataset.schema)}
        absent = self._absent
        present = [c for c in columns if c not in absent]
        table = self._read(lambda: read(present))
        if len(present) == len(columns):
            return table
        return pa.Table.from_arrays([table.column(c) if c not in absent else pa.nulls(table.num_rows, absent[c].type)
                                     for c in columns] + [table.column(c) for c in extra],
                                    names=[*columns, *extra])

    def lacks(self, columns: Sequence[str]) -> list[str]:
        """Which of ``columns`` the stored table does not have."""
        names = set(self.dataset.schema.names)
        return [c for c in columns if c not in names]

    def rows(self, ids: Sequence[str], columns: Sequence[str] = ROW_COLUMNS, *,
             row_ids: bool = False, computed: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
        """Rows by chunk id (missing ids are absent from the result); ``row_ids``:
        each also holds its ``_rowid``, for :meth:`rows_at`; ``computed``: as in
        :meth:`scan`."""
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            batch = unique[start:start + 500]
            table = self.scan(columns, sql_in("id", batch), row_ids=row_ids, computed=computed)
            for row in table.to_pylist():
                out[row["id"]] = row
        return out

    def rows_at(self, row_ids: Sequence[int], columns: Sequence[str] = ROW_COLUMNS) -> dict[str, dict[str, Any]]:
        """Rows by chunk id, fetched by the ``_rowid`` :meth:`rows` gave (this
        memory's version): no filter scan.  Without a scalar index a filter on ``id``
        reads the whole id column, and late materialisation of many columns over the
        hundreds of rows a recall fuses costs more still (0.29 s at 302k chunks,
        where 7 columns for the pool and every column by row id for the finalists
        cost 0.15 s).  ``_take_rows`` is pylance's (unstable) take by row id,
        pinned in constraints.txt."""
        if not row_ids:
            return {}
        table = self._with_absent(columns, lambda present: self.dataset._take_rows(list(row_ids), columns=present))
        return {row["id"]: row for row in table.to_pylist()}

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        return {key: row["text"] for key, row in self.rows(ids, ("id", "text")).items()}

    def documents(self, ids: Sequence[str]) -> dict[str, str]:
        """What the BM25 index holds for each chunk id (its text with its context)."""
        return lexical_documents(self.scan, ids, self.count())

    def block_splits(self, rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, int], int]:
        """How many chunks each block of ``rows`` was split into, keyed by
        (session_id, turn_uuid, block_idx).  Only blocks that can have more than one
        chunk are looked up: a first chunk shorter than half a split is its whole
        block (a split is cut in the second half of its window)."""
        counts: dict[tuple[str, str, int], int] = {}
        for row in self._split_blocks(rows, ["session_id", "turn_uuid", "block_idx"]):
            key = (row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0))
            counts[key] = counts.get(key, 0) + 1
        return counts

    def resolve_session(self, given: str) -> str:
        """See :func:`resolve_session`."""
        return resolve_session(self.scan, given)

    def block_pieces(self, rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, int], list[tuple[int, str]]]:
        """The ``(char_start, text)`` chunks, in split order, of each block of
        ``rows`` that can have more than one (keyed as :meth:`block_splits`); a
        block not in the result is its one chunk."""
        rows = list(rows)
        wanted = {(r["session_id"], r["turn_uuid"], int(r["block_idx"] or 0)) for r in rows}
        pieces: dict[tuple[str, str, int], list[tuple[int, int, str]]] = {}
        for row in self._split_blocks(rows, ["session_id", "turn_uuid", "block_idx", "split_idx", "char_start", "text"]):
            key = (row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0))
            if key in wanted:
                pieces.setdefault(key, []).append((int(row["split_idx"] or 0), int(row["char_start"] or 0),
                                                   row["text"] or ""))
        return {key: [(start, text) for _, start, text in sorted(found)] for key, found in pieces.items()}

    def _split_blocks(self, rows: Iterable[Mapping[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
        """``columns`` of every chunk of the turns of ``rows`` whose block may be split.

        Asked as two IN lists (sessions, turns), whose superset is cut to the exact
        (session, turn) pairs here: one OR'd condition per session costs a table
        without scalar indexes (a first index) twice the CPU.  Cut in Python, not by
        an Arrow mask: ``pa.array`` imports numpy.ma, 0.05–0.1 s of a cold recall."""
        turns = {(row["session_id"], row["turn_uuid"]) for row in rows
                 if row["split_idx"] or len(row["text"] or "") >= SPLIT_SIZE // 2}
        if not turns:
            return []
        where = (f"{sql_in('session_id', sorted({sid for sid, _ in turns}))}"
                 f" AND {sql_in('turn_uuid', sorted({turn for _, turn in turns}))}")
        return [row for row in self.scan(columns, where).to_pylist() if (row["session_id"], row["turn_uuid"]) in turns]

    def spans_rows(self, spans: Mapping[str, tuple[int, int]], columns: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The rows of each session ``{session_id: (seq_min, seq_max)}`` names, in
        session order (as :meth:`session_rows`), read in one scan (:func:`spans_sql`)."""
        if not spans:
            return {}
        out: dict[str, list[dict[str, Any]]] = {sid: [] for sid in spans}
        for row in self.scan(list(dict.fromkeys(["session_id", *columns])), spans_sql(spans)).to_pylist():
            out[row["session_id"]].append(row)
        for rows in out.values():
            rows.sort(key=lambda r: (r["seq"], r["block_idx"], r["split_idx"]))
        return out

    def session_rows(self, session_id: str, seq_min: int | None = None, seq_max: int | None = None,
                     columns: Sequence[str] = ROW_COLUMNS) -> list[dict[str, Any]]:
        where = f"session_id = {quote(session_id)}"
        if seq_min is not None:
            where += f" AND seq >= {int(seq_min)}"
        if seq_max is not None:
            where += f" AND seq <= {int(seq_max)}"
        rows = self.scan(columns, where).to_pylist()
        rows.sort(key=lambda r: (r["seq"], r["block_idx"], r["split_idx"]))
        return rows

    # ------------------------------------------------------------------ search
    def lexical(self) -> LexicalIndex:
        """The BM25 index, covering every row of the table version read."""
        if self._lexical is None:
            index = LexicalIndex.open(self.location.lexical_dir)
            self.damage.lexical = index.problem
            self.damage.lost_versions = 0 if self.damage.unreadable_manifests else lost_versions(
                self.dataset, index.table_version)
            if index.table_version != self.version:
                missing = self._unindexed_ids(index)
                if missing:
                    texts = self.documents(missing)
                    ids = [i for i in missing if i in texts]
                    index = index.with_transient(ids, [texts[i] for i in ids])
            self._lexical = index
        return self._lexical

    def _unindexed_ids(self, index: LexicalIndex) -> list[str]:
        """The ids of this version the BM25 ``index`` (committed at an older table
        version) lacks.  Rows written since that version live in fragments it did
        not have (Lance writes appended or rewritten rows to new fragments; a merge
        that only fills in vectors, on the id index, adds a vector file to the
        fragments it touches, whose text did not change; a delete only marks old
        rows), so only those fragments' ids are read: a write that filled in
        vectors costs a reader at most the ids of that batch, not of the whole table.  When
        that version is gone (cleaned up) or unreadable, every id is compared."""
        fragments = None
        if self._intact is None and index.table_version >= 0:
            try:
                indexed = {f.fragment_id for f in self.dataset.checkout_version(index.table_version).get_fragments()}
                fragments = [f for f in self.dataset.get_fragments() if f.fragment_id not in indexed]
            except Exception:  # noqa: BLE001 - an old version cleaned up or damaged: compare all ids
                fragments = None
        if fragments is not None:
            if not fragments:
                return []
            new_ids = self._read(lambda: self.dataset.scanner(columns=["id"], fragments=fragments).to_table())
            return [i for i in dict.fromkeys(new_ids.column("id").to_pylist()) if not index.covers(i)]
        table_ids = self.scan(["id"]).column("id").to_numpy(zero_copy_only=False).astype("<U16")
        return [str(m) for m in np.setdiff1d(table_ids, index.covered_ids(), assume_unique=False)]

    def vector_search(self, vector: np.ndarray, k: int, where: str | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, cosine distance)`` of the ``k`` nearest embedded chunks."""
        query = np.ascontiguousarray(vector, dtype=np.float32)
        # An Arrow array, not the ndarray: Lance converts an ndarray with pyarrow's
        # from_pandas, which imports numpy.ma (0.05–0.1 s of a cold recall).
        as_arrow = pa.Array.from_buffers(pa.float32(), len(query), [None, pa.py_buffer(query)])
        nearest = {"column": "vector", "q": as_arrow, "k": k, "metric": "cosine",
                   "nprobes": NPROBES, "refine_factor": REFINE_FACTOR}

        def search() -> list[tuple[str, float]]:
            if self._intact is not None:  # Lance searches no subset of fragments: exact search here
                return self._exact_search(vector, k, where)
            condition = where
            if not self._has_vector_index():
                # A flat search (a first index, vectors still filling in): only rows with a
                # vector are compared, and a table with none answers nothing.
                condition = "vector IS NOT NULL" + (f" AND ({where})" if where else "")
            table = self.dataset.to_table(columns=["id", "_distance"], nearest=nearest, filter=condition,
                                          prefilter=condition is not None)
            return list(zip(table.column("id").to_pylist(), table.column("_distance").to_pylist(), strict=True))

        return self._read(search)

    def _has_vector_index(self) -> bool:
        if self._vector_indexed is None:
            self._vector_indexed = any("vector" in index.field_names for index in self.dataset.describe_indices())
        return self._vector_indexed

    def _exact_search(self, vector: np.ndarray, k: int, where: str | None) -> list[tuple[str, float]]:
        embedded = "vector IS NOT NULL" + (f" AND ({where})" if where else "")
        table = self._scanner(columns=["id", "vector"], filter=embedded).to_table()
        if table.num_rows == 0:
            return []
        dim = table.schema.field("vector").type.list_size
        matrix = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        query = vector.astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        distances = 1.0 - (matrix @ query) / np.maximum(norms, 1e-12)
        order = np.argsort(distances, kind="stable")[:k]
        ids = table.column("id").to_pylist()
        return [(ids[i], float(distances[i])) for i in order]

    def stats(self) -> MemoryStats:
        """What the memory holds, counted: read back when the table's rows are as they
        were when last counted (:mod:`funes.memory.stats`), else counted and saved.  A
        data file damaged in place leaves the manifest as it was, so the files are
        checked first: a damaged memory is counted for what can be read, never saved."""
        self._check_files()
        whole = self._intact is None and not self.damage
        state = table_state(self.dataset, self.dense_tiers) if whole else ""
        if whole and (saved := load_stats(self.location.state_dir, state, self.version)) is not None:
            return saved
        stats = self._count()
        if whole:
            save_stats(self.location.state_dir, state, stats)
        return stats

    def known_without_vectors(self) -> bool:
        """Whether the counts saved for the table as it is say no row has a vector (a
        first index still in its lexical pass: the writer saves them at each commit).
        False when some row has one, or when nothing is saved: counting would read the
        vector column of every row (1.2 s at a million), more than a recall saves."""
        saved = self._saved_stats()
        return saved is not None and saved.embedded == 0

    def known_without_backlog(self) -> bool:
        """Whether the counts saved for the table as it is say no row is owed a vector
        (then a recall need not ask which of its candidates are: 5-20 ms of a cold
        recall).  False when some row is, or when nothing is saved."""
        saved = self._saved_stats()
        return saved is not None and not any(saved.pending_by_tier.values())

    def _saved_stats(self) -> MemoryStats | None:
        """The counts saved for the table as it is (None: none saved, or the memory is damaged)."""
        if self._saved is False:
            whole = self._intact is None and not self.damage
            self._saved = load_stats(self.location.state_dir, table_state(self.dataset, self.dense_tiers),
                                     self.version) if whole else None
        return self._saved  # type: ignore[return-value]

    def _count(self) -> MemoryStats:
        import polars as pl

        frame = pl.from_arrow(self.scan(["session_id", "harness", "indexed_at"], None))
        # Per pending row its tier and length, the length computed by Lance: a first
        # index of a million chunks leaves all their text pending.
        pending = pl.from_arrow(self._read(lambda: self._scanner(
            columns={"tier": "tier", "chars": "character_length(text)"},
            filter=awaiting_vector_sql(self.dense_tiers), **COUNT_READAHEAD).to_table()))
        per_harness: dict[str, dict[str, int]] = {}
        if frame.height:
            grouped = frame.group_by("harness").agg(pl.len().alias("chunks"),
                                                    pl.col("session_id").n_unique().alias("sessions"))
            for row in grouped.iter_rows(named=True):
                per_harness[row["harness"] or ""] = {"chunks": row["chunks"], "sessions": row["sessions"]}
        pending_by_tier: dict[int, int] = {}
        pending_chars: dict[int, int] = {}
        if pending.height:
            grouped = pending.group_by("tier").agg(pl.len(), pl.col("chars").sum())
            for tier, count, chars in grouped.iter_rows():
                pending_by_tier[int(tier or 0)] = int(count)
                pending_chars[int(tier or 0)] = int(chars or 0)
        stats = MemoryStats(
            chunks=frame.height,
            sessions=frame.select(pl.struct("harness", "session_id").n_unique()).item() if frame.height else 0,
            embedded=self._read(lambda: self._scanner(columns=[], filter="vector IS NOT NULL", with_row_id=True,
                                                      **COUNT_READAHEAD).count_rows()),
            per_harness=dict(sorted(per_harness.items())),
            pending_by_tier=dict(sorted(pending_by_tier.items())),
            pending_chars_by_tier=dict(sorted(pending_chars.items())),
            last_indexed=frame.get_column("indexed_at").filter(frame.get_column("indexed_at") != "").max(),
            version=self.version,
        )
        del frame, pending
        return_freed_memory()
        return stats


def stored_ids(location: MemoryLocation) -> set[str]:
    """The chunk ids the memory at ``location`` holds (none when it does not exist
    yet): what the writer and the pipeline's embedding stage skip."""
    try:
        return set(Memory.open(location).scan(["id"]).column("id").to_pylist())
    except MemoryMissingError:
        return set()


class MemoryWriter:
    """The memory opened for writing, under its lock: use :meth:`open`."""

    def __init__(self, location: MemoryLocation, table: Any, coverage: Coverage):
        self.location = location
        self.table = table
        self.coverage = coverage
        self.lexical = LexicalIndex.open(location.lexical_dir)
        self._known_ids: set[str] | None = None
        self._known_sessions: set[str] = set()  # the session ids of the table, loaded with the ids
        self._id_indexed = False
        # Vectors this writer stored since it last counted them for the vector index's
        # kind: counting reads the vector column of every row (1.4-2.9 s at 1M rows),
        # so a hook's few vectors a turn never pay for it; a page of the backlog does.
        self._vectors_uncounted = 0

    @classmethod
    @contextmanager
    def open(cls, location: MemoryLocation, expected_identity: Mapping[str, str], *, dim: int,
             wait_s: float = 5.0, allow_other_model: bool = False) -> Iterator[MemoryWriter]:
        """Lock, then open or create the table stamped with ``expected_identity``.

        Another writer holding the lock past ``wait_s`` → :class:`WriterBusyError`; a
        table built with another model → :class:`MemoryIncompatibleError` unless
        ``allow_other_model`` (for :meth:`rebuild_for_new_model`); a damaged table →
        :class:`~funes.errors.MemoryDamagedError`; a disk that refuses a write, at any
        moment → a one-line :class:`FunesError` (what was committed stays)."""
        with writer_lock(location, wait_s), cls.open_locked(location, expected_identity, dim=dim,
                                                            allow_other_model=allow_other_model) as writer:
            yield writer

    @classmethod
    @contextmanager
    def open_locked(cls, location: MemoryLocation, expected_identity: Mapping[str, str], *, dim: int,
                    allow_other_model: bool = False) -> Iterator[MemoryWriter]:
        """:meth:`open` for a caller already holding :func:`writer_lock` (`funes repair`)."""
        coverage: Coverage | None = None
        opening = True
        try:
            table = cls._open_table(location, expected_identity, dim, allow_other_model)
            coverage = Coverage(location.coverage_path)
            writer = cls(location, table, coverage)
            writer._refuse_lost_versions()
            opening = False
            yield writer
        except FunesError:
            raise
        except Exception as exc:  # noqa: BLE001 - re-raised unless the disk or the memory explains it
            explained = _write_failure(location, exc, opening=opening)
            if explained is exc:
                raise
            raise explained from exc
        finally:
            if coverage is not None:
                coverage.close()

    def _refuse_lost_versions(self) -> None:
        """A table whose newest versions were lost (their manifests deleted) would take
        new versions under the same numbers and hide the loss: repair it first."""
        import lance

        if self.lexical.table_version > self.version:
            dataset = lance.dataset(self.location.table_uri, storage_options=self.location.storage_options or None)
            damage = TableDamage(version=self.version, lost_versions=lost_versions(dataset, self.lexical.table_version))
            if damage:
                raise damaged_error(self.location, damage)

    @staticmethod
    def lock_free(location: MemoryLocation) -> bool:
        """Whether no process holds ``location``'s writer lock right now (looked at,
        not kept: :meth:`open` may still find it taken a moment later)."""
        from filelock import FileLock, Timeout

        if not location.lock_path.parent.is_dir():
            return True  # never written here: :meth:`open` creates the state folder
        lock = FileLock(str(location.lock_path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return False
        except OSError:
            return True  # let :meth:`open` report what is wrong with the folder
        lock.release()
        return True

    @staticmethod
    def _open_table(location: MemoryLocation, expected_identity: Mapping[str, str], dim: int,
                    allow_other_model: bool) -> Any:
        import lancedb

        try:
            db = lancedb.connect(location.uri, storage_options=location.storage_options or None,
                                 session=_writer_session())
            if TABLE_NAME in db.list_tables().tables:
                table = db.open_table(TABLE_NAME)
                if not allow_other_model:
                    check_identity(location, decode_metadata(table.schema), expected_identity)
                return MemoryWriter._migrated(table)
            return db.create_table(TABLE_NAME, schema=chunk_schema(dim, {**expected_identity, **chunking_metadata(),
                                                                         **precision_metadata()}))
        except FunesError:
            raise
        except Exception as exc:  # noqa: BLE001 - lance and lancedb raise plain errors
            if not location.is_local and refused_write(exc) is None:
                raise RemoteError(f"cannot open memory at {location.label}: {_remote_failure(location, exc)}") from exc
            raise

    @staticmethod
    def _migrated(table: Any) -> Any:
        """``table`` with every column of this funes's schema: the columns an older
        memory lacks are added null-filled (a metadata-only commit: no row is
        rewritten), and its schema version is stamped.  Rows indexed before keep no
        provenance: their turns are not parsed again."""
        missing = missing_fields(table.schema)
        if missing:
            table.add_columns(pa.schema(missing))
        key = f"{META_PREFIX}schema_version"
        if decode_metadata(table.schema).get(key) != SCHEMA_VERSION:
            table.to_lance().update_schema_metadata({key: SCHEMA_VERSION})
            table.checkout_latest()
        return table

    # ------------------------------------------------------------------ rows
    @property
    def version(self) -> int:
        return int(self.table.version)

    def known_ids(self) -> set[str]:
        if self._known_ids is None:
            try:
                rows = Memory.open(self.location).scan(["id", "session_id"])
            except MemoryMissingError:
                rows = pa.table({"id": pa.array([], pa.string()), "session_id": pa.array([], pa.string())})
            self._known_ids = set(rows.column("id").to_pylist())
            self._known_sessions = set(rows.column("session_id").unique().to_pylist())
        return self._known_ids

    def _counts_before_append(self) -> MemoryStats | None:
        """The memory's saved counts of the table as it is (zero for an empty table),
        for :meth:`add_chunks` to save those of the table it makes; None when none are
        saved (the next reader counts)."""
        if self.table.count_rows() == 0:  # from the manifest: no scan
            return MemoryStats(chunks=0, sessions=0, embedded=0)
        return load_stats(self.location.state_dir, self._table_state(), self.version)

    def _session_keys_new_to_table(self, rows: Sequence[Chunk]) -> set[tuple[str, str]]:
        """The (harness, session id) pairs of ``rows`` the table holds no row of: a
        session id it knows is looked up (by the BTREE on ``session_id``), in case
        another harness stored it."""
        keys = {(c.harness or "", c.session_id) for c in rows}
        known = self.known_sessions() & {session for _, session in keys}
        if known:
            stored = self._scan(["harness", "session_id"], sql_in("session_id", sorted(known)))
            keys -= {(harness or "", session) for harness, session in zip(
                stored.column("harness").to_pylist(), stored.column("session_id").to_pylist(), strict=True)}
        return keys

    def drop_known_ids(self) -> None:
        """Let go of the table's ids, read again when rows are next stored: a writer
        that goes on to embed its backlog needs none of them (a million ids held as a
        set are ~110 MB)."""
        self._known_ids = None
        self._known_sessions = set()
        return_freed_memory()

    def known_sessions(self) -> set[str]:
        """The session ids the table holds rows of."""
        self.known_ids()
        return self._known_sessions

    def sessions_new_to_table(self, chunks: Iterable[Chunk]) -> set[str]:
        """The session ids of ``chunks`` the table holds no row of."""
        return {c.session_id for c in chunks} - self.known_sessions()

    def add_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray | None = None, *,
                   update_lexical: bool = True) -> list[str]:
        """Insert the chunks the memory lacks (ids already stored, or repeated in
        ``chunks``, are left out: nothing is stored twice).

        Returns the ids inserted.  With ``update_lexical`` the new chunks also get a
        BM25 segment at once (:meth:`index_lexical`); a caller storing a batch in
        several calls indexes it once itself."""
        known = self.known_ids()
        fresh: list[int] = []
        seen: set[str] = set()
        for position, chunk in enumerate(chunks):
            if chunk.id not in known and chunk.id not in seen:
                seen.add(chunk.id)
                fresh.append(position)
        if not fresh:
            return []
        rows = [chunks[i] for i in fresh]
        new_sessions = self.sessions_new_to_table(rows) if update_lexical else set()
        covered_version = self.version
        given = None if vectors is None else vectors[fresh]
        counts = self._counts_before_append()
        new_keys = self._session_keys_new_to_table(rows) if counts is not None else set()
        data = self._arrow_rows(rows, given)
        # A plain append: the ids were checked against every stored id above, under the
        # writer lock, and a merge on id would read the whole id column at each commit.
        # Vectors that are not finite are stored null; lancedb looks for them by reading
        # every value of the column, nulls too (1 s of a first index's 300k rows), so
        # only where some were given.
        self.table.add(data, on_bad_vectors="error" if given is None else "null")
        if counts is not None:
            # Lance stores a vector that is not finite as null: that row is still owed one.
            with_vector = (np.zeros(len(rows), dtype=bool) if given is None
                           else np.isfinite(np.asarray(given, dtype=np.float32)).all(axis=1))
            tiers = set(self.dense_tiers)
            save_stats(self.location.state_dir, self._table_state(), counts.with_rows(
                per_harness=Counter(c.harness or "" for c in rows), new_sessions=new_keys,
                embedded=int(with_vector.sum()), indexed_at=data.column("indexed_at")[0].as_py(),
                pending=[(c.tier, len(c.text or "")) for c, vector in zip(rows, with_vector, strict=True)
                         if not vector and c.tier in tiers]))
        self._vectors_uncounted += 0 if vectors is None else len(rows)
        ids = [c.id for c in rows]
        known.update(ids)
        self._known_sessions.update(c.session_id for c in rows)
        if update_lexical:
            self.index_lexical(ids, rows, new_sessions, covered_version)
        return ids

    def index_lexical(self, ids: Sequence[str], chunks: Sequence[Chunk], new_sessions: Set[str],
                      covered_version: int, counted: Mapping[str, TermCounts] | None = None) -> None:
        """Commit a BM25 segment for ``ids``, just stored from ``chunks``.

        A chunk's document needs its session's earlier chunks: for the
        ``new_sessions`` (no row in the table before this write) those are all among
        ``chunks``, so their documents are built from them, as
        :func:`documents_from_rows` builds them from the table; the documents of a
        grown session's chunks are read from the table.  ``counted``: sessions whose
        chunks (all of them among ``chunks``) came with their documents' term counts,
        made where they were chunked (:func:`funes.memory.lexical.session_term_counts`);
        those of ``new_sessions`` are used as they are, not built and tokenized here.
        The manifest records the table's version only when the index covered
        ``covered_version`` (the one before this write): else readers still index the
        gap, and :meth:`sync_lexical` closes it."""
        usable = {session: terms for session, terms in (counted or {}).items() if session in new_sessions}
        in_hand = document_rows(c for c in chunks if c.session_id in new_sessions and c.session_id not in usable)
        wanted = set(ids)
        documents = documents_from_rows(in_hand, [r["id"] for r in in_hand if r["id"] in wanted])
        counted_ids = {i for terms in usable.values() for i in terms.ids} & wanted
        grown = [i for i in ids if i not in documents and i not in counted_ids]
        if grown:
            documents.update(self._fetch_texts(grown))
        written = [i for i in dict.fromkeys(ids) if i in documents or i in counted_ids]
        version = self.version if self.lexical.table_version == covered_version else self.lexical.table_version
        self.lexical.add(written, [documents.get(i) for i in written], version, self._still_stored,
                         list(usable.values()))

    def _still_stored(self, ids: Sequence[str]) -> set[str]:
        return self.known_ids()

    def chunks_per_session(self) -> Counter[str]:
        """Rows stored per session key (``<harness>--<session_id>``)."""
        from funes.traces.model import session_key

        rows = self._scan(["harness", "session_id"])
        return Counter(session_key(h or "", s) for h, s in zip(rows.column("harness").to_pylist(),
                                                              rows.column("session_id").to_pylist(), strict=True))

    def _arrow_rows(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> pa.Table:
        schema = self.table.schema
        dim = schema.field("vector").type.list_size
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        columns: dict[str, Any] = {name: [now] * len(chunks) if name == "indexed_at" else
                                   [getattr(chunk, name) for chunk in chunks] for name in ROW_COLUMNS}
        if vectors is None:
            columns["vector"] = pa.nulls(len(chunks), pa.list_(pa.float32(), dim))
        else:
            flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
            columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, dim)
        return pa.table(columns, schema=schema)

    def resolve_session(self, given: str) -> str:
        """See :func:`resolve_session`."""
        return resolve_session(self._scan, given)

    def _scan(self, columns: Sequence[str], where: str | None = None) -> pa.Table:
        query = self.table.search()
        if where:
            query = query.where(where)
        return query.select(list(columns)).limit(None).to_arrow()

    def _fetch_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The BM25 documents of chunk ids (see :func:`lexical_documents`)."""
        return lexical_documents(self._scan, ids, int(self.table.count_rows()))

    def sync_lexical(self) -> int:
        """Index every row the BM25 segments lack (a crash between a write and its
        segment, a memory indexed under other settings, an older funes); returns how
        many were added.  The rows are read and indexed a page of whole sessions
        (about :data:`LEXICAL_PAGE` missing rows) at a time, each page committed as a
        segment, so a whole table's documents are never held at once."""
        if self.lexical.table_version == self.version:
            return 0
        self._known_ids = None  # what the table holds now, not what this process last wrote
        self.known_ids()
        table = self._scan(["id", "session_id"])
        ids = table.column("id").to_numpy(zero_copy_only=False).astype("<U16")
        missing = ~np.isin(ids, self.lexical.covered_ids())
        if not missing.any():
            self.lexical.mark_version(self.version)
            return 0
        missing_ids = ids[missing].tolist()
        if len(missing_ids) <= LEXICAL_PAGE:
            pages = [(missing_ids, None)]
        else:
            by_session: dict[str, list[str]] = {}
            for chunk_id, session in zip(missing_ids, table.column("session_id").filter(pa.array(missing)).to_pylist(),
                                         strict=True):
                by_session.setdefault(session, []).append(chunk_id)
            pages, page_ids, page_sessions = [], [], []
            for session, session_ids in by_session.items():
                page_ids += session_ids
                page_sessions.append(session)
                if len(page_ids) >= LEXICAL_PAGE:
                    pages.append((page_ids, page_sessions))
                    page_ids, page_sessions = [], []
            if page_ids:
                pages.append((page_ids, page_sessions))
        del table, ids
        for number, (page_ids, sessions) in enumerate(pages):
            if sessions is None:
                documents = self._fetch_texts(page_ids)
            else:  # whole sessions: every chunk's context is among their rows
                documents = documents_from_rows(self._scan(DOCUMENT_COLUMNS, sql_in("session_id", sessions)).to_pylist(),
                                                page_ids)
            written = [i for i in page_ids if i in documents]
            last = number == len(pages) - 1
            self.lexical.add(written, [documents[i] for i in written],
                             self.version if last else self.lexical.table_version, self._still_stored)
        return len(missing_ids)

    # ------------------------------------------------------------------ vectors
    def backlog(self, limit: int, *, tiers: Sequence[int] | None = None) -> pa.Table:
        """Up to ``limit`` rows still owed a vector (of ``tiers``, by default the memory's
        :attr:`dense_tiers`), in :meth:`backlog_pages` order, at once."""
        pages = list(self.backlog_pages(limit, tiers=tiers))
        if pages:
            return pa.concat_tables(pages)
        return pa.schema([self.table.schema.field(c) for c in BACKLOG_COLUMNS]).empty_table()

    def backlog_order(self, limit: int, *, tiers: Sequence[int] | None = None) -> pa.Array:
        """The ids of up to ``limit`` rows still owed a vector (of ``tiers``, by default
        the memory's :attr:`dense_tiers`): lowest tier first (what was said before tool
        calls before tool output), newest first within a tier.

        An Arrow array, not a list of str: a first index of a million chunks owes 700k
        vectors, held for as long as it embeds (as Python strings, 40 MB more).  The
        scan itself left the indexer 430 MB larger until what it freed was given back
        (:func:`return_freed_memory`)."""
        where = awaiting_vector_sql(self.dense_tiers if tiers is None else tiers)
        table = self._scan(["id", "tier", "ts"], where)
        if table.num_rows == 0:
            return pa.array([], pa.string())
        newest_first = np.empty(table.num_rows, dtype=np.float64)
        at = 0
        for batch in table.column("ts").chunks:  # a batch of str at a time, not all of them
            newest_first[at:at + len(batch)] = [-_ts_key(ts) for ts in batch.to_pylist()]
            at += len(batch)
        order = np.lexsort((newest_first, table.column("tier").to_numpy(zero_copy_only=False)))
        ids = table.column("id").take(order[:limit]).combine_chunks()
        del table
        return_freed_memory()
        return ids

    def backlog_pages(self, limit: int, *, tiers: Sequence[int] | None = None,
                      page: int = BACKLOG_PAGE) -> Iterator[pa.Table]:
        """The rows of :meth:`backlog_order` (:data:`BACKLOG_COLUMNS`), ``page`` at a
        time: only the ids of the whole backlog are held, never all its text (a first
        index leaves every row pending: a million rows' text is over half a GB)."""
        return self.rows_in_pages(self.backlog_order(limit, tiers=tiers), page=page)

    def rows_in_pages(self, ids: Sequence[str] | pa.Array, *, page: int = BACKLOG_PAGE) -> Iterator[pa.Table]:
        """:data:`BACKLOG_COLUMNS` of the rows ``ids``, in their order, ``page`` at a time."""
        for start in range(0, len(ids), page):
            wanted = ids[start:start + page]
            if isinstance(wanted, pa.Array):
                wanted = wanted.to_pylist()
            rows = self._scan(BACKLOG_COLUMNS, sql_in("id", wanted))
            position = {chunk_id: i for i, chunk_id in enumerate(wanted)}
            yield rows.take(np.argsort([position[i] for i in rows.column("id").to_pylist()], kind="stable"))

    @property
    def dense_tiers(self) -> tuple[int, ...]:
        """The tiers this memory gives vectors to (:func:`funes.embedding.dense_tiers`)."""
        return dense_tiers(decode_metadata(self.table.schema))

    @property
    def int8_tiers(self) -> tuple[int, ...]:
        """The tiers whose vectors CPU writers compute at int8 (:func:`funes.embedding.int8_tiers`)."""
        return int8_tiers(decode_metadata(self.table.schema))

    def embed_every_tier(self) -> None:
        """Stamp the memory to embed every tier from now on, whatever process writes
        to it (a metadata-only commit)."""
        if self.dense_tiers != EVERY_TIER:
            self.table.to_lance().update_schema_metadata({TIERS_KEY: EMBED_EVERY_TIER})
            self.table.checkout_latest()
            self.lexical.mark_version(self.version)

    def pending_count(self) -> int:
        """Rows still owed a vector under the memory's tier policy."""
        return int(self.table.count_rows(awaiting_vector_sql(self.dense_tiers)))

    def embedded_count(self) -> int:
        """Rows with a vector: from the memory's saved counts when they are of the table
        as it is (the backlog saves them page by page), else counted, reading the vector
        column of every row (1.2 s and +350 MB at 1M rows)."""
        saved = load_stats(self.location.state_dir, self._table_state(), self.version)
        if saved is not None:
            return saved.embedded
        count = int(self.table.count_rows("vector IS NOT NULL"))
        return_freed_memory()
        return count

    def stats(self) -> MemoryStats:
        """The memory's counts as this writer left it (:meth:`Memory.stats`: read back
        when saved for the table as it is)."""
        memory = Memory.open(self.location)
        stats = memory.stats()
        del memory  # its Lance session's caches, before what they freed is given back
        return_freed_memory()
        return stats

    def _table_state(self) -> str:
        return table_state(self.table.to_lance(), self.dense_tiers)

    def set_vectors(self, ids: Sequence[str], vectors: np.ndarray, *,
                    filled: Sequence[tuple[int, int]] | None = None) -> None:
        """Store ``vectors`` for the rows ``ids``, rows owed one.  ``filled``: each
        row's tier and text length; the counts saved of the table before are then
        saved of the table after (:meth:`MemoryStats.with_vectors`), so that no reader
        counts a million rows again for a page of vectors."""
        before = None
        if filled is not None:
            before = load_stats(self.location.state_dir, self._table_state(), self.version)
        self._index_ids()
        dim = self.table.schema.field("vector").type.list_size
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        data = pa.table({"id": pa.array(list(ids), pa.string()),
                         "vector": pa.FixedSizeListArray.from_arrays(flat, dim)})
        self.table.merge_insert("id").when_matched_update_all().execute(data)
        self._vectors_uncounted += len(ids)
        # Text did not change: the BM25 segments still cover the table.
        self.lexical.mark_version(self.version)
        if before is not None and filled is not None:
            try:
                after = before.with_vectors(filled)
            except ValueError:
                return  # not the rows the counts had pending: the next reader counts
            save_stats(self.location.state_dir, self._table_state(), after)

    def keep_indexes(self, *, vector_kind: bool = True) -> str | None:
        """Keep the table's indexes in step with its rows as they are stored and given
        vectors, and its fragments few (:meth:`_compact_small_fragments`, first: Lance
        remaps the indexes as it compacts).  The vector index: built once
        :data:`EXACT_INDEX_MIN_ROWS` rows have a vector, moved to IVF_PQ at
        :data:`VECTOR_INDEX_MIN_ROWS` (its partitions then kept near
        :data:`IVF_PARTITION_ROWS` vectors by each refresh); which it needs is looked at
        once this writer has stored :data:`INDEX_REFRESH_ROWS` vectors since it last
        looked (a page of the backlog, not a hook's turn: for a memory grown a few
        vectors at a time, `funes maintain` builds it).  A BTREE on each of
        :data:`SCALAR_INDEX_COLUMNS` once the table holds :data:`INDEX_REFRESH_ROWS` rows.
        Every index: rows it does not cover (new fragments, and fragments whose vectors
        were filled in since: Lance then drops them from the id BTREE and the vector
        index) folded into it once :data:`INDEX_REFRESH_ROWS` have gathered, the BTREEs
        before any work on the vector index (:meth:`_fold`).  Returns what it did
        (``compacted``, ``built IVF_FLAT``, ``built IVF_PQ``, ``built BTREE on session_id``,
        ``refreshed``, joined by ``, ``) or None.  Called by every writer after it stores
        rows or vectors; ``vector_kind=False`` (a writer stopping with Ctrl-C) leaves
        which vector index the memory needs for the next writer (an IVF_PQ build is a
        minute)."""
        done = []
        if self._compact_small_fragments():
            done.append("compacted")
        indexes = self._index_states()
        # Every recall reads its pool by id, and a page's merge drops each fragment it
        # touches from the id BTREE (its key): fold the BTREEs back first.  The
        # vector index's work can take seconds to a minute (an IVF_FLAT over the first
        # 4,096 vectors of a 1M-row memory: 16 s), and behind it every recall read those
        # fragments' ids flat (2.1-2.5 s a cold recall instead of 0.6 s; BENCHMARKS.md,
        # "Day zero", stop 36).
        folded = self._fold([state for state in indexes if state.columns != ("vector",)])
        vector = next((state for state in indexes if state.columns == ("vector",)), None)
        if vector_kind and not _kept_by_refreshes(vector) and self._vectors_uncounted >= INDEX_REFRESH_ROWS:
            self._vectors_uncounted = 0
            embedded = self.embedded_count()
            if self._vector_index_due(vector, embedded):
                done.append(f"built {self._build_vector_index(embedded)}")
                vector = None  # new: covers every row
        missing = self._missing_scalar_indexes(indexes)
        if missing and self.table.count_rows() >= INDEX_REFRESH_ROWS:
            self._build_scalar_indexes(missing)
            done.extend(f"built BTREE on {column}" for column in missing)
        if self._fold([vector] if vector is not None else []) or folded:
            done.append("refreshed")
        if done:
            return_freed_memory()
        return ", ".join(done) or None

    def _fold(self, indexes: Sequence[IndexState]) -> bool:
        """Fold the rows each of ``indexes`` does not cover into it, for those missing
        :data:`INDEX_REFRESH_ROWS` or more; True when any was."""
        stale = [state.name for state in indexes if state.uncovered_rows >= INDEX_REFRESH_ROWS]
        if not stale:
            return False
        self.table.to_lance().optimize.optimize_indices(index_names=stale)
        self.table.checkout_latest()
        self.lexical.mark_version(self.version)  # no text changed
        return True

    def _compact_small_fragments(self) -> bool:
        """Compact the table's small fragments (:data:`SMALL_FRAGMENT_ROWS`) once
        :data:`COMPACT_SMALL_FRAGMENTS` have gathered; True when it did.  Lance keeps
        the rows' order, so only runs of adjacent small fragments merge (one between
        large ones stays, and planning that costs the next writer a read of the
        manifest), and it remaps the indexes.  No text and no vector changes: the BM25 segments still cover the
        table (when they did), and its saved counts are those of the new state."""
        dataset = self.table.to_lance()
        small = sum(1 for fragment in dataset.get_fragments()
                    if fragment.metadata.physical_rows < SMALL_FRAGMENT_ROWS)
        if small < COMPACT_SMALL_FRAGMENTS:
            return False
        covered = self.lexical.table_version == self.version
        counts = load_stats(self.location.state_dir, self._table_state(), self.version)
        # Deletions alone would pick large fragments too (a forget): `funes maintain`'s work.
        metrics = dataset.optimize.compact_files(target_rows_per_fragment=SMALL_FRAGMENT_ROWS,
                                                 materialize_deletions=False)
        if not metrics.fragments_removed:
            return False
        self.table.checkout_latest()
        if covered:
            self.lexical.mark_version(self.version)
        if counts is not None:
            save_stats(self.location.state_dir, self._table_state(), counts)
        return True

    @staticmethod
    def _vector_index_due(current: IndexState | None, embedded: int) -> bool:
        """Whether the vector index is to be (re)built for ``embedded`` vectors: one is
        wanted (:func:`vector_index_kind`) and there is none, or one of another kind, or
        an IVF_PQ without :data:`IVF_PARTITION_ROWS` as its target (an older funes's,
        whose partitions Lance sizes by its own)."""
        wanted = vector_index_kind(embedded)
        if wanted is None or _kept_by_refreshes(current):
            return False
        return current is None or current.index_type != wanted or wanted == "IVF_PQ"

    @staticmethod
    def _missing_scalar_indexes(indexes: Sequence[IndexState]) -> list[str]:
        have = {state.columns for state in indexes}
        return [column for column in SCALAR_INDEX_COLUMNS if (column,) not in have]

    def _build_scalar_indexes(self, columns: Sequence[str]) -> None:
        from lancedb.index import BTree

        for column in columns:
            self.table.create_index(column, config=BTree(), replace=True)
        if "id" in columns:
            self._id_indexed = True
        self.lexical.mark_version(self.version)  # no text changed

    def _index_states(self) -> list[IndexState]:
        # describe_indices, not index_stats: that one serialises every centroid of a
        # vector index and logs a warning about it on stderr.
        dataset = self.table.to_lance()
        rows = dataset.count_rows()
        return [IndexState(index.name, tuple(index.field_names), index.index_type,
                           max(0, rows - index.num_rows_indexed), (index.details or {}).get("target_partition_size"))
                for index in dataset.describe_indices()]

    def _build_vector_index(self, embedded: int) -> str:
        """(Re)build the vector index for ``embedded`` rows with vectors: the kind
        :func:`vector_index_kind` names; returns that kind.

        Built by pylance, not lancedb's ``create_index``: on a 1M-row memory with 27k
        vectors the same IVF_PQ took 158 s (275 CPU s) through lancedb and 24-27 s
        (39-44 CPU s) through pylance, IVF_FLAT 9.9 s against 4.5 s, and at 300k rows
        (39k vectors) the IVF_PQ 42 s against 12 s, its searches as good (BENCHMARKS.md,
        "Day zero", stop 22).  A first index builds both while it embeds: that was
        minutes of both cores taken from embedding."""
        kind = vector_index_kind(embedded)
        options: dict[str, Any]
        if kind == "IVF_PQ":
            dim = self.table.schema.field("vector").type.list_size
            options = {"num_partitions": ivf_pq_partitions(embedded), "target_partition_size": IVF_PARTITION_ROWS,
                       "num_sub_vectors": max(1, dim // 8), "sample_rate": IVF_SAMPLE_RATE}
        else:
            options = {"num_partitions": EXACT_INDEX_PARTITIONS}
        self.table.to_lance().create_index("vector", str(kind), name="vector_idx", metric="cosine", replace=True,
                                           **options)
        self.table.checkout_latest()
        self.lexical.mark_version(self.version)  # no text changed
        return str(kind)

    def _index_ids(self) -> None:
        """A BTREE index on ``id`` before vectors are merged in: without one each merge
        on id reads every id of the table and hashes them (a first index, before any
        ``funes maintain``): 256 vectors into a 1M-row memory cost 4 s and 2.3-2.9 GB,
        with one 0.1-0.2 s and 0.5 GB (BENCHMARKS.md, "Indexing throughput and size").  Rows written
        or given vectors after it are outside it until :meth:`keep_indexes` folds them in."""
        if self._id_indexed:
            return
        if not any(list(i.columns) == ["id"] for i in self.table.list_indices()):
            self._build_scalar_indexes(["id"])
        self._id_indexed = True

    def replace_chunks(self, removed: Sequence[str], chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        """Delete the rows ``removed`` and store ``chunks`` (an id already stored is
        overwritten) in one commit: readers see the old rows or the new, never neither.
        The BM25 index is left for the caller to rebuild."""
        if chunks:
            data = self._arrow_rows(chunks, vectors)
            merge = self.table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            if removed:
                merge = merge.when_not_matched_by_source_delete(sql_in("id", removed))
            merge.execute(data, on_bad_vectors="null")
        elif removed:
            self.table.delete(sql_in("id", removed))
        self._known_ids = None

    def purge_history(self) -> None:
        """Rewrite every fragment holding deleted rows and delete all older versions,
        so no file of the table still holds a row the current version lacks."""
        import lance

        dataset = lance.dataset(self.location.table_uri, storage_options=self.location.storage_options or None)
        dataset.optimize.compact_files(materialize_deletions=True, materialize_deletions_threshold=0.0)
        dataset = lance.dataset(self.location.table_uri, storage_options=self.location.storage_options or None)
        # Safe under the writer lock: no other writer can have files in flight.
        dataset.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
        self.table.checkout_latest()
        self.lexical.mark_version(self.version)

    def rebuild_for_new_model(self, expected_identity: Mapping[str, str], dim: int) -> int:
        """Rewrite the table stamped with ``expected_identity``, every row kept with
        its text and provenance and its vector cleared for re-embedding.

        One overwrite commit: a crash leaves either the old table or the new one.
        Columns an older table lacks (a Rust funes memory, say) are filled with nulls."""
        old = self.table.to_arrow()
        # The tier policy is the user's choice, not the model's: it survives.  Every
        # vector is cleared, so the precisions are this funes's.
        policy = {k: v for k, v in decode_metadata(old.schema).items() if k == TIERS_KEY}
        schema = chunk_schema(dim, {**expected_identity, **chunking_metadata(), **precision_metadata(), **policy})
        columns = []
        for field_ in schema:
            if field_.name == "vector" or field_.name not in old.column_names:
                columns.append(pa.nulls(old.num_rows, field_.type))
            else:
                columns.append(old.column(field_.name).cast(field_.type))
        rows = pa.Table.from_arrays(columns, schema=schema)
        import lancedb

        db = lancedb.connect(self.location.uri, storage_options=self.location.storage_options or None,
                             session=_writer_session())
        self.table = db.create_table(TABLE_NAME, data=rows if rows.num_rows else None, schema=schema,
                                     mode="overwrite", on_bad_vectors="null")
        self._known_ids = None
        self._id_indexed = False  # an overwrite keeps no index
        documents = documents_from_rows(rows.select(list(DOCUMENT_COLUMNS)).to_pylist())
        self.lexical.rebuild(list(documents), list(documents.values()), self.version)
        return rows.num_rows

    # ------------------------------------------------------------------ maintenance
    def rebuild_lexical(self) -> int:
        """One BM25 segment over the whole table; returns the rows indexed."""
        rows = self._scan(DOCUMENT_COLUMNS)
        documents = documents_from_rows(rows.to_pylist())
        self.lexical.rebuild(list(documents), list(documents.values()), self.version)
        self._known_ids = set(rows.column("id").to_pylist())
        self._known_sessions = set(rows.column("session_id").unique().to_pylist())
        return rows.num_rows

    def maintain(self, *, keep_versions_for: timedelta = timedelta(hours=1)) -> dict[str, Any]:
        """Compact fragments, (re)build indexes, drop old versions, merge BM25 segments.

        Old versions are kept for ``keep_versions_for`` so readers that opened one a
        moment ago can finish."""
        started = time.monotonic()
        with warnings.catch_warnings():
            if not keep_versions_for:  # asked for explicitly: lancedb's warning says what the caller chose
                warnings.simplefilter("ignore", UserWarning)
            self.table.optimize(cleanup_older_than=keep_versions_for)
        self._build_scalar_indexes(self._missing_scalar_indexes(self._index_states()))
        embedded = int(self.table.count_rows("vector IS NOT NULL"))
        current = next((state for state in self._index_states() if state.columns == ("vector",)), None)
        vector_index = self._vector_index_due(current, embedded)
        if vector_index:
            self._build_vector_index(embedded)
        self.table.optimize()
        rows = self.rebuild_lexical()
        return {"seconds": round(time.monotonic() - started, 2), "rows": rows,
                "embedded": embedded, "vector_index_built": vector_index,
                "lexical_segments": len(self.lexical.segments)}


def _writer_session() -> Any:
    import lancedb

    return lancedb.Session(index_cache_size_bytes=WRITER_INDEX_CACHE_BYTES,
                           metadata_cache_size_bytes=WRITER_METADATA_CACHE_BYTES)


@contextmanager
def writer_lock(location: MemoryLocation, wait_s: float = 5.0) -> Iterator[None]:
    """The memory's single-writer lock; :class:`WriterBusyError` after ``wait_s``."""
    from filelock import FileLock, Timeout

    try:
        location.state_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(location.lock_path))
        lock.acquire(timeout=wait_s)
    except Timeout as exc:
        raise WriterBusyError(
            f"another funes process is writing {location.label} (lock {location.lock_path}); try again when it finishes"
        ) from exc
    except OSError as exc:
        raise FunesError(f"cannot write memory state in {location.state_dir}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        lock.release()


def _write_failure(location: MemoryLocation, error: BaseException, *, opening: bool) -> BaseException:
    """The one-line error a failed write of ``location`` means (``opening``: while the
    table and coverage were being opened), or ``error`` itself."""
    refused = refused_write(error)
    if refused is not None:
        # Lance commits atomically and coverage records a unit only after its rows: what
        # was committed before the failure stays readable and nothing is skipped next time.
        return FunesError(f"cannot write memory at {location.label}: {refused}; free some space and run "
                          "the command again (everything indexed before this is kept)")
    if not location.is_local:
        return RemoteError(f"cannot write memory at {location.label}: {_remote_failure(location, error)}")
    _, damage = inspect(location, deep=True)
    if damage.table_damaged:
        return damaged_error(location, damage)
    if opening and isinstance(error, OSError):  # permissions, a path that is a file: the system's own words
        return FunesError(f"cannot write memory at {location.label}: {error.strerror or error}")
    return error


def _remote_failure(location: MemoryLocation, error: BaseException) -> str:
    """Why an object store failed, short: Lance's errors run to a screenful of nested
    retries, so only their opening is kept."""
    endpoint = location.storage_options.get("aws_endpoint")
    detail = _first_line(error)
    detail = detail if len(detail) <= 200 else detail[:200] + "…"
    return f"the object store{f' at {endpoint}' if endpoint else ''} cannot be reached or read ({detail})"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _ts_key(ts: str | None) -> float:
    if not ts:
        return 0.0
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
