"""Reading the memory: the Lance ``chunks`` table and its BM25 index, for recall.

:class:`Memory` reads with pylance directly: it imports in a fraction of lancedb's
time, which matters for a cold ``funes recall``.  Readers never wait on the writer
(:mod:`funes.memory.writer`): Lance commits are atomic, and a reader indexes in memory
whatever rows the BM25 manifest does not cover yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from funes.chunking import SPLIT_SIZE, chunk_id
from funes.embedding import awaiting_vector_sql, dense_tiers, int8_tiers, results_read_calls
from funes.errors import MemoryIncompatibleError, MemoryMissingError, RemoteError, UsageError
from funes.memory.health import TableDamage, damaged_fragments, intact_fragments, lost_versions, open_newest_readable
from funes.memory.heap import return_freed_memory
from funes.memory.documents import DOCUMENT, DOCUMENT_COLUMNS, call_heads, documents_from_rows, results_of_calls
from funes.memory.lexical import LexicalIndex
from funes.memory.location import MemoryLocation
from funes.memory.schema import META_PREFIX, ROW_COLUMNS, decode_metadata, missing_fields
from funes.memory.sql import quote, spans_sql, sql_in, turns_sql
from funes.memory.stats import MemoryStats, load_stats, save_stats, table_state

_T = TypeVar("_T")
# The metadata that names the model a memory's vectors were made with.
IDENTITY_KEYS = ("model_id", "revision", "dim")
# How a vector search reads the index the writer keeps (funes.memory.upkeep): the
# partitions it probes (all of an exact IVF_FLAT's) and how many candidates per hit
# an IVF_PQ's search compares exactly (without that step its hits are far from the
# exact search's).  On 100k real vectors these find 99 % of the exact top 10 and 97.5 %
# of the top 100; cheaper settings save 2–3 ms and lose far more of the pool
# (BENCHMARKS.md, "Vector search").
NPROBES = 20
REFINE_FACTOR = 5
# A memory whose vectors have no index yet (under funes.memory.upkeep's
# EXACT_INDEX_MIN_ROWS, or grown by hooks) is searched flat.  Up to this many embedded
# rows a reader keeps them in memory (1.5 KB a row) and compares the query with numpy:
# about 1 ms a search where Lance's flat search reads the vector column again each time
# (about 20 ms at 3k rows).
FLAT_CACHE_ROWS = 8192
# How far ahead a count of the whole table reads (Lance's default reads 16 batches of
# several fragments at once): reading one batch ahead halves a count's peak memory
# at a million rows for about the same time (it is counted once per state of the
# rows: funes/memory/stats.py).
COUNT_READAHEAD = {"batch_readahead": 1, "fragment_readahead": 1}
# Every hit prints its session's first 8 characters: that much names a session.
MIN_SESSION_PREFIX = 8


def identity_of(metadata: Mapping[str, str]) -> dict[str, str]:
    """The model ``metadata`` (a table's, or the one this funes stamps) names."""
    return {key: metadata.get(f"{META_PREFIX}embedding.{key}", "") for key in IDENTITY_KEYS}


def check_identity(location: MemoryLocation, stored: Mapping[str, str], expected: Mapping[str, str]) -> None:
    have, want = identity_of(stored), identity_of(expected)
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


def session_spans(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """``{session_id: (lowest seq, highest seq)}`` of ``rows``."""
    spans: dict[str, tuple[int, int]] = {}
    for row in rows:
        seq = int(row["seq"] or 0)
        low, high = spans.get(row["session_id"], (seq, seq))
        spans[row["session_id"]] = (min(low, seq), max(high, seq))
    return spans


def read_call_heads(scan: Any, rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The head of the call behind each tool result among ``rows`` (with
    :data:`DOCUMENT_COLUMNS`), as its BM25 document carries it
    (:func:`funes.memory.documents.call_heads`), read through ``scan(columns, where)
    -> pa.Table``: one read of the first pieces of the calls in reach of them."""
    results = [dict(row) for row in rows if row.get("block_type") == "tool_result"]
    if not results:
        return {}
    spans = session_spans(results)
    reach = DOCUMENT["context_turns"]
    calls = scan(DOCUMENT_COLUMNS, f"({spans_sql({sid: (low - reach, high) for sid, (low, high) in spans.items()})})"
                 " AND block_type = 'tool_use' AND split_idx = 0").to_pylist()
    return call_heads(results, calls)


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
    spans = session_spans(own)
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
        self._damage_lock = threading.Lock()
        self._lexical: LexicalIndex | None = None
        self._absent: dict[str, pa.Field] | None = None  # columns of our schema the table lacks
        self._vector_index: str | None = None  # "" when the table has none
        self._flat: tuple[list[str], np.ndarray] | None | bool = False  # False: not read yet; None: too many
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
                raise RemoteError(f"cannot read memory at {location.label}: {remote_failure(location, exc)}") from exc
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
        """``read()``, again without the damaged fragments when it fails on them.  Reads
        may run on two threads (a recall's two retrievers): the damage is looked for
        by one at a time, and a read that failed while another thread's check found
        damage retries without looking again."""
        skipped = self._intact
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - re-raised unless the memory is found damaged
            if not self.location.is_local:
                raise RemoteError(f"cannot read memory at {self.location.label}: "
                                  f"{remote_failure(self.location, exc)}") from exc
            with self._damage_lock:
                if self._intact is skipped and not self._skip_damaged():
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
        return identity_of(self.metadata)

    @property
    def dense_tiers(self) -> tuple[int, ...]:
        """The tiers this memory gives vectors to (:func:`funes.embedding.dense_tiers`)."""
        return dense_tiers(self.metadata)

    @property
    def int8_tiers(self) -> tuple[int, ...]:
        """The tiers whose vectors CPU writers compute at int8 (:func:`funes.embedding.int8_tiers`)."""
        return int8_tiers(self.metadata)

    @property
    def results_read_calls(self) -> bool:
        """Whether writers embed a tool result after the head of its call
        (:func:`funes.embedding.results_read_calls`)."""
        return results_read_calls(self.metadata)

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
        hundreds of rows a recall fuses costs more still (BENCHMARKS.md, "A cold
        recall's path").  ``_take_rows`` is pylance's (unstable) take by row id,
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

    def call_heads(self, rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """The head of the call behind each tool result among ``rows``
        (:func:`read_call_heads`)."""
        return read_call_heads(self.scan, rows)

    def call_results(self, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
        """The first piece of the result of each tool call among ``rows`` (``{call
        chunk id: row}``, with :data:`DOCUMENT_COLUMNS` and ``columns``), paired by
        :func:`funes.memory.documents.results_of_calls`, keyed by each row's id (a
        later piece of a long call stands for its call): one read of the first pieces
        of the tool traffic in reach of them.  A call with no result is absent."""
        calls = [row for row in rows if row.get("block_type") == "tool_use"]
        if not calls:
            return {}
        spans = session_spans(calls)
        reach = DOCUMENT["context_turns"]
        traffic = self.scan(list(dict.fromkeys([*DOCUMENT_COLUMNS, *columns])),
                            f"({spans_sql({sid: (low - reach, high + reach) for sid, (low, high) in spans.items()})})"
                            " AND block_type IN ('tool_use', 'tool_result') AND split_idx = 0").to_pylist()
        pairs = results_of_calls(traffic)
        first_piece = {(row["session_id"], row["seq"], row["block_idx"]): row["id"] for row in traffic
                       if row["block_type"] == "tool_use"}
        out = {}
        for row in calls:  # a hit on a later piece of a long call is its block's hit
            result = pairs.get(first_piece.get((row["session_id"], row["seq"], row["block_idx"])))
            if result is not None:
                out[row["id"]] = result
        return out

    def split_counts(self, rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, int], int]:
        """How many chunks each block of ``rows`` that can have more than one has,
        keyed by (session_id, turn_uuid, block_idx); a block not in the result is its
        one chunk.  Only blocks that can have more than one chunk are looked up: a
        first chunk shorter than half a split is its whole block (a split is cut in the
        second half of its window).

        Read as three IN lists (sessions, turns, block indexes), whose superset is
        cut to the exact blocks here: one OR'd condition per block costs a table
        without scalar indexes (a first index) twice the CPU.  Cut in Python, not by
        an Arrow mask: ``pa.array`` imports numpy.ma, 0.05–0.1 s of a cold recall."""
        blocks = {(row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0)) for row in rows
                  if row["split_idx"] or len(row["text"] or "") >= SPLIT_SIZE // 2}
        if not blocks:
            return {}
        where = " AND ".join((sql_in("session_id", sorted({sid for sid, _, _ in blocks})),
                              sql_in("turn_uuid", sorted({turn for _, turn, _ in blocks})),
                              f"block_idx IN ({', '.join(str(b) for b in sorted({b for _, _, b in blocks}))})"))
        table = self.scan(["session_id", "turn_uuid", "block_idx"], where)
        counts: dict[tuple[str, str, int], int] = {}
        for session, turn, block in zip(*(table[c].to_pylist() for c in table.column_names), strict=True):
            key = (session, turn, int(block or 0))
            if key in blocks:
                counts[key] = counts.get(key, 0) + 1
        return counts

    def block_splits(self, wanted: Mapping[tuple[str, str, int], Iterable[int]],
                     ) -> dict[tuple[str, str, int], dict[int, tuple[int, str]]]:
        """The ``(char_start, text)`` of the asked splits of each block (``{(session_id,
        turn_uuid, block_idx): split indexes}``), by split index, read by their chunk
        ids (:func:`funes.chunking.chunk_id`, the ``id`` index): a split a block does
        not have is absent."""
        ids = {chunk_id(*block, split): (block, split) for block, splits in wanted.items() for split in splits}
        out: dict[tuple[str, str, int], dict[int, tuple[int, str]]] = {}
        for row in self.rows(list(ids), ("id", "char_start", "text")).values():
            block, split = ids[row["id"]]
            out.setdefault(block, {})[split] = (int(row["char_start"] or 0), row["text"] or "")
        return out

    def resolve_session(self, given: str) -> str:
        """See :func:`resolve_session`."""
        return resolve_session(self.scan, given)

    def turn_rows(self, seqs: Mapping[str, Iterable[int]], columns: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The first chunk of every block of the turns at ``seqs`` (``{session_id:
        seqs}``), each session's in session order, read in one scan (:func:`turns_sql`)."""
        if not seqs:
            return {}
        out: dict[str, list[dict[str, Any]]] = {sid: [] for sid in seqs}
        where = turns_sql({sid: list(wanted) for sid, wanted in seqs.items()})
        for row in self.scan(list(dict.fromkeys(["session_id", *columns])), where).to_pylist():
            out[row["session_id"]].append(row)
        for rows in out.values():
            rows.sort(key=lambda r: (r["seq"], r["block_idx"]))
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
        return [(row["id"], distance) for row, distance in self.nearest_rows(vector, k, where, ("id",))]

    def nearest_rows(self, vector: np.ndarray, k: int, where: str | None = None,
                     columns: Sequence[str] = ("id",)) -> list[tuple[dict[str, Any], float]]:
        """The ``k`` nearest embedded chunks, nearest first, as ``(row, cosine
        distance)``: each row holds ``columns`` and, when more than ``id`` is asked,
        its ``_rowid`` (for :meth:`rows_at`).  Read with the search where Lance
        searches (a projection costs about a millisecond where a second read by id
        costs six at 100k); after a search here (numpy), by id."""
        query = np.ascontiguousarray(vector, dtype=np.float32)
        # An Arrow array, not the ndarray: Lance converts an ndarray with pyarrow's
        # from_pandas, which imports numpy.ma (0.05–0.1 s of a cold recall).
        as_arrow = pa.Array.from_buffers(pa.float32(), len(query), [None, pa.py_buffer(query)])
        nearest = {"column": "vector", "q": as_arrow, "k": k, "metric": "cosine", "nprobes": NPROBES}
        if self._vector_index_type() == "IVF_PQ":  # an IVF_FLAT's distances are exact already
            nearest["refine_factor"] = REFINE_FACTOR
        columns = list(dict.fromkeys(["id", *columns]))

        def with_rows(found: list[tuple[str, float]]) -> list[tuple[dict[str, Any], float]]:
            if columns == ["id"]:
                return [({"id": chunk}, distance) for chunk, distance in found]
            rows = self.rows([chunk for chunk, _ in found], columns, row_ids=True)
            return [(rows[chunk], distance) for chunk, distance in found]

        def search() -> list[tuple[dict[str, Any], float]]:
            if self._intact is not None:  # Lance searches no subset of fragments: exact search here
                ids, matrix = self._embedded_rows(where)
                return with_rows(_nearest(ids, _unit_rows(matrix), query, k))
            condition = where
            if not self._has_vector_index():
                if where is None and (flat := self._flat_vectors()) is not None:
                    return with_rows(_nearest(*flat, query, k))
                # A flat search (a first index, vectors still filling in): only rows with a
                # vector are compared, and a table with none answers nothing.
                condition = "vector IS NOT NULL" + (f" AND ({where})" if where else "")
            table = self._with_absent(columns, lambda present: self.dataset.to_table(
                columns=[*present, "_distance"], nearest=nearest, filter=condition, prefilter=condition is not None,
                with_row_id=True), extra=["_distance", "_rowid"])
            return [(row, row.pop("_distance")) for row in table.to_pylist()]

        return self._read(search)

    def _has_vector_index(self) -> bool:
        return self._vector_index_type() is not None

    def _vector_index_type(self) -> str | None:
        """The kind of the table's vector index (``IVF_PQ``, ``IVF_FLAT``), or None."""
        if self._vector_index is None:
            self._vector_index = next((index.index_type for index in self.dataset.describe_indices()
                                       if "vector" in index.field_names), "")
        return self._vector_index or None

    def _flat_vectors(self) -> tuple[list[str], np.ndarray] | None:
        """Every embedded row's id and unit vector, read once for this version; None
        when there are more than :data:`FLAT_CACHE_ROWS`."""
        if self._flat is False:
            ids, matrix = self._embedded_rows(None, limit=FLAT_CACHE_ROWS + 1)
            self._flat = (ids, _unit_rows(matrix)) if len(ids) <= FLAT_CACHE_ROWS else None
        return self._flat or None

    def _embedded_rows(self, where: str | None, limit: int | None = None) -> tuple[list[str], np.ndarray]:
        """The id and vector of each row ``where`` keeps that has a vector."""
        embedded = "vector IS NOT NULL" + (f" AND ({where})" if where else "")
        table = self._scanner(columns=["id", "vector"], filter=embedded, limit=limit).to_table()
        dim = table.schema.field("vector").type.list_size
        matrix = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        return table.column("id").to_pylist(), matrix

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


def remote_failure(location: MemoryLocation, error: BaseException) -> str:
    """Why an object store failed, short: Lance's errors run to a screenful of nested
    retries, so only their opening is kept."""
    endpoint = location.storage_options.get("aws_endpoint")
    detail = _first_line(error)
    detail = detail if len(detail) <= 200 else detail[:200] + "…"
    return f"the object store{f' at {endpoint}' if endpoint else ''} cannot be reached or read ({detail})"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def _unit_query(query: np.ndarray) -> np.ndarray:
    return query / max(float(np.linalg.norm(query)), 1e-12)


def cosines(query: np.ndarray, vectors: Mapping[str, Sequence[float] | None]) -> dict[str, float]:
    """``query``'s cosine to each chunk of ``vectors`` that has one (a row not
    embedded, or still owed its vector, holds None), as the vector search measures
    it: recall scores a BM25 candidate the search left out by it."""
    held = [(chunk, vector) for chunk, vector in vectors.items() if vector is not None]
    if not held:
        return {}
    similarity = _unit_rows(np.asarray([vector for _, vector in held], dtype=np.float32)) @ _unit_query(query)
    return {chunk: float(value) for (chunk, _), value in zip(held, similarity, strict=True)}


def _nearest(ids: list[str], unit: np.ndarray, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """``(id, cosine distance)`` of the ``k`` rows of ``unit`` (unit vectors, one per
    id) nearest ``query``."""
    if not ids:
        return []
    distances = 1.0 - unit @ _unit_query(query)
    order = np.argsort(distances, kind="stable")[:k]
    return [(ids[i], float(distances[i])) for i in order]
