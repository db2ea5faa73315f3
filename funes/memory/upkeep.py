"""Index upkeep: the table's indexes and fragments kept in step with its rows.

A :class:`~funes.memory.writer.MemoryWriter` holds an :class:`IndexUpkeep` and asks it,
after each write, to compact the small fragments hooks leave, build the indexes the
table has grown into (a BTREE on each filtered column, a vector index of the kind its
vectors call for) and fold into each index the rows it does not cover yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from funes.memory.heap import return_freed_memory
from funes.memory.lexical import LexicalIndex
from funes.memory.location import MemoryLocation
from funes.memory.stats import load_stats, save_stats

# From this many embedded rows an IVF_PQ index (searched with a refine step:
# funes.memory.reader.REFINE_FACTOR) keeps a vector search in milliseconds.
VECTOR_INDEX_MIN_ROWS = 25_000
# Below VECTOR_INDEX_MIN_ROWS, from this many, an IVF_FLAT index of EXACT_INDEX_PARTITIONS
# partitions.  A search probes funes.memory.reader.NPROBES partitions, so it probes all
# of these and compares the query with every vector, as a flat search does: the same
# hits.  What it saves is the rows without a vector: a flat search reads the vector
# column of every row, and a first index leaves most rows without one for hours
# (BENCHMARKS.md, "Vector index upkeep").
EXACT_INDEX_MIN_ROWS = 4096
EXACT_INDEX_PARTITIONS = 8
# Rows an index does not cover (new fragments, rows given a vector since) that make
# folding them into it pay: until then a search reads them flat, and a merge on ``id``
# reads every id of the fragments the id index lost.
INDEX_REFRESH_ROWS = 4096
# The vectors an IVF_PQ partition holds, recorded in the index as its target size.
# Lance's refresh (``optimize_indices``) joins partitions under a quarter of the
# target and splits those over four times it; an index built without one gets
# Lance's own, and its refreshes join its partitions until each holds thousands of
# vectors and a search slows threefold (BENCHMARKS.md, "The backlog's writer").
IVF_PARTITION_ROWS = 1024
# Vectors per partition an IVF_PQ's k-means trains on (Lance's default: 256).  Its
# sample is the build's memory: 64 builds in about half the time and a quarter of
# the memory, its hits as near (BENCHMARKS.md, "The backlog's writer").
IVF_SAMPLE_RATE = 64
# Columns readers filter on, each given a BTREE once the table holds INDEX_REFRESH_ROWS
# rows: ``id`` (the ranking columns of a recall's pool, the merge that fills in
# vectors) and ``session_id`` (a recall's block splits and neighbours, ``get``, a
# session filter).  Without one each such read scans the whole column.
SCALAR_INDEX_COLUMNS = ("id", "session_id")
# Every Lance fragment costs each cold reader a file to open and a task in each scan.
# A hook stores a turn as a fragment or two of a few rows, so a memory the hooks keep
# grows fragments without bound, and a cold recall slows with them (BENCHMARKS.md,
# "Cold recall after the hooks' turns").  Once COMPACT_SMALL_FRAGMENTS fragments under
# SMALL_FRAGMENT_ROWS rows have gathered, a writer compacts them into fragments of up
# to that many rows.  A bulk index's flushes (funes.indexing.FLUSH_CHUNKS chunks) are
# not small: a larger fragment makes each later merge of vectors into it rewrite more
# (the whole vector column of each fragment a page touches).
SMALL_FRAGMENT_ROWS = 4096
COMPACT_SMALL_FRAGMENTS = 32


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



class TableWriter(Protocol):
    """What the upkeep needs of the writer that holds it
    (:class:`funes.memory.writer.MemoryWriter`), known by shape so that the upkeep
    does not import the writer back."""

    table: Any  # lancedb's table
    lexical: LexicalIndex
    location: MemoryLocation

    @property
    def version(self) -> int: ...

    def table_state(self) -> str: ...

    def embedded_count(self) -> int: ...

    def saved_embedded_count(self) -> int | None: ...


class IndexUpkeep:
    """The index upkeep of ``writer``'s table (:meth:`keep`, after each write;
    :meth:`build_due`, for `funes maintain`)."""

    def __init__(self, writer: TableWriter):
        self.writer = writer
        self.id_indexed = False  # a BTREE on ``id`` known to exist (:meth:`index_ids`)
        # Vectors the writer stored since the upkeep last counted them for the vector
        # index's kind: counting reads the vector column of every row, so a hook's few
        # vectors a turn never pay for it; a page of the backlog does.
        self.vectors_uncounted = 0

    def keep(self, *, vector_kind: bool = True) -> str | None:
        """Keep the table's indexes in step with its rows as they are stored and given
        vectors, and its fragments few (:meth:`_compact_small_fragments`, first: Lance
        remaps the indexes as it compacts).  The vector index: built once
        :data:`EXACT_INDEX_MIN_ROWS` rows have a vector, moved to IVF_PQ at
        :data:`VECTOR_INDEX_MIN_ROWS` (its partitions then kept near
        :data:`IVF_PARTITION_ROWS` vectors by each refresh); which it needs is looked at
        once this writer has stored :data:`INDEX_REFRESH_ROWS` vectors since it last
        looked (a page of the backlog), and after any write of vectors when the counts
        saved with the write say (a hook's turn never counts the table: a memory grown a
        few vectors at a time gets its index from its saved counts, else from `funes
        maintain`).  A BTREE on each of
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
        indexes = self.index_states()
        # Every recall reads its pool by id, and a page's merge drops each fragment it
        # touches from the id BTREE (its key): fold the BTREEs back first.  The vector
        # index's work can take seconds to a minute at a million rows, and until the
        # fold every recall reads those fragments' ids flat (BENCHMARKS.md, "The
        # backlog's writer").
        folded = self._fold([state for state in indexes if state.columns != ("vector",)])
        vector = next((state for state in indexes if state.columns == ("vector",)), None)
        if vector_kind and not _kept_by_refreshes(vector) and self.vectors_uncounted:
            if self.vectors_uncounted >= INDEX_REFRESH_ROWS:
                self.vectors_uncounted = 0
                embedded: int | None = self.writer.embedded_count()
            else:
                embedded = self.writer.saved_embedded_count()
            if embedded is not None and self._vector_index_due(vector, embedded):
                self.vectors_uncounted = 0
                done.append(f"built {self.build_vector_index(embedded)}")
                vector = None  # new: covers every row
        missing = self._missing_scalar_indexes(indexes)
        if missing and self.writer.table.count_rows() >= INDEX_REFRESH_ROWS:
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
        self.writer.table.to_lance().optimize.optimize_indices(index_names=stale)
        self.writer.table.checkout_latest()
        self.writer.lexical.mark_version(self.writer.version)  # no text changed
        return True

    def _compact_small_fragments(self) -> bool:
        """Compact the table's small fragments (:data:`SMALL_FRAGMENT_ROWS`) once
        :data:`COMPACT_SMALL_FRAGMENTS` have gathered; True when it did.  Lance keeps
        the rows' order, so only runs of adjacent small fragments merge (one between
        large ones stays, and planning that costs the next writer a read of the
        manifest), and it remaps the indexes.  No text and no vector changes: the BM25
        segments still cover the table (when they did), and its saved counts are those
        of the new state."""
        dataset = self.writer.table.to_lance()
        small = sum(1 for fragment in dataset.get_fragments()
                    if fragment.metadata.physical_rows < SMALL_FRAGMENT_ROWS)
        if small < COMPACT_SMALL_FRAGMENTS:
            return False
        covered = self.writer.lexical.table_version == self.writer.version
        counts = load_stats(self.writer.location.state_dir, self.writer.table_state(), self.writer.version)
        # Deletions alone would pick large fragments too (a forget): `funes maintain`'s work.
        metrics = dataset.optimize.compact_files(target_rows_per_fragment=SMALL_FRAGMENT_ROWS,
                                                 materialize_deletions=False)
        if not metrics.fragments_removed:
            return False
        self.writer.table.checkout_latest()
        if covered:
            self.writer.lexical.mark_version(self.writer.version)
        if counts is not None:
            save_stats(self.writer.location.state_dir, self.writer.table_state(), counts)
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
            self.writer.table.create_index(column, config=BTree(), replace=True)
        if "id" in columns:
            self.id_indexed = True
        self.writer.lexical.mark_version(self.writer.version)  # no text changed

    def index_states(self) -> list[IndexState]:
        # describe_indices, not index_stats: that one serialises every centroid of a
        # vector index and logs a warning about it on stderr.
        dataset = self.writer.table.to_lance()
        rows = dataset.count_rows()
        return [IndexState(index.name, tuple(index.field_names), index.index_type,
                           max(0, rows - index.num_rows_indexed), (index.details or {}).get("target_partition_size"))
                for index in dataset.describe_indices()]

    def build_vector_index(self, embedded: int) -> str:
        """(Re)build the vector index for ``embedded`` rows with vectors: the kind
        :func:`vector_index_kind` names; returns that kind.

        Built by pylance, not lancedb's ``create_index``: the same index, its searches
        as good, in a fraction of the time (BENCHMARKS.md, "The backlog's writer"),
        and a first index builds both kinds while it embeds, on the cores embedding
        needs."""
        kind = vector_index_kind(embedded)
        options: dict[str, Any]
        if kind == "IVF_PQ":
            dim = self.writer.table.schema.field("vector").type.list_size
            options = {"num_partitions": ivf_pq_partitions(embedded), "target_partition_size": IVF_PARTITION_ROWS,
                       "num_sub_vectors": max(1, dim // 8), "sample_rate": IVF_SAMPLE_RATE}
        else:
            options = {"num_partitions": EXACT_INDEX_PARTITIONS}
        self.writer.table.to_lance().create_index("vector", str(kind), name="vector_idx", metric="cosine", replace=True,
                                           **options)
        self.writer.table.checkout_latest()
        self.writer.lexical.mark_version(self.writer.version)  # no text changed
        return str(kind)

    def index_ids(self) -> None:
        """A BTREE index on ``id`` before vectors are merged in: without one each merge
        on id reads every id of the table and hashes them (a first index, before any
        ``funes maintain``), slower and gigabytes larger (BENCHMARKS.md, "The backlog's
        writer").  Rows written or given vectors after it are outside it until
        :meth:`keep` folds them in."""
        if self.id_indexed:
            return
        if not any(list(i.columns) == ["id"] for i in self.writer.table.list_indices()):
            self._build_scalar_indexes(["id"])
        self.id_indexed = True

    def build_due(self) -> tuple[int, bool]:
        """Build every index the table lacks: a BTREE on each of
        :data:`SCALAR_INDEX_COLUMNS`, and the vector index its vectors call for
        (:meth:`_vector_index_due`) whatever the writer stored.  Returns the rows with
        a vector and whether the vector index was (re)built."""
        self._build_scalar_indexes(self._missing_scalar_indexes(self.index_states()))
        embedded = int(self.writer.table.count_rows("vector IS NOT NULL"))
        current = next((state for state in self.index_states() if state.columns == ("vector",)), None)
        built = self._vector_index_due(current, embedded)
        if built:
            self.build_vector_index(embedded)
        return embedded, built
