"""Writing the memory: the Lance ``chunks`` table and its BM25 index, under a lock.

:class:`MemoryWriter` uses lancedb's table API (merge-insert, optimize, index builds)
under a lock file (:func:`writer_lock`), so there is one writer at a time while
readers (:mod:`funes.memory.reader`) never wait.  It holds the table's index upkeep
(:class:`funes.memory.upkeep.IndexUpkeep`), run after each write.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa

from funes.chunking import Chunk, chunking_metadata
from funes.embedding import (
    EMBED_EVERY_TIER,
    EVERY_TIER,
    TIERS_KEY,
    awaiting_vector_sql,
    dense_tiers,
    input_metadata,
    int8_tiers,
    precision_metadata,
    results_read_calls,
)
from funes.errors import FunesError, MemoryMissingError, RemoteError, WriterBusyError, refused_write
from funes.memory.coverage import Coverage
from funes.memory.health import TableDamage, damaged_error, inspect, lost_versions
from funes.memory.heap import return_freed_memory
from funes.memory.documents import DOCUMENT_COLUMNS, document_rows, documents_from_rows
from funes.memory.lexical import LexicalIndex
from funes.memory.tokens import TermCounts
from funes.memory.location import MemoryLocation
from funes.memory.reader import Memory, check_identity, lexical_documents, read_call_heads, remote_failure, \
    resolve_session
from funes.memory.schema import META_PREFIX, ROW_COLUMNS, SCHEMA_VERSION, TABLE_NAME, chunk_schema, decode_metadata, \
    missing_fields
from funes.memory.sql import sql_in
from funes.memory.stats import MemoryStats, load_stats, save_stats, table_state
from funes.memory.upkeep import IndexUpkeep

# What a writer's Lance session may cache, of indexes and of manifests and file
# metadata.  lancedb's default session keeps every index version a writer opens, and
# each page of the backlog folds its vectors into new ones: unbounded, a writer grows
# by tens of MB a page, gigabytes over a first index (BENCHMARKS.md, "The backlog's
# writer").
WRITER_INDEX_CACHE_BYTES = 128 << 20
WRITER_METADATA_CACHE_BYTES = 64 << 20
# What the embedding backlog reads of a row, and how many rows it reads at a time.
BACKLOG_COLUMNS = ("id", "text", "tier", "ts", "tool_name", "block_type", "harness", "session_id", "seq", "block_idx",
                   "split_idx")
BACKLOG_PAGE = 4096
# Rows :meth:`MemoryWriter.sync_lexical` indexes per segment (whole sessions at a time).
LEXICAL_PAGE = 4096


class MemoryWriter:
    """The memory opened for writing, under its lock: use :meth:`open`."""

    def __init__(self, location: MemoryLocation, table: Any, coverage: Coverage):
        self.location = location
        self.table = table
        self.coverage = coverage
        self.lexical = LexicalIndex.open(location.lexical_dir)
        self._known_ids: set[str] | None = None
        self._known_sessions: set[str] = set()  # the session ids of the table, loaded with the ids
        self.upkeep = IndexUpkeep(self)

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
                                                                         **precision_metadata(), **input_metadata()}))
        except FunesError:
            raise
        except Exception as exc:  # noqa: BLE001 - lance and lancedb raise plain errors
            if not location.is_local and refused_write(exc) is None:
                raise RemoteError(f"cannot open memory at {location.label}: {remote_failure(location, exc)}") from exc
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
        return load_stats(self.location.state_dir, self.table_state(), self.version)

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
            save_stats(self.location.state_dir, self.table_state(), counts.with_rows(
                per_harness=Counter(c.harness or "" for c in rows), new_sessions=new_keys,
                embedded=int(with_vector.sum()), indexed_at=data.column("indexed_at")[0].as_py(),
                pending=[(c.tier, len(c.text or "")) for c, vector in zip(rows, with_vector, strict=True)
                         if not vector and c.tier in tiers]))
        self.upkeep.vectors_uncounted += 0 if vectors is None else len(rows)
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
        vectors, held for as long as it embeds (as Python strings, 40 MB more).  What
        the scan freed is given back (:func:`return_freed_memory`): the indexer would
        otherwise keep hundreds of MB it no longer uses."""
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

    @property
    def results_read_calls(self) -> bool:
        """Whether this memory embeds a tool result after the head of its call
        (:func:`funes.embedding.results_read_calls`)."""
        return results_read_calls(decode_metadata(self.table.schema))

    def call_heads(self, rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """What each tool result among ``rows`` is embedded with: the head of its call
        (:func:`funes.memory.reader.read_call_heads`) where the memory reads calls, else nothing."""
        return read_call_heads(self._scan, rows) if self.results_read_calls else {}

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

    def saved_embedded_count(self) -> int | None:
        """Rows with a vector, from the memory's saved counts when they are of the table
        as it is (every write saves them where it found them), else None: no scan."""
        saved = load_stats(self.location.state_dir, self.table_state(), self.version)
        return None if saved is None else saved.embedded

    def embedded_count(self) -> int:
        """Rows with a vector: from the memory's saved counts when they are of the table
        as it is (the backlog saves them page by page), else counted, reading the vector
        column of every row (1.2 s and +350 MB at 1M rows)."""
        saved = self.saved_embedded_count()
        if saved is not None:
            return saved
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

    def table_state(self) -> str:
        """The state of the table's rows its saved counts are kept under (:func:`funes.memory.stats.table_state`)."""
        return table_state(self.table.to_lance(), self.dense_tiers)

    def set_vectors(self, ids: Sequence[str], vectors: np.ndarray, *,
                    filled: Sequence[tuple[int, int]] | None = None) -> None:
        """Store ``vectors`` for the rows ``ids``, rows owed one.  ``filled``: each
        row's tier and text length; the counts saved of the table before are then
        saved of the table after (:meth:`MemoryStats.with_vectors`), so that no reader
        counts a million rows again for a page of vectors."""
        before = None
        if filled is not None:
            before = load_stats(self.location.state_dir, self.table_state(), self.version)
        self.upkeep.index_ids()
        dim = self.table.schema.field("vector").type.list_size
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        data = pa.table({"id": pa.array(list(ids), pa.string()),
                         "vector": pa.FixedSizeListArray.from_arrays(flat, dim)})
        self.table.merge_insert("id").when_matched_update_all().execute(data)
        self.upkeep.vectors_uncounted += len(ids)
        # Text did not change: the BM25 segments still cover the table.
        self.lexical.mark_version(self.version)
        if before is not None and filled is not None:
            try:
                after = before.with_vectors(filled)
            except ValueError:
                return  # not the rows the counts had pending: the next reader counts
            save_stats(self.location.state_dir, self.table_state(), after)

    def keep_indexes(self, *, vector_kind: bool = True) -> str | None:
        """Keep the table's indexes in step with the rows stored and given vectors, and
        its fragments few: :meth:`IndexUpkeep.keep`, called after every write."""
        return self.upkeep.keep(vector_kind=vector_kind)

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
        # vector is cleared, so the precisions and the embedding input are this funes's.
        policy = {k: v for k, v in decode_metadata(old.schema).items() if k == TIERS_KEY}
        schema = chunk_schema(dim, {**expected_identity, **chunking_metadata(), **precision_metadata(),
                                    **input_metadata(), **policy})
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
        self.upkeep.id_indexed = False  # an overwrite keeps no index
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
        embedded, vector_index = self.upkeep.build_due()
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
        return RemoteError(f"cannot write memory at {location.label}: {remote_failure(location, error)}")
    _, damage = inspect(location, deep=True)
    if damage.table_damaged:
        return damaged_error(location, damage)
    if opening and isinstance(error, OSError):  # permissions, a path that is a file: the system's own words
        return FunesError(f"cannot write memory at {location.label}: {error.strerror or error}")
    return error


def _ts_key(ts: str | None) -> float:
    if not ts:
        return 0.0
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
