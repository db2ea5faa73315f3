"""Reading a Hub memory: ``--memory org/repo`` → a local table pinned to one commit.

A command resolves the repo's head commit at most once, fetches that commit's live table
files into the HF cache (:mod:`funes.hub.snapshot`) and opens the table locally, so recall
works on a machine that never indexed anything.

Resolving the head is itself a request, yet a warm recall must make none.  So the head
is pinned for a short while: ``$FUNES_HOME/state/hub/<repo>/head.json`` records the SHA
and when it was resolved, and commands within ``FUNES_HUB_HEAD_TTL`` seconds (default
60; 0 resolves every time) reuse it.  A push from this host records its new head at
once, so the next command here always sees it; a push from elsewhere is seen within the
TTL.  With ``HF_HUB_OFFLINE=1`` the last head is used whatever its age, and when the Hub
cannot be reached a pinned head is used with a warning rather than failing.

The BM25 index is derived per commit, under ``<cache>/hub/<repo>/<sha>/bm25``: the first
read of a commit starts from the index of an earlier commit it only added rows to (every
data file that commit read is still read, and no rows were deleted) and indexes the new
rows; after a push removed or replaced rows (forgotten sessions, scrubbed secrets) it is
built again from the commit's table, so no word of the removed text stays findable.
Later reads load it as a local memory does.

``org/repo@<tag>`` reads a release (:mod:`funes.hub.release`): the tag is resolved to its
commit once and recorded in ``$FUNES_HOME/state/hub/<repo>/tags/<tag>.json``; a release
does not change, so later reads use that commit with no request at all, whatever the TTL.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from funes.config import state_dir
from funes.errors import MemoryIncompatibleError, MemoryMissingError, RemoteError, UsageError
from funes.files import write_atomically
from funes.hub.ledger import Release, added_since, releases_at
from funes.hub.repo import TABLE_DIR, HubRemote, HubRepo, parse_remote
from funes.hub.snapshot import Snapshot, cached_snapshot, derived_dir, derived_root, fetch_snapshot
from funes.memory.location import MemoryLocation
from funes.traces.model import split_session_key

if TYPE_CHECKING:
    from funes.memory.reader import Memory


HEAD_TTL_ENV = "FUNES_HUB_HEAD_TTL"
DEFAULT_HEAD_TTL_S = 60.0
# Per-commit BM25 indexes kept per repo (the newest by use); older ones are removed.
KEEP_DERIVED_COMMITS = 3


@dataclass(frozen=True)
class HubSnapshotLocation(MemoryLocation):
    """A commit of a Hub memory opened from the HF cache.  Its derived state (the BM25
    index) lives in funes' cache, keyed by commit, never inside the HF cache."""

    derived: Path = field(default=Path(), compare=False)
    sha: str = ""

    @property
    def state_dir(self) -> Path:
        return self.derived


def location_releases(location: MemoryLocation) -> list[Release] | None:
    """The releases listed at the commit a Hub memory was read at; None for any other memory."""
    if not isinstance(location, HubSnapshotLocation):
        return None
    return releases_at(parse_remote(split_tag(location.label)[0]), location.sha)


def release_sessions(location: MemoryLocation, since: str) -> tuple[str, ...]:
    """The session ids the releases after ``since`` added, up to the release read (the
    newest one when the head was read)."""
    releases = location_releases(location)
    if releases is None:
        raise UsageError(f"--since-release {since}: {location.label} is not a Hub memory; releases are"
                         " read from one, as --memory org/repo@<tag>")
    tag = split_tag(location.label)[1] or (releases[-1].tag if releases else None)
    try:
        keys = added_since(releases, tag, since)
    except KeyError:
        known = ", ".join(r.tag for r in releases) or "none"
        raise UsageError(f"--since-release {since}: not a release of {location.label} (its releases: {known})") from None
    return tuple(sorted(split_session_key(key)[1] for key in keys))


def split_tag(spec: str) -> tuple[str, str | None]:
    """``org/repo@v1.2`` → (``org/repo``, ``v1.2``); no ``@``: (spec, None)."""
    base, at, tag = spec.rpartition("@")
    if not at:
        return spec, None
    if not tag.strip() or not base:
        raise UsageError(f"--memory {spec!r}: name a release tag after @, as org/repo@v1.2.0")
    return base, tag


def hub_location(spec: str) -> HubSnapshotLocation:
    """The memory ``spec`` (``org/repo``, ``hf://datasets/…``, either with ``@<tag>``)
    names, materialised."""
    from funes.memory.reader import Memory

    base, tag = split_tag(spec)
    remote = parse_remote(base)
    snapshot = _current_snapshot(remote) if tag is None else _tag_snapshot(remote, tag)
    location = HubSnapshotLocation(uri=str(snapshot.root), label=spec, derived=derived_dir(remote, snapshot.sha),
                                   sha=snapshot.sha)
    memory = Memory.open(location)
    _check_model(memory)
    _ensure_lexical(memory, remote)
    return location


# --------------------------------------------------------------------------- the head


def _head_file(remote: HubRemote) -> Path:
    return state_dir() / "hub" / remote.key / "head.json"


def pin_head(remote: HubRemote, sha: str) -> None:
    """Record ``sha`` as the repo's head as of now (after resolving it, or pushing it)."""
    write_atomically(_head_file(remote), json.dumps({"sha": sha, "resolved_at": time.time()}))


def _pinned_head(remote: HubRemote) -> tuple[str, float] | None:
    try:
        data = json.loads(_head_file(remote).read_text(encoding="utf-8"))
        return str(data["sha"]), time.time() - float(data["resolved_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _head_ttl() -> float:
    try:
        return max(0.0, float(os.environ.get(HEAD_TTL_ENV, DEFAULT_HEAD_TTL_S)))
    except ValueError:
        return DEFAULT_HEAD_TTL_S


def _current_snapshot(remote: HubRemote) -> Snapshot:
    from huggingface_hub import constants

    pinned = _pinned_head(remote)
    if pinned is not None:
        sha, age = pinned
        if constants.HF_HUB_OFFLINE or age < _head_ttl():
            snapshot = cached_snapshot(remote, sha)
            if snapshot is not None:
                return snapshot
    if constants.HF_HUB_OFFLINE:
        raise RemoteError(f"{remote.uri} is not cached on this machine and HF_HUB_OFFLINE is set")
    repo = HubRepo(remote)
    try:
        state = repo.require_state()
    except RemoteError as exc:
        fallback = cached_snapshot(remote, pinned[0]) if pinned is not None else None
        if fallback is None:
            raise
        # stderr, like the CLI's notes: stdout carries the command's output.
        print(f"funes: warning: {exc}; reading {remote.uri} as of commit {pinned[0][:12]}, pinned"
              f" {pinned[1]:.0f} s ago", file=sys.stderr)
        return fallback
    snapshot = fetch_snapshot(repo, state)
    pin_head(remote, state.sha)
    return snapshot


def _tag_file(remote: HubRemote, tag: str) -> Path:
    return state_dir() / "hub" / remote.key / "tags" / f"{quote(tag, safe='')}.json"


def _tag_snapshot(remote: HubRemote, tag: str) -> Snapshot:
    """The commit release ``tag`` names: resolved on the first read, then pinned for good."""
    path = _tag_file(remote, tag)
    try:
        sha = str(json.loads(path.read_text(encoding="utf-8"))["sha"])
    except (OSError, ValueError, KeyError, TypeError):
        sha = None
    if sha is not None and (snapshot := cached_snapshot(remote, sha)) is not None:
        return snapshot
    repo = HubRepo(remote)
    state = repo.state(sha or tag)
    if state is None:
        repo.require_state()  # names a missing repo as such
        raise MemoryMissingError(f"{remote.uri} has no release {tag!r}: `funes status --memory {remote.repo_id}`"
                                 " lists its releases")
    snapshot = fetch_snapshot(repo, state)
    write_atomically(path, json.dumps({"sha": state.sha, "resolved_at": time.time()}))
    return snapshot


# --------------------------------------------------------------------------- checks and indexes


def _check_model(memory: Memory) -> None:
    """A remote embedded with another model cannot be recalled with this one: say so in
    one line (its owner re-publishes; nothing local can fix it)."""
    from funes.embedding import IDENTITY
    from funes.memory.schema import META_PREFIX
    from funes.memory.reader import IDENTITY_KEYS

    have, want = memory.identity, IDENTITY.to_metadata()
    if any(have[key] != want[f"{META_PREFIX}embedding.{key}"] for key in IDENTITY_KEYS):
        raise MemoryIncompatibleError(
            f"{memory.location.label} was embedded with {have['model_id'] or 'an unknown model'}"
            f" (revision {have['revision'][:12] or '?'}, dim {have['dim'] or '?'}) but this funes embeds with"
            f" {IDENTITY.model_id} (revision {IDENTITY.revision[:12]}, dim {IDENTITY.dim}): it cannot be recalled here"
        )


def _ensure_lexical(memory: Memory, remote: HubRemote) -> None:
    """Make the commit's BM25 index cover its table, seeded from an earlier commit's."""
    import numpy as np
    from filelock import FileLock

    from funes.memory.lexical import LexicalIndex

    location = memory.location
    folder = location.lexical_dir
    if LexicalIndex.open(folder).table_version == memory.version:
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.parent / "bm25.lock")):
        index = LexicalIndex.open(folder)
        if index.table_version == memory.version:
            return
        if not index.segments:
            seed = _grown_from_index(remote, folder.parent.name)
            if seed is not None:
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(seed, folder)
                index = LexicalIndex.open(folder)
        ids = memory.scan(["id"]).column("id").to_numpy(zero_copy_only=False).astype("<U16")
        missing = [str(i) for i in ids[~np.isin(ids, index.covered_ids())]]
        documents = memory.documents(missing)
        index.add(missing, [documents[i] for i in missing], memory.version, memory.documents)
    _prune_derived(remote)


def _grown_from_index(remote: HubRemote, sha: str) -> Path | None:
    """The BM25 index of the newest other commit read here that ``sha`` only adds rows
    to, or None: an index of rows since removed would still hold their words."""
    files = _table_files(remote, sha)
    if files is None:
        return None
    data, deletions = f"{TABLE_DIR}/data/", f"{TABLE_DIR}/_deletions/"
    candidates = []
    for path in _derived_commits(remote):
        earlier = _table_files(remote, path.name) if path.name != sha and (path / "bm25").is_dir() else None
        if earlier is None:
            continue
        kept_rows = all(name in files for name in earlier if name.startswith(data))
        deleted_none = all(name in earlier for name in files if name.startswith(deletions))
        if kept_rows and deleted_none:
            candidates.append(path / "bm25")
    return max(candidates, key=lambda path: path.stat().st_mtime, default=None)


def _table_files(remote: HubRemote, sha: str) -> frozenset[str] | None:
    """The live table files of a commit read here (:mod:`funes.hub.snapshot` records them)."""
    try:
        return frozenset(json.loads((derived_dir(remote, sha) / "files.json").read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _derived_commits(remote: HubRemote) -> list[Path]:
    root = derived_root(remote)
    return [path for path in root.iterdir() if path.is_dir()] if root.is_dir() else []


def _prune_derived(remote: HubRemote) -> None:
    commits = sorted(_derived_commits(remote), key=lambda path: path.stat().st_mtime, reverse=True)
    for stale in commits[KEEP_DERIVED_COMMITS:]:
        shutil.rmtree(stale, ignore_errors=True)
