"""What a memory holds, counted, and kept beside it so that it is counted once.

Counting reads whole columns: the sessions of every row, the text of every row
still owed a vector, the vector column.  At a million chunks that is 2.2 s and
~1 GB for every `funes status` (and every MCP ``status`` call), and a first index
leaves the memory in that state for hours, polled all along.  So the counts are
saved in the memory's state folder under the **state of the table they count**
(:func:`table_state`): the fragments and data files its manifest lists, and the
tiers it embeds.  Any commit that changes a row changes a data file, so counts are
never read back for rows they did not count; a commit that only builds or folds an
index keeps the files, so its counts still hold.  The writer that fills in a page
of vectors knows what it filled, and the writer that appends rows what it
appended: each saves the counts of the state it made (:meth:`MemoryStats.with_vectors`,
:meth:`MemoryStats.with_rows`) instead of leaving the next reader to count again.  A memory read with damaged fragments skipped is counted, never saved.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from funes.files import write_atomically

# Saved counts kept per memory: the newest few, so that a reader saving the counts of
# the version it opened does not push out those a writer just saved of the next one.
KEPT_STATS = 8
STATS_FOLDER = "stats"


@dataclass
class MemoryStats:
    chunks: int
    sessions: int
    embedded: int
    per_harness: dict[str, dict[str, int]] = field(default_factory=dict)
    pending_by_tier: dict[int, int] = field(default_factory=dict)
    pending_chars_by_tier: dict[int, int] = field(default_factory=dict)  # characters awaiting vectors
    last_indexed: str | None = None  # the newest row's indexed_at
    version: int = 0  # the table version counted (not saved: a state outlives its version)

    def with_vectors(self, filled: Iterable[tuple[int, int]]) -> MemoryStats:
        """These counts after rows owed a vector got one: ``filled`` gives each such
        row's tier and text length."""
        pending = dict(self.pending_by_tier)
        chars = dict(self.pending_chars_by_tier)
        count = 0
        for tier, length in filled:
            count += 1
            pending[tier] = pending.get(tier, 0) - 1
            chars[tier] = chars.get(tier, 0) - length
        if any(n < 0 for n in pending.values()) or any(n < 0 for n in chars.values()):
            raise ValueError("vectors filled in for rows these counts did not have pending")
        return replace(self, embedded=self.embedded + count,
                       pending_by_tier={t: n for t, n in pending.items() if n},
                       pending_chars_by_tier={t: chars[t] for t, n in pending.items() if n})


    def with_rows(self, *, per_harness: Mapping[str, int], new_sessions: Collection[tuple[str, str]],
                  embedded: int, pending: Iterable[tuple[int, int]], indexed_at: str) -> MemoryStats:
        """These counts after rows were appended: ``per_harness`` rows by harness, the
        (harness, session id) pairs new to the table, how many came with a vector, and
        each row owed one as its tier and text length."""
        harnesses = {harness: dict(counts) for harness, counts in self.per_harness.items()}
        for harness, rows in per_harness.items():
            harnesses.setdefault(harness, {"chunks": 0, "sessions": 0})["chunks"] += rows
        for harness, _ in new_sessions:
            harnesses.setdefault(harness, {"chunks": 0, "sessions": 0})["sessions"] += 1
        owed = dict(self.pending_by_tier)
        chars = dict(self.pending_chars_by_tier)
        for tier, length in pending:
            owed[tier] = owed.get(tier, 0) + 1
            chars[tier] = chars.get(tier, 0) + length
        return replace(self, chunks=self.chunks + sum(per_harness.values()),
                       sessions=self.sessions + len(new_sessions), embedded=self.embedded + embedded,
                       per_harness=dict(sorted(harnesses.items())), pending_by_tier=dict(sorted(owed.items())),
                       pending_chars_by_tier=dict(sorted(chars.items())),
                       last_indexed=max(filter(None, (self.last_indexed, indexed_at)), default=None))


def table_state(dataset: Any, dense_tiers: Iterable[int]) -> str:
    """A digest of what the rows of ``dataset`` (a ``lance.LanceDataset``) are: each
    fragment's id, rows, deletions and data files, and the tiers the memory embeds
    (which rows count as pending).  Data file names are random and never reused, so a
    version number that a lost manifest let be reused does not collide.  5 ms at a
    million rows (the manifest is already read)."""
    digest = hashlib.sha256(repr(tuple(dense_tiers)).encode())
    for fragment in dataset.get_fragments():
        meta = fragment.metadata
        digest.update(repr((fragment.fragment_id, meta.physical_rows, meta.deletion_file,
                            [data.path for data in meta.files])).encode())
    return digest.hexdigest()[:32]


def load_stats(state_dir: Path, state: str, version: int) -> MemoryStats | None:
    """The counts saved for ``state``, or None (never saved, pushed out, unreadable)."""
    try:
        saved = json.loads((state_dir / STATS_FOLDER / f"{state}.json").read_text(encoding="utf-8"))
        return MemoryStats(
            chunks=int(saved["chunks"]), sessions=int(saved["sessions"]), embedded=int(saved["embedded"]),
            per_harness={h: {k: int(n) for k, n in counts.items()} for h, counts in saved["per_harness"].items()},
            pending_by_tier={int(t): int(n) for t, n in saved["pending_by_tier"].items()},
            pending_chars_by_tier={int(t): int(n) for t, n in saved["pending_chars_by_tier"].items()},
            last_indexed=saved["last_indexed"], version=version)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # a count saved by another funes, or cut short: count again


def save_stats(state_dir: Path, state: str, stats: MemoryStats) -> None:
    """Save ``stats`` as the counts of ``state`` (atomically: a reader finds the whole
    file or none) and drop all but the newest :data:`KEPT_STATS`.  Only where the
    memory's state folder exists (a reader never creates one), and a folder that
    refuses the write only means counting again next time."""
    if not state_dir.is_dir():
        return
    folder = state_dir / STATS_FOLDER
    record = asdict(stats)
    del record["version"]
    try:
        folder.mkdir(exist_ok=True)
        write_atomically(folder / f"{state}.json", json.dumps(record), durable=False)
        saved = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in saved[KEPT_STATS:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
