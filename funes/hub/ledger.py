"""The releases a Hub memory holds: ``releases.json`` at the root of its dataset repo.

``funes release`` writes it in the same commit as the release's rows and then tags that
commit, so the file at a tag lists every release up to and including it.  Each entry
names the tag, the date of the project's commit it tags, the table's size at the release
and the sessions it added (those with chunks new to the repo), which ``--since-release``
and the dataset card read.  Plain pushes leave the file as it is.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from funes.errors import RemoteError
from funes.hub.repo import HubRemote, HubRepo, RepoState

RELEASES_PATH = "releases.json"


@dataclass(frozen=True)
class Release:
    tag: str
    date: str  # the tagged commit's date, UTC ISO 8601
    published_at: str
    chunks: int  # rows of the table at this release
    sessions: int  # sessions of the table at this release
    added: tuple[str, ...] = field(default_factory=tuple)  # session keys with chunks this release added
    since: str | None = None  # the release it follows


def read_releases(repo: HubRepo, state: RepoState | None) -> list[Release]:
    """The releases listed at ``state``'s commit, oldest first (one cached download)."""
    if state is None or RELEASES_PATH not in state.files:
        return []
    return _decode(repo.download(RELEASES_PATH, state.sha))


def releases_at(remote: HubRemote, sha: str) -> list[Release]:
    """The releases listed at commit ``sha``, through the HF cache, which also records a
    commit without the file: a warm read makes no request either way."""
    from huggingface_hub import _CACHED_NO_EXIST, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError

    # A download asks the Hub even when the cache knows the file is absent at a commit.
    if try_to_load_from_cache(remote.repo_id, RELEASES_PATH, revision=sha, repo_type="dataset") is _CACHED_NO_EXIST:
        return []
    try:
        return _decode(HubRepo(remote).download(RELEASES_PATH, sha))
    except RemoteError as exc:
        if isinstance(exc.__cause__, EntryNotFoundError):
            return []
        raise


def _decode(path: Path) -> list[Release]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Release(**{**item, "added": tuple(item.get("added", ()))}) for item in data.get("releases", [])]


def encode_releases(releases: list[Release]) -> bytes:
    return (json.dumps({"releases": [asdict(release) for release in releases]}, indent=1) + "\n").encode("utf-8")


def added_since(releases: list[Release], tag: str | None, since: str) -> set[str]:
    """The session keys the releases after ``since`` up to ``tag`` added."""
    names = [release.tag for release in releases]
    if since not in names:
        raise KeyError(since)
    newer = releases[names.index(since) + 1:names.index(tag) + 1] if tag in names else releases[names.index(since) + 1:]
    return {session for release in newer for session in release.added}


@dataclass(frozen=True)
class ReleaseDraft:
    """A release a push is asked to publish: only the chunks ``ids`` may ship, and the
    commit adds its entry to the ledger (replacing an earlier entry of the same tag)."""

    tag: str
    date: str
    since: str | None
    ids: frozenset[str]

    def entry(self, table_rows: int, table_sessions: int, added: set[str], published_at: str) -> Release:
        return Release(self.tag, self.date, published_at, table_rows, table_sessions, tuple(sorted(added)),
                       self.since)

    def ledger(self, earlier: list[Release], entry: Release, present: set[str]) -> list[Release]:
        """``earlier`` with ``entry`` last; published again (``--force``), the release keeps
        the sessions it added before that the table (its session keys: ``present``) still holds."""
        again = [release for release in earlier if release.tag == self.tag]
        if again:
            entry = replace(entry, added=tuple(sorted((set(entry.added) | set(again[-1].added)) & present)))
        return [*(release for release in earlier if release.tag != self.tag), entry]
