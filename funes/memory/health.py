"""Whether a memory's files can still be read, and which of them cannot.

A memory's table is a Lance dataset: one manifest per version (``_versions/*.manifest``)
lists the fragments of that version, whose data files (``data/*.lance``) and deletion
files (``_deletions/``) hold the rows.  A truncated, deleted or overwritten file makes
every read that touches it fail, so one damaged fragment would lock a user out of the
whole memory.  This module names the damage so that readers can serve every intact
fragment, writers can refuse in one line, and ``funes repair`` can fix it.

Nothing here runs on the way to a healthy answer: commands ask when a read or a write
has failed (or, for ``funes status``, through the cheap check), so a warm recall pays
nothing for it.  The cheap check compares each live file's size with the size the
manifest recorded (one ``stat`` per file: a few hundred microseconds for a memory's
tens of fragments); the deep check reads every fragment whole, once, after a failure.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funes.errors import MemoryDamagedError
from funes.memory.location import MemoryLocation

# Manifest file names: ``<u64::MAX - version>.manifest`` (20 digits, Lance's V2 naming,
# so the newest sorts first) or ``<version>.manifest`` (V1).
_U64_MAX = 2**64 - 1


@dataclass(frozen=True)
class DamagedFragment:
    fragment_id: int
    rows: int  # live rows its manifest says it holds: what is unreadable
    files: tuple[str, ...]  # its files that are missing, short or unreadable (relative to the table)


@dataclass
class TableDamage:
    """What of a table cannot be read.  Empty (falsy) when nothing is wrong."""

    version: int | None = None  # the version read (the newest whose manifest opens)
    unreadable_manifests: list[Path] = field(default_factory=list)  # newer versions that do not open
    fragments: list[DamagedFragment] = field(default_factory=list)
    lost_versions: int = 0  # versions the BM25 index saw that no manifest holds any more (deleted)
    lexical: str | None = None  # what is wrong with the BM25 files, when something is

    def __bool__(self) -> bool:
        return bool(self.unreadable_manifests or self.fragments or self.lost_versions or self.lexical)

    @property
    def unreadable_rows(self) -> int:
        return sum(f.rows for f in self.fragments)

    @property
    def table_damaged(self) -> bool:
        """Damage the table's rows suffer (the BM25 files are rebuilt from them)."""
        return bool(self.unreadable_manifests or self.fragments or self.lost_versions)

    def describe(self) -> str:
        """The damage in one clause, for ``funes: memory at <label> is damaged: …``."""
        parts = []
        if self.fragments:
            files = sum(len(f.files) for f in self.fragments)
            parts.append(f"{files} data file(s) unreadable ({self.unreadable_rows} chunk(s) in"
                         f" {len(self.fragments)} fragment(s))")
        if self.unreadable_manifests:
            parts.append(f"the manifest of {len(self.unreadable_manifests)} newer version(s) unreadable"
                         f" (read as of version {self.version})")
        if self.lost_versions:
            parts.append(f"{self.lost_versions} table version(s) missing (their manifests were deleted)")
        if self.lexical:
            parts.append(f"its BM25 index is unreadable ({self.lexical}; recall indexes the table in memory each time)")
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"summary": self.describe(), "unreadable_chunks": self.unreadable_rows,
                "damaged_fragments": [{"fragment_id": f.fragment_id, "rows": f.rows, "files": list(f.files)}
                                      for f in self.fragments],
                "unreadable_manifests": [p.name for p in self.unreadable_manifests],
                "version_read": self.version, "lost_versions": self.lost_versions, "lexical": self.lexical}


def damaged_error(location: MemoryLocation, damage: TableDamage) -> MemoryDamagedError:
    return MemoryDamagedError(f"memory at {location.label} is damaged: {damage.describe()}:"
                              " run `funes repair` to restore it")


# --------------------------------------------------------------------------- manifests


def manifest_version(path: Path) -> int | None:
    stem = path.name.removesuffix(".manifest")
    if not stem.isdigit() or not path.name.endswith(".manifest"):
        return None
    number = int(stem)
    return _U64_MAX - number if len(stem) == 20 and number > 2**63 else number


def manifests(location: MemoryLocation) -> list[tuple[int, Path]]:
    """``(version, file)`` of every manifest of a local table, newest first."""
    folder = Path(location.table_uri) / "_versions"
    found = [(manifest_version(p), p) for p in folder.glob("*.manifest")] if folder.is_dir() else []
    return sorted(((v, p) for v, p in found if v is not None), reverse=True)


def open_newest_readable(location: MemoryLocation, failure: BaseException) -> tuple[Any, TableDamage]:
    """The newest version of a local table whose manifest opens, after opening the
    latest failed with ``failure``; :class:`MemoryDamagedError` when none opens."""
    import lance

    unreadable: list[Path] = []
    for version, path in manifests(location):
        try:
            dataset = lance.dataset(location.table_uri, version=version)
        except Exception:  # noqa: BLE001 - any failure to read a manifest is damage to it
            unreadable.append(path)
            continue
        return dataset, TableDamage(version=version, unreadable_manifests=unreadable)
    first = str(failure).strip().splitlines()[0] if str(failure).strip() else type(failure).__name__
    raise MemoryDamagedError(f"memory at {location.label} is damaged: no version of its table can be read"
                             f" ({first})")


def lost_versions(dataset: Any, lexical_version: int) -> int:
    """How many versions the BM25 index covered beyond the newest manifest the table
    has: a writer commits the table before the index, so the index is never ahead of
    the table unless the table lost its newest manifests.  ``dataset`` may be an older
    snapshot (a reader that opened it before a write), so the table's latest version
    is asked again before calling anything lost."""
    if lexical_version <= int(dataset.version):
        return 0
    latest = int(dataset.latest_version)
    return max(0, lexical_version - latest)


# --------------------------------------------------------------------------- fragments


def _fragment_rows(fragment: Any) -> int:
    metadata = fragment.metadata
    deleted = metadata.deletion_file.num_deleted_rows if metadata.deletion_file is not None else 0
    return int(metadata.physical_rows or 0) - int(deleted or 0)


def _short_files(location: MemoryLocation, fragment: Any) -> list[str]:
    """The files of a local fragment that are missing or not the size recorded."""
    root = Path(location.table_uri)
    short = []
    for data_file in fragment.data_files():
        relative = f"data/{data_file.path}"
        try:
            size = os.stat(root / relative).st_size
        except OSError:
            short.append(relative)
            continue
        recorded = getattr(data_file, "file_size_bytes", None)
        if recorded and size != recorded:
            short.append(relative)
    deletion = fragment.metadata.deletion_file
    if deletion is not None:
        relative = deletion.path(fragment.fragment_id)
        if not (root / relative).is_file():
            short.append(str(relative))
    return short


def _unreadable(fragment: Any) -> bool:
    try:
        for _batch in fragment.to_batches(batch_size=4096):
            pass
    except Exception:  # noqa: BLE001 - whatever the reader says, the fragment cannot be read
        return True
    return False


def damaged_fragments(location: MemoryLocation, dataset: Any, *, deep: bool,
                      known: Sequence[DamagedFragment] = ()) -> list[DamagedFragment]:
    """The fragments of ``dataset`` that cannot be read: cheaply (local tables), the
    files missing or not the size the manifest recorded; with ``deep``, also every
    fragment a whole read fails on (reads the table once)."""
    found = {f.fragment_id: f for f in known}
    for fragment in dataset.get_fragments():
        if fragment.fragment_id in found:
            continue
        files = _short_files(location, fragment) if location.is_local else []
        if not files and deep and _unreadable(fragment):
            files = [f"data/{d.path}" for d in fragment.data_files()]
        if files:
            found[fragment.fragment_id] = DamagedFragment(fragment.fragment_id, _fragment_rows(fragment), tuple(files))
    return sorted(found.values(), key=lambda f: f.fragment_id)


def intact_fragments(dataset: Any, damaged: Sequence[DamagedFragment]) -> list[Any]:
    skip = {f.fragment_id for f in damaged}
    return [fragment for fragment in dataset.get_fragments() if fragment.fragment_id not in skip]


# --------------------------------------------------------------------------- the whole memory


def inspect(location: MemoryLocation, *, deep: bool) -> tuple[Any | None, TableDamage]:
    """The table as the newest readable version (None when there is none) and the
    damage found: manifests, fragments (``deep``: read whole), lost versions, BM25."""
    import lance

    from funes.memory.lexical import LexicalIndex

    damage = TableDamage()
    try:
        dataset = lance.dataset(location.table_uri, storage_options=location.storage_options or None)
    except Exception as exc:  # noqa: BLE001 - a missing table is not damage; anything else is
        if not location.is_local or not manifests(location):
            return None, damage
        try:
            dataset, damage = open_newest_readable(location, exc)
        except MemoryDamagedError:
            return None, TableDamage(unreadable_manifests=[path for _, path in manifests(location)])
    damage.version = int(dataset.version)
    damage.fragments = damaged_fragments(location, dataset, deep=deep)
    lexical = LexicalIndex.open(location.lexical_dir)
    damage.lexical = lexical.problem
    if not damage.unreadable_manifests:  # else the versions it names are what is missing
        damage.lost_versions = lost_versions(dataset, lexical.table_version)
    return dataset, damage


# --------------------------------------------------------------------------- restoring service


def set_aside(paths: Sequence[Path], folder: Path) -> list[Path]:
    """Move unreadable files out of the table into ``folder`` (kept for inspection,
    never read again); returns where they went."""
    folder.mkdir(parents=True, exist_ok=True)
    moved = []
    for path in paths:
        target = folder / path.name
        os.replace(path, target)
        moved.append(target)
    return moved


def drop_fragments(location: MemoryLocation, damaged: Sequence[DamagedFragment]) -> int:
    """Commit a version of the table without the ``damaged`` fragments (every other
    row, vector and index stays); returns the new version."""
    import lance

    dataset = lance.dataset(location.table_uri, storage_options=location.storage_options or None)
    operation = lance.LanceOperation.Delete(updated_fragments=[],
                                            deleted_fragment_ids=[f.fragment_id for f in damaged], predicate="false")
    committed = lance.LanceDataset.commit(location.table_uri, operation, read_version=dataset.version,
                                          storage_options=location.storage_options or None)
    return int(committed.version)
