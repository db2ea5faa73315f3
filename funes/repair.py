"""Repairing a damaged memory: service first, then whatever the transcripts still hold.

The memory outlives the transcripts agents delete, so a damaged file must not cost the
user the whole memory.  :func:`repair`, under the writer lock:

1. sets aside the manifests that cannot be read, so the table reads as of its newest
   intact version, and commits a version without the fragments that cannot be read
   (every other row keeps its vector and indexes);
2. finds the sessions that lost chunks: those holding fewer rows than coverage recorded
   when they were last indexed (coverage keeps each unit's path), and re-indexes those
   whose transcripts still exist (chunk ids are stable, so only what is missing is
   stored again), then embeds what lacks a vector;
3. rebuilds the BM25 index from the table, and reports what could not be recovered:
   exactly (the chunk ids the BM25 index held that the table no longer has) when the
   index was readable, with the sessions whose transcripts are gone or no longer hold
   their chunks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from funes.errors import MemoryMissingError
from funes.indexing import Progress, TextEmbedder, embed_backlog, index_units
from funes.memory.health import TableDamage, drop_fragments, inspect, manifests, set_aside
from funes.memory.lexical import MANIFEST, LexicalIndex
from funes.memory.location import MemoryLocation
from funes.memory.writer import MemoryWriter, writer_lock


@dataclass
class RepairReport:
    damage: TableDamage  # what was found
    set_aside: Path | None = None  # where unreadable files were moved
    version: int | None = None  # the table's version after the repair
    reindexed: list[str] = field(default_factory=list)  # session keys parsed again
    restored: int = 0  # chunks stored again from transcripts
    embedded: int = 0
    lost: dict[str, int] = field(default_factory=dict)  # session key → chunks not recovered
    lost_total: int = 0  # chunks not recovered, named or not
    exact: bool = True  # lost_total counted by id (the BM25 index was readable)

    def lines(self, label: str) -> list[str]:
        if not self.damage:
            return [f"memory at {label} is intact: nothing to repair"]
        out = [f"memory at {label} was damaged: {self.damage.describe()}"]
        done = []
        if self.damage.unreadable_manifests:
            done.append(f"read as of version {self.damage.version}")
        if self.damage.fragments:
            done.append(f"dropped {len(self.damage.fragments)} unreadable fragment(s)")
        if self.set_aside is not None:
            done.append(f"unreadable files moved to {self.set_aside}")
        done.append(f"BM25 index rebuilt; the table is at version {self.version}")
        out.append("repaired: " + "; ".join(done))
        if self.reindexed:
            out.append(f"re-indexed {len(self.reindexed)} session(s) from their transcripts: {self.restored} chunk(s)"
                       f" restored, {self.embedded} embedded")
        elif self.embedded:
            out.append(f"embedded {self.embedded} chunk(s) whose vectors the lost version(s) held")
        if self.lost_total:
            named = ", ".join(f"{key} ({count})" for key, count in sorted(self.lost.items()))
            unnamed = self.lost_total - sum(self.lost.values())
            where = named + (f"{', ' if named else ''}{unnamed} in sessions this machine has no transcript of"
                             if unnamed > 0 else "")
            out.append(f"could not recover {'' if self.exact else 'at least '}{self.lost_total} chunk(s): {where}")
        else:
            out.append("nothing was lost: every chunk is back")
        return out


def repair(location: MemoryLocation, identity: dict[str, str], dim: int, *,
           embedder: Callable[[], TextEmbedder], progress: Progress) -> RepairReport:
    """Restore ``location`` (see the module docstring); ``embedder`` is called only when
    chunks need vectors."""
    from funes.discovery import discover

    with writer_lock(location):
        dataset, damage = inspect(location, deep=True)
        if dataset is None and not damage.unreadable_manifests:
            raise MemoryMissingError(f"no memory at {location.label}: run funes index")
        report = RepairReport(damage)
        if not damage:
            return report
        known = LexicalIndex.open(location.lexical_dir)
        known_ids = set(known.covered_ids().tolist())
        report.exact = known.problem is None and bool(known_ids)

        aside_dir = location.state_dir / "damaged" / time.strftime("%Y%m%dT%H%M%S")
        # Rebuilt below from the table; the writer must not take it for the table's state.
        (location.lexical_dir / MANIFEST).unlink(missing_ok=True)
        aside = list(damage.unreadable_manifests)
        if dataset is None:  # no version opens: start the table again from the transcripts
            aside += [path for _, path in manifests(location)]
        if aside:
            set_aside(aside, aside_dir)
            report.set_aside = aside_dir
        if damage.fragments:
            drop_fragments(location, damage.fragments)

        with MemoryWriter.open_locked(location, identity, dim=dim) as writer:
            expected = writer.coverage.states()
            before = writer.chunks_per_session()
            short = {key: state for key, state in expected.items()
                     if state.signature is not None and before.get(key, 0) < state.chunks}
            units = _units_still_there(short, discover)
            writer.coverage.mark_stale([unit.key for unit in units])
            indexed = index_units(writer, units, progress=progress)
            report.reindexed = sorted(unit.key for unit in units)
            report.restored = indexed.chunks_added
            if writer.pending_count():
                report.embedded = embed_backlog(writer, embedder(), progress=progress)
            writer.rebuild_lexical()
            report.version = writer.version
            after = writer.chunks_per_session()
            states = writer.coverage.states()
            table_ids = writer.known_ids()
        reindexed = set(report.reindexed)
        for key, state in short.items():
            # A transcript parsed again defines what the session holds now; one that is gone, what it held.
            wanted = states[key].chunks if key in reindexed and key in states else state.chunks
            if after.get(key, 0) < wanted:
                report.lost[key] = wanted - after.get(key, 0)
        named = sum(report.lost.values())
        report.lost_total = max(named, len(known_ids - table_ids)) if report.exact else max(
            named, damage.unreadable_rows - report.restored)
        return report


def _units_still_there(states: dict, discover: Callable) -> list:
    """The source units of ``states`` whose transcripts still exist (one discovery per
    file: one database file may hold many sessions)."""
    by_path: dict[str, set[str]] = {}
    for key, state in states.items():
        by_path.setdefault(state.path, set()).add(key)
    units = []
    for path, keys in by_path.items():
        if not Path(path).exists():
            continue
        try:
            units += [unit for unit in discover(Path(path)) if unit.key in keys]
        except Exception:  # noqa: BLE001 - a transcript that cannot be read is one not recovered
            continue
    return units
