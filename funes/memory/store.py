"""The memory: reading and writing the Lance ``chunks`` table and its BM25 index.

Readers (:class:`Memory`) use pylance directly: it imports in 0.3 s where lancedb
takes 1.0 s, which matters for a cold ``funes recall``.  The writer
(:class:`MemoryWriter`) uses lancedb's table API (merge-insert, optimize, index
builds) under a lock file, so there is one writer at a time while readers never
wait: Lance commits are atomic, and readers index in memory whatever rows the BM25
manifest does not cover yet.
"""

from __future__ import annotations

import errno
import sqlite3
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa

from funes.chunking import SPLIT_SIZE, Chunk, chunking_metadata
from funes.errors import FunesError, MemoryIncompatibleError, MemoryMissingError, WriterBusyError
from funes.memory.coverage import Coverage
from funes.memory.lexical import DOCUMENT, DOCUMENT_COLUMNS, LexicalIndex, documents_from_rows
from funes.memory.location import MemoryLocation
from funes.memory.schema import META_PREFIX, ROW_COLUMNS, TABLE_NAME, chunk_schema, decode_metadata

IDENTITY_KEYS = ("model_id", "revision", "dim")
# Below this many embedded rows brute force is fast enough; above it an IVF_PQ index
# (with a refine step: without one its recall@30 was 0.48 here) keeps search in ms.
VECTOR_INDEX_MIN_ROWS = 25_000
NPROBES = 20
REFINE_FACTOR = 5


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


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(_sql_str(v) for v in values)})"


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
        where = " OR ".join(
            f"(session_id = {_sql_str(sid)} AND seq >= {spans[sid][0] - DOCUMENT['context_turns']}"
            f" AND seq <= {spans[sid][1]})"
            for sid in sessions[start:start + 100]
        )
        context += scan(DOCUMENT_COLUMNS, where).to_pylist()
    return documents_from_rows(own + context, wanted)


# How the disk refuses a write, by errno and by the text Lance's Rust errors carry
# (they reach Python without an errno).
_REFUSED_WRITES = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                   errno.EFBIG: "a file grew past the size the system allows"}
_REFUSED_TEXT = {"No space left on device": errno.ENOSPC, "database or disk is full": errno.ENOSPC,
                 "Disk quota exceeded": errno.EDQUOT, "File too large": errno.EFBIG}


def refused_write(error: BaseException) -> str | None:
    """Why the file system refused a write, or None when ``error`` is something else."""
    code = getattr(error, "errno", None)
    if code not in _REFUSED_WRITES:
        code = next((c for text, c in _REFUSED_TEXT.items() if text in str(error)), None)
    return _REFUSED_WRITES.get(code) if code is not None else None


@dataclass
class MemoryStats:
    chunks: int
    sessions: int
    embedded: int
    per_harness: dict[str, dict[str, int]] = field(default_factory=dict)
    pending_by_tier: dict[int, int] = field(default_factory=dict)
    version: int = 0


class Memory:
    """A memory opened for reading."""

    def __init__(self, location: MemoryLocation, dataset: Any):
        self.location = location
        self.dataset = dataset
        self._lexical: LexicalIndex | None = None

    @classmethod
    def open(cls, location: MemoryLocation) -> Memory:
        import lance

        try:
            dataset = lance.dataset(location.table_uri, storage_options=location.storage_options or None)
        except (ValueError, FileNotFoundError, OSError) as exc:
            if "not found" in str(exc).lower() or "does not exist" in str(exc).lower() or isinstance(
                exc, FileNotFoundError
            ):
                raise MemoryMissingError(f"no memory at {location.label}: run funes index") from exc
            raise MemoryIncompatibleError(f"memory at {location.label} cannot be opened: {exc}") from exc
        except Exception as exc:  # lance raises plain errors for damaged manifests
            raise MemoryIncompatibleError(f"memory at {location.label} is damaged: {exc}") from exc
        return cls(location, dataset)

    # ------------------------------------------------------------------ facts
    @property
    def metadata(self) -> dict[str, str]:
        return decode_metadata(self.dataset.schema)

    @property
    def identity(self) -> dict[str, str]:
        return _identity_of(self.metadata)

    @property
    def version(self) -> int:
        return int(self.dataset.version)

    def count(self, where: str | None = None) -> int:
        return int(self.dataset.count_rows(filter=where))

    def require_rows(self) -> None:
        if self.count() == 0:
            raise MemoryMissingError(f"memory at {self.location.label} is empty: run funes index")

    def check_identity(self, expected: Mapping[str, str]) -> None:
        check_identity(self.location, self.metadata, expected)

    # ------------------------------------------------------------------ reading rows
    def scan(self, columns: Sequence[str], where: str | None = None) -> pa.Table:
        return self.dataset.to_table(columns=list(columns), filter=where)

    def rows(self, ids: Sequence[str], columns: Sequence[str] = ROW_COLUMNS) -> dict[str, dict[str, Any]]:
        """Rows by chunk id (missing ids are absent from the result)."""
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            batch = unique[start:start + 500]
            table = self.scan(columns, sql_in("id", batch))
            for row in table.to_pylist():
                out[row["id"]] = row
        return out

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
        turns: dict[str, set[str]] = {}
        for row in rows:
            if row["split_idx"] or len(row["text"] or "") >= SPLIT_SIZE // 2:
                turns.setdefault(row["session_id"], set()).add(row["turn_uuid"])
        counts: dict[tuple[str, str, int], int] = {}
        if not turns:
            return counts
        where = " OR ".join(f"(session_id = {_sql_str(sid)} AND {sql_in('turn_uuid', sorted(uuids))})"
                            for sid, uuids in turns.items())
        table = self.scan(["session_id", "turn_uuid", "block_idx"], where)
        for key in zip(*(table.column(c).to_pylist() for c in ("session_id", "turn_uuid", "block_idx")),
                       strict=True):
            key = (key[0], key[1], int(key[2] or 0))
            counts[key] = counts.get(key, 0) + 1
        return counts

    def session_rows(self, session_id: str, seq_min: int | None = None, seq_max: int | None = None,
                     columns: Sequence[str] = ROW_COLUMNS) -> list[dict[str, Any]]:
        where = f"session_id = {_sql_str(session_id)}"
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
            if index.table_version != self.version:
                covered = index.covered_ids()
                table_ids = self.scan(["id"]).column("id").to_numpy(zero_copy_only=False).astype("<U16")
                missing = np.setdiff1d(table_ids, covered, assume_unique=False)
                if len(missing):
                    texts = self.documents([str(m) for m in missing])
                    ids = [i for i in (str(m) for m in missing) if i in texts]
                    index = index.with_transient(ids, [texts[i] for i in ids])
            self._lexical = index
        return self._lexical

    def vector_search(self, vector: np.ndarray, k: int, where: str | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, cosine distance)`` of the ``k`` nearest embedded chunks."""
        nearest = {"column": "vector", "q": vector.astype(np.float32), "k": k, "metric": "cosine",
                   "nprobes": NPROBES, "refine_factor": REFINE_FACTOR}
        table = self.dataset.to_table(columns=["id", "_distance"], nearest=nearest, filter=where,
                                      prefilter=where is not None)
        ids = table.column("id").to_pylist()
        distances = table.column("_distance").to_pylist()
        return list(zip(ids, distances, strict=True))

    def stats(self) -> MemoryStats:
        import polars as pl

        table = self.scan(["session_id", "harness"], None)

        frame = pl.from_arrow(table)
        pending = pl.from_arrow(self.scan(["tier"], "vector IS NULL"))
        per_harness: dict[str, dict[str, int]] = {}
        if frame.height:
            grouped = frame.group_by("harness").agg(pl.len().alias("chunks"),
                                                    pl.col("session_id").n_unique().alias("sessions"))
            for row in grouped.iter_rows(named=True):
                per_harness[row["harness"] or ""] = {"chunks": row["chunks"], "sessions": row["sessions"]}
        pending_by_tier: dict[int, int] = {}
        if pending.height:
            for tier, count in pending.group_by("tier").agg(pl.len()).iter_rows():
                pending_by_tier[int(tier or 0)] = int(count)
        return MemoryStats(
            chunks=frame.height,
            sessions=frame.select(pl.struct("harness", "session_id").n_unique()).item() if frame.height else 0,
            embedded=self.count("vector IS NOT NULL"),
            per_harness=dict(sorted(per_harness.items())),
            pending_by_tier=dict(sorted(pending_by_tier.items())),
            version=self.version,
        )


class MemoryWriter:
    """The memory opened for writing, under its lock: use :meth:`open`."""

    def __init__(self, location: MemoryLocation, table: Any, coverage: Coverage):
        self.location = location
        self.table = table
        self.coverage = coverage
        self.lexical = LexicalIndex.open(location.lexical_dir)
        self._known_ids: set[str] | None = None

    @classmethod
    @contextmanager
    def open(cls, location: MemoryLocation, expected_identity: Mapping[str, str], *, dim: int,
             wait_s: float = 5.0, allow_other_model: bool = False) -> Iterator[MemoryWriter]:
        """Lock, then open or create the table stamped with ``expected_identity``.

        Another writer holding the lock past ``wait_s`` → :class:`WriterBusyError`; a
        table built with another model → :class:`MemoryIncompatibleError` unless
        ``allow_other_model`` (for :meth:`rebuild_for_new_model`)."""
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
            table = cls._open_table(location, expected_identity, dim, allow_other_model)
            writer = cls(location, table, Coverage(location.coverage_path))
            try:
                yield writer
            except (OSError, RuntimeError, sqlite3.Error) as exc:
                refused = refused_write(exc)
                if refused is None:
                    raise
                # Lance commits atomically: what was committed before the failure stays readable.
                raise FunesError(f"cannot write memory at {location.label}: {refused}; free some space and run "
                                 "the command again (everything indexed before this is kept)") from exc
            finally:
                writer.coverage.close()
        finally:
            lock.release()

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
            db = lancedb.connect(location.uri, storage_options=location.storage_options or None)
            if TABLE_NAME in db.list_tables().tables:
                table = db.open_table(TABLE_NAME)
                if not allow_other_model:
                    check_identity(location, decode_metadata(table.schema), expected_identity)
                return table
            return db.create_table(TABLE_NAME, schema=chunk_schema(dim, {**expected_identity, **chunking_metadata()}))
        except FunesError:
            raise
        except OSError as exc:
            raise FunesError(f"cannot write memory at {location.label}: {exc.strerror or exc}") from exc

    # ------------------------------------------------------------------ rows
    @property
    def version(self) -> int:
        return int(self.table.version)

    def known_ids(self) -> set[str]:
        if self._known_ids is None:
            ids = self.table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist()
            self._known_ids = set(ids)
        return self._known_ids

    def add_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray | None = None, *,
                   update_lexical: bool = True) -> list[str]:
        """Insert the chunks the memory lacks (merge on id: nothing is stored twice).

        Returns the ids inserted.  With ``update_lexical`` the new chunks also get a
        BM25 segment at once; bulk callers defer that to :meth:`sync_lexical`."""
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
        data = self._arrow_rows(rows, None if vectors is None else vectors[fresh])
        self.table.merge_insert("id").when_not_matched_insert_all().execute(data, on_bad_vectors="null")
        ids = [c.id for c in rows]
        known.update(ids)
        if update_lexical:
            documents = self._fetch_texts(ids)
            written = [i for i in ids if i in documents]
            self.lexical.add(written, [documents[i] for i in written], self.version, self._fetch_texts)
        return ids

    def _arrow_rows(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> pa.Table:
        schema = self.table.schema
        dim = schema.field("vector").type.list_size
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        columns: dict[str, Any] = {name: [] for name in ROW_COLUMNS}
        for chunk in chunks:
            for name in ROW_COLUMNS:
                if name == "indexed_at":
                    columns[name].append(now)
                else:
                    columns[name].append(getattr(chunk, name))
        if vectors is None:
            columns["vector"] = pa.nulls(len(chunks), pa.list_(pa.float32(), dim))
        else:
            flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
            columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, dim)
        return pa.table(columns, schema=schema)

    def _scan(self, columns: Sequence[str], where: str | None = None) -> pa.Table:
        query = self.table.search()
        if where:
            query = query.where(where)
        return query.select(list(columns)).limit(None).to_arrow()

    def _fetch_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The BM25 documents of chunk ids (see :func:`lexical_documents`)."""
        return lexical_documents(self._scan, ids, int(self.table.count_rows()))

    def sync_lexical(self) -> int:
        """Index every row the BM25 segments lack (after a bulk load or a crash);
        returns how many were added."""
        if self.lexical.table_version == self.version:
            return 0
        table_ids = set(self.known_ids())
        missing = sorted(table_ids.difference(self.lexical.covered_ids().tolist()))
        if missing:
            texts = self._fetch_texts(missing)
            ids = [i for i in missing if i in texts]
            self.lexical.add(ids, [texts[i] for i in ids], self.version, self._fetch_texts)
        else:
            self.lexical.mark_version(self.version)
        return len(missing)

    # ------------------------------------------------------------------ vectors
    def backlog(self, limit: int, *, tiers: Sequence[int] | None = None) -> pa.Table:
        """Up to ``limit`` rows still lacking a vector: lowest tier first (what was
        said before tool calls before tool output), newest first within a tier."""
        where = "vector IS NULL"
        if tiers:
            where += f" AND tier IN ({', '.join(str(int(t)) for t in tiers)})"
        table = self.table.search().where(where).select(["id", "text", "tier", "ts", "tool_name", "block_type"]).limit(None).to_arrow()
        if table.num_rows == 0:
            return table
        order = np.lexsort((np.array([-_ts_key(t) for t in table.column("ts").to_pylist()]),
                            table.column("tier").to_numpy(zero_copy_only=False)))
        return table.take(order[:limit])

    def pending_count(self) -> int:
        return int(self.table.count_rows("vector IS NULL"))

    def pending_chars(self) -> int:
        """Characters of text still lacking a vector (what embedding time follows)."""
        import pyarrow.compute as pc

        texts = self._scan(["text"], "vector IS NULL").column("text")
        return int(pc.sum(pc.utf8_length(texts)).as_py() or 0) if len(texts) else 0

    def set_vectors(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        dim = self.table.schema.field("vector").type.list_size
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
        data = pa.table({"id": pa.array(list(ids), pa.string()),
                         "vector": pa.FixedSizeListArray.from_arrays(flat, dim)})
        self.table.merge_insert("id").when_matched_update_all().execute(data)
        # Text did not change: the BM25 segments still cover the table.
        self.lexical.mark_version(self.version)

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
        schema = chunk_schema(dim, {**expected_identity, **chunking_metadata()})
        columns = []
        for field_ in schema:
            if field_.name == "vector" or field_.name not in old.column_names:
                columns.append(pa.nulls(old.num_rows, field_.type))
            else:
                columns.append(old.column(field_.name).cast(field_.type))
        rows = pa.Table.from_arrays(columns, schema=schema)
        import lancedb

        db = lancedb.connect(self.location.uri, storage_options=self.location.storage_options or None)
        self.table = db.create_table(TABLE_NAME, data=rows if rows.num_rows else None, schema=schema,
                                     mode="overwrite", on_bad_vectors="null")
        self._known_ids = None
        documents = documents_from_rows(rows.select(list(DOCUMENT_COLUMNS)).to_pylist())
        self.lexical.rebuild(list(documents), list(documents.values()), self.version)
        return rows.num_rows

    # ------------------------------------------------------------------ maintenance
    def maintain(self, *, keep_versions_for: timedelta = timedelta(hours=1)) -> dict[str, Any]:
        """Compact fragments, (re)build indexes, drop old versions, merge BM25 segments.

        Old versions are kept for ``keep_versions_for`` so readers that opened one a
        moment ago can finish."""
        started = time.monotonic()
        from lancedb.index import BTree

        with warnings.catch_warnings():
            if not keep_versions_for:  # asked for explicitly: lancedb's warning says what the caller chose
                warnings.simplefilter("ignore", UserWarning)
            self.table.optimize(cleanup_older_than=keep_versions_for)
        indexed = {tuple(i.columns) for i in self.table.list_indices()}
        for column in ("id", "session_id"):
            if (column,) not in indexed:
                self.table.create_index(column, config=BTree(), replace=True)
        embedded = int(self.table.count_rows("vector IS NOT NULL"))
        vector_index = False
        if embedded >= VECTOR_INDEX_MIN_ROWS and ("vector",) not in indexed:
            from lancedb.index import IvfPq

            partitions = max(16, int(np.sqrt(embedded)))
            dim = self.table.schema.field("vector").type.list_size
            self.table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                          num_sub_vectors=max(1, dim // 8)), replace=True)
            vector_index = True
        self.table.optimize()
        ids = self._scan(DOCUMENT_COLUMNS)
        documents = documents_from_rows(ids.to_pylist())
        self.lexical.rebuild(list(documents), list(documents.values()), self.version)
        self._known_ids = set(ids.column("id").to_pylist())
        return {"seconds": round(time.monotonic() - started, 2), "rows": ids.num_rows,
                "embedded": embedded, "vector_index_built": vector_index,
                "lexical_segments": len(self.lexical.segments)}


def _ts_key(ts: str | None) -> float:
    if not ts:
        return 0.0
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
