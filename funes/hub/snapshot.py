"""One commit of a Hub memory as local files: the table its newest manifest describes.

pylance offers no hook to serve its reads from a cache, so instead of intercepting reads
(as the Rust funes wraps Lance's object store) the table is prefetched, file by file:

1. the commit's file list gives the manifests in ``chunks.lance/_versions/``; the newest
   is downloaded (lancedb names manifests ``u64::MAX - version``, so the smallest name
   is the newest; older tables use ``<version>.manifest``);
2. that manifest alone opens in pylance and names the live data files, deletion files
   and index segments;
3. exactly those are downloaded, whole, pinned to the commit SHA, into the standard HF
   cache, whose ``snapshots/<sha>/`` folder then opens as a local table.

Files are immutable and keyed by (repo, SHA, path), so a commit once fetched is read
with no request at all.  Superseded fragments and old manifests are never fetched, and
``latest_version_hint.json`` never is either: it is the one mutable file of a table.

Which files make up a commit is recorded in ``<cache>/hub/<repo>/<sha>/files.json``,
so a warm read checks that each exists and opens the table without listing anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from funes.config import cache_dir
from funes.errors import MemoryMissingError
from funes.files import write_atomically
from funes.hub.repo import TABLE_DIR, HubRemote, HubRepo, RepoState

VERSIONS_DIR = f"{TABLE_DIR}/_versions/"
VERSION_HINT = "latest_version_hint.json"
MANIFEST_SUFFIX = ".manifest"
# lancedb's V2 manifest names count down from u64::MAX, zero-padded to 20 digits.
_U64_MAX = 2**64 - 1
_V2_NAME_DIGITS = 20


def manifest_version(path: str) -> int:
    """The table version a manifest path holds, under either naming scheme."""
    stem = path.rsplit("/", 1)[-1].removesuffix(MANIFEST_SUFFIX)
    number = int(stem)
    return _U64_MAX - number if len(stem) == _V2_NAME_DIGITS and number > 2**63 else number


def newest_manifest(files: Iterable[str]) -> str | None:
    manifests = [p for p in files if p.startswith(VERSIONS_DIR) and p.endswith(MANIFEST_SUFFIX)
                 and p[len(VERSIONS_DIR):-len(MANIFEST_SUFFIX)].isdigit()]
    return max(manifests, key=manifest_version, default=None)


def derived_root(remote: HubRemote) -> Path:
    """Where funes keeps what it derives from the repo's commits, one folder per SHA."""
    return cache_dir() / "hub" / remote.key


def derived_dir(remote: HubRemote, sha: str) -> Path:
    """What funes derives from one commit: its file list and BM25 index."""
    return derived_root(remote) / sha


def snapshot_root(remote: HubRemote, sha: str) -> Path:
    """The commit's folder in the HF cache (``HF_HUB_CACHE``, read by the library at
    import; tests patch it), without importing the rest of huggingface_hub."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / remote.cache_folder / "snapshots" / sha


@dataclass(frozen=True)
class Snapshot:
    remote: HubRemote
    sha: str
    root: Path  # the HF cache's snapshots/<sha>/ folder
    files: tuple[str, ...]  # repo paths of the live table files


def cached_snapshot(remote: HubRemote, sha: str) -> Snapshot | None:
    """The commit's table if every live file is already local (no request)."""
    record = derived_dir(remote, sha) / "files.json"
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    root = snapshot_root(remote, sha)
    files = tuple(data["files"])
    if not all((root / path).exists() for path in files):
        return None  # the HF cache was pruned: fetch again
    return Snapshot(remote, sha, root, files)


def fetch_snapshot(repo: HubRepo, state: RepoState) -> Snapshot:
    """The table at ``state``'s commit, downloading the live files it lacks."""
    remote, sha = repo.remote, state.sha
    cached = cached_snapshot(remote, sha)
    if cached is not None:
        return cached
    manifest = newest_manifest(state.files)
    if manifest is None:
        raise MemoryMissingError(f"{remote.uri} holds no funes memory yet ({TABLE_DIR} is missing): push to it first")
    root = repo.download(manifest, sha).parents[len(Path(manifest).parts) - 1]
    live = _live_files(root / TABLE_DIR, state.files)
    repo.download_all(live, sha)
    files = (manifest, *live)
    write_atomically(derived_dir(remote, sha) / "files.json", json.dumps({"files": files}))
    return Snapshot(remote, sha, root, files)


def _live_files(table: Path, repo_files: frozenset[str]) -> list[str]:
    """Repo paths of the files the (already downloaded) newest manifest names."""
    live = live_table_files(table, repo_files)
    missing = sorted(set(live) - repo_files)
    if missing:
        raise MemoryMissingError(f"{TABLE_DIR} at this commit names files the repo lacks, e.g. {missing[0]}")
    return live


def live_table_files(table: Path, repo_files: frozenset[str] | set[str]) -> list[str]:
    """Repo paths of the data, deletion and index files the newest version of the
    table at ``table`` reads (index segment files as ``repo_files`` lists them)."""
    import lance

    dataset = lance.dataset(str(table))
    live = []
    for fragment in dataset.get_fragments():
        live += [f"{TABLE_DIR}/data/{data_file.path}" for data_file in fragment.data_files()]
        deletion = fragment.metadata.deletion_file
        if deletion is not None:
            live.append(f"{TABLE_DIR}/{deletion.path(fragment.fragment_id)}")
    # Index segments are folders whose file names only the listing knows.
    for index in dataset.describe_indices():
        for segment in index.segments:
            prefix = f"{TABLE_DIR}/_indices/{segment.uuid}/"
            live += sorted(path for path in repo_files if path.startswith(prefix))
    return live
