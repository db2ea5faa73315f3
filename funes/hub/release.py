"""Releases of a project memory: ``funes release`` and the ``release_memory`` asset call
:func:`release`.

A release is a git tag of the project.  Releasing it publishes to the project memory
(the Hub dataset repo ``funes curate`` named) the chunks of the project's included
sessions dated up to the tagged commit, after the previous release's commit, through the
guarded push (:func:`funes.hub.push.push`: the egress gate, one commit, private by
default, receipts), with the release's entry added to the repo's ledger
(:mod:`funes.hub.ledger`) and card in that commit; then the commit is tagged with the
release's name.  A reader recalls a release as ``--memory org/repo@<tag>``.

A release ships all of its chunks or none: a chunk held back by the gate or still
waiting for its vector stops it before anything is committed.  Releases publish in
order (the tag of a commit older than a published release's is refused), since the
table at each tag holds every earlier release's rows.  A tag is published once:
``force`` deletes the Hub's tag and publishes again, moving the tag to the new commit
(readers that already resolved it keep the commit they pinned).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from funes.errors import MemoryMissingError, RemoteError, UsageError
from funes.hub.curation import SESSION_COLUMNS, Curation, ProjectSessions
from funes.hub.ledger import Release, ReleaseDraft, read_releases
from funes.hub.push import PushReport, push
from funes.hub.repo import HubRepo, RepoState, parse_remote
from funes.hub.snapshot import fetch_snapshot
from funes.memory.location import MemoryLocation, local_memory
from funes.memory.reader import Memory
from funes.provenance import checkout_root
from funes.traces.common import checkout_identity


@dataclass
class ReleaseReport:
    tag: str
    date: str
    since: str | None
    push: PushReport
    retagged_from: str | None = None  # the commit a --force release moved the tag from

    def summary(self) -> str:
        line = (f"{self.push.remote}: released {self.tag} ({self.date}"
                + (f", since {self.since}" if self.since else ", first release")
                + f"): {self.push.pushed} chunks from {self.push.sessions} session(s) in commit"
                f" {(self.push.commit or '')[:12]}, tagged {self.tag}")
        if self.retagged_from:
            line += f" (moved from {self.retagged_from[:12]})"
        return line


def release(remote_spec: str, tag: str, *, project: str | None = None, since: str | None = None,
            checkout: Path | None = None, location: MemoryLocation | None = None, assume_yes: bool = False,
            confirm: Callable[[str], bool] | None = None, force: bool = False) -> ReleaseReport:
    """Publish release ``tag`` of the project to ``remote_spec`` and tag it there.

    Raises :class:`~funes.errors.UsageError` for a tag the checkout lacks, a tag already
    published (without ``force``) or older than a published release, and a project
    with no session to release; :class:`~funes.errors.RemoteError` when the Hub fails."""
    remote = parse_remote(remote_spec)
    location = location or local_memory()
    local = Memory.open(location)
    local.require_rows()
    curation = Curation.load(remote)
    if project:
        curation.name_project(project)
    project = curation.project
    if project is None:
        raise UsageError(f"{remote.uri} is not the project memory of a repository: pass --project owner/name")
    rows = local.scan((*SESSION_COLUMNS, "ts", "cwd"))
    checkout = checked_checkout(checkout, project) if checkout else find_checkout(project, rows.column("cwd").to_pylist())
    date = tag_date(checkout, tag)

    repo = HubRepo(remote)
    state = repo.state()
    tags = repo.tags() if state is not None else {}
    if tag in tags and not force:
        raise UsageError(f"{tag} is already released in {remote.uri} (commit {tags[tag][:12]}):"
                         " pass --force to publish it again and move the tag")
    ledger = read_releases(repo, state)
    newer = [r.tag for r in ledger if r.tag != tag and _parse(r.date) > date]
    if newer:
        raise UsageError(f"{remote.uri} already holds release {newer[-1]}, newer than {tag}: releases publish in order")
    newest = _newest_row(repo, state)
    if newest is not None and newest > date:
        raise UsageError(f"{remote.uri} already holds chunks dated after {tag} ({_iso(date)}), up to {_iso(newest)}:"
                         " a release tags the head, so release each tag before pushing the sessions after it")
    if since is None:
        earlier = [r for r in ledger if r.tag != tag]
        since = earlier[-1].tag if earlier else None
    after = _since_date(checkout, since, ledger)

    sessions = ProjectSessions.from_rows(rows, project)
    if not sessions.chunks:
        raise MemoryMissingError(f"the memory at {location.label} holds no session of {project}")
    admitted = sessions.admitted(curation)
    if not admitted:
        raise UsageError(f"no session of {project} is included in {remote.uri} yet:"
                         f" `funes curate {remote.repo_id} {project}` chooses them")
    stamps = dict(zip(rows.column("id").to_pylist(), rows.column("ts").to_pylist(), strict=True))
    ids = frozenset(chunk for chunk in admitted
                    if (stamp := _parse_or_none(stamps.get(chunk))) is not None
                    and stamp <= date and (after is None or stamp > after))
    if not ids and not ledger:
        raise UsageError(f"no included session of {project} in {location.label} is dated up to {tag} ({_iso(date)})")
    if project != Curation.load(remote).project:
        curation.save()

    report = push(remote_spec, location=location, assume_yes=assume_yes, confirm=confirm,
                  release=ReleaseDraft(tag, _iso(date), since, ids))
    assert report.commit is not None  # a release always commits its ledger entry
    try:
        repo.tag(tag, report.commit, f"funes release {tag}", replace=tag in tags)
    except RemoteError as exc:
        raise RemoteError(f"{exc}; release {tag} is published in commit {report.commit[:12]} but not tagged:"
                          f" run `funes release {remote.repo_id} {tag}` again to tag it") from exc
    return ReleaseReport(tag, _iso(date), since, report, retagged_from=tags.get(tag))


def _newest_row(repo: HubRepo, state: RepoState | None) -> datetime | None:
    """The latest chunk time of the head's table (fetched through the HF cache, which
    the push then reads again for free)."""
    if state is None or not state.has_table:
        return None
    snapshot = fetch_snapshot(repo, state)
    table = Memory.open(MemoryLocation(uri=str(snapshot.root), label=repo.remote.uri))
    stamps = [stamp for value in table.scan(["ts"]).column("ts").to_pylist() if (stamp := _parse_or_none(value))]
    return max(stamps, default=None)


# --------------------------------------------------------------------------- the project's checkout


def find_checkout(project: str, cwds: list[str | None]) -> Path:
    """The git checkout of the project: the one holding the current folder, else one its
    sessions ran in that is still on this machine.  A checkout whose remote names another
    repository is passed over: its tags are another project's releases."""
    others = []
    for cwd in (str(Path.cwd()), *dict.fromkeys(cwd for cwd in cwds if cwd)):
        root = checkout_root(cwd)
        if root is None:
            continue
        try:
            return checked_checkout(Path(root), project)
        except UsageError as refusal:
            others.append(refusal)
    if others:
        raise others[0]
    raise UsageError(f"no git checkout of {project} here: run funes release inside one")


def checked_checkout(checkout: Path, project: str) -> Path:
    """``checkout``, refused when its remote names another repository than ``project``
    (a checkout with no remote cannot say, and is taken)."""
    repo, _branch = checkout_identity(str(checkout))
    if repo is not None and repo.lower() != project.lower():
        raise UsageError(f"the git checkout at {checkout} is of {repo}, not {project}:"
                         f" run funes release inside a checkout of {project}")
    return checkout


def checkout_tags(checkout: Path) -> list[str]:
    """The tags of ``checkout``, oldest tagged commit first (the order releases publish in)."""
    result = subprocess.run(["git", "-C", str(checkout), "for-each-ref", "refs/tags",
                             "--format=%(*committerdate:unix)%(committerdate:unix) %(refname:strip=2)"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise UsageError(f"{checkout}: not a git checkout ({result.stderr.strip().splitlines()[-1:]})")
    dated = [line.split(" ", 1) for line in result.stdout.splitlines() if " " in line]
    return [tag for stamp, tag in sorted(dated, key=lambda item: (int(item[0] or 0), item[1]))]


def tag_date(checkout: Path, tag: str) -> datetime:
    """The committer date of the commit ``tag`` names in ``checkout``."""
    result = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%ct", f"refs/tags/{tag}^{{commit}}",
                             "--"], capture_output=True, text=True)
    if result.returncode != 0 or not result.stdout.strip():
        raise UsageError(f"{tag}: no such tag in the git checkout at {checkout}")
    return datetime.fromtimestamp(int(result.stdout.strip()), timezone.utc)


def _since_date(checkout: Path, since: str | None, ledger: list[Release]) -> datetime | None:
    if since is None:
        return None
    known = {r.tag: r.date for r in ledger}
    return _parse(known[since]) if since in known else tag_date(checkout, since)


def _parse(stamp: str) -> datetime:
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _parse_or_none(stamp: str | None) -> datetime | None:
    try:
        return _parse(stamp) if stamp else None
    except ValueError:
        return None


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
