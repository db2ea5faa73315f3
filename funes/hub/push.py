"""Publishing a memory to a Hub dataset repo: ``funes push``, the hooks and the
``hub_publication`` asset all call :func:`push`.

One push is one commit.  The remote's table at its head commit is fetched (only the live
files, through the HF cache), the local chunks it lacks are appended to a staged copy
with Lance, and exactly the files Lance added (data files, manifest, transaction; never
its rewritable version hint) plus the dataset card are sent as one ``create_commit`` whose
``parent_commit`` is that head, so a push only ever adds files.  Lance never writes to ``hf://`` itself: each of its writes would be a commit of
its own, with no compare-and-swap.  When the head moved meanwhile (HTTP 412/409) the
push reads the new head and does it again, so concurrent pushes from several hosts all
land, one after another, and none overwrites another.

Forgetting reaches the remote: the sessions `funes forget` tombstoned in this memory's
coverage are removed from the remote's current commit by the next push (the rows
deleted, the fragments that held them rewritten without them, and the old data files
deleted in the same commit, so no file of the new head holds their text);
``purge_history`` then squashes the repo's history so no commit holds them either.
Scrubbing reaches it the same way: the chunks `funes scrub` replaced, dropped or redacted
the files or commands of (recorded in coverage) whose text, files or commands on the
remote differ from the local ones are deleted from the remote in that same commit, and
their redacted versions, when the scrub kept any, ship in their place.

What ships: chunks whose whole block is embedded (the rest waits for its vectors) and
passes the egress gate (:mod:`funes.hub.gate`), of sessions not on the exclusion list
(:mod:`funes.exclusion`: a list that cannot be read stops the push); for a project memory,
only the sessions this host included (:mod:`funes.hub.curation`).  New repos are private; an existing one
keeps its visibility.  The first push from a memory to a remote holding none of its
chunks asks first (off a terminal it refuses unless ``assume_yes``): it is a typo as
often as a new memory.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from funes.errors import FunesError, MemoryIncompatibleError, RemoteError, UsageError, WriterBusyError
from funes.exclusion import ROW_COLUMNS, load_exclusions
from funes.hub.card import CardStats, is_funes_card, render_card
from funes.hub.curation import PROJECT_KEY, SESSION_COLUMNS, Curation, ProjectSessions, curation_path
from funes.hub.gate import GateResult, gate, rows_by_id
from funes.hub.ledger import RELEASES_PATH, Release, ReleaseDraft, encode_releases, read_releases
from funes.hub.reader import pin_head
from funes.hub.receipts import Receipt, Removals, receipt_path
from funes.hub.repo import CARD_PATH, TABLE_DIR, URI_PREFIX, HeadMoved, HubRemote, HubRepo, RepoState, parse_remote
from funes.hub.snapshot import VERSION_HINT, VERSIONS_DIR, Snapshot, fetch_snapshot
from funes.memory.location import MemoryLocation, local_memory
from funes.memory.schema import META_PREFIX, SCHEMA_VERSION, missing_fields
from funes.memory.reader import Memory

MAX_ATTEMPTS = 8
# The columns `funes scrub` rewrites: a remote row differing from the local one in any
# of them may still hold what was scrubbed (a tool result's vector reads its call, so a
# result whose call was redacted is embedded again).
SCRUBBED_COLUMNS = ("text", "files", "commands", "vector")
RETRY_BASE_S = 0.25


class NothingPublishable(FunesError):
    """Every chunk the remote lacks was held back by the egress gate."""

    exit_code = 2

    def __init__(self, message: str, report: PushReport):
        super().__init__(message)
        self.report = report


class PushRefused(UsageError):
    """A first push to a remote sharing nothing with this memory, not confirmed."""

    def __init__(self, remote: str, held: str):
        self.remote, self.held = remote, held
        super().__init__(f"{remote} {held} and this memory never pushed there: pass --yes to publish to it")


@dataclass
class PushReport:
    remote: str  # hf://datasets/<org>/<repo>
    commit: str | None = None  # the commit made; None when there was nothing to publish
    private: bool | None = None
    created: bool = False  # the repo was created (private) by this push
    pushed: int = 0  # chunks published by this push
    sessions: int = 0  # sessions they belong to
    already_there: int = 0  # local chunks the remote held before
    gate: GateResult = field(default_factory=GateResult)
    pending_review: list[str] = field(default_factory=list)  # project sessions awaiting a decision
    project: str | None = None
    card: str = ""  # "written", "refreshed", "kept" (hand-written) or "" (no commit)
    attempts: int = 0
    excluded: int = 0  # local chunks of sessions on the exclusion list, never shipped
    retracted: int = 0  # chunks of forgotten sessions removed from the remote by this push
    retracted_sessions: int = 0
    scrub_retracted: int = 0  # remote chunks holding text `funes scrub` replaced or dropped, removed by this push
    history_purged: bool = False  # the remote's history was squashed to its new head
    releases_holding: list[str] = field(default_factory=list)  # release tags whose commits hold what this push removed

    @property
    def held_back(self) -> int:
        return self.gate.held_chunks

    def summary(self) -> str:
        if self.commit is None:
            line = f"{self.remote}: up to date ({self.already_there} chunks there)"
        else:
            visibility = "" if self.private is None else (" (private)" if self.private else " (public)")
            line = (f"{self.remote}{visibility}: pushed {self.pushed} chunks from {self.sessions} session(s)"
                    f" in commit {self.commit[:12]}")
            if self.retracted:
                line += f"; removed {self.retracted} chunks of {self.retracted_sessions} forgotten session(s)"
            if self.scrub_retracted:
                line += f"; retracted {self.scrub_retracted} scrubbed chunk(s)"
            if self.created:
                line += ", new repo"
        if self.gate.awaiting_vectors:
            line += f"; {self.gate.awaiting_vectors} chunk(s) wait for their vectors (`funes index --yes`)"
        if self.history_purged:
            line += "; history squashed: no commit of the repo holds what was removed"
        return line

    def warnings(self) -> list[str]:
        notes = []
        if self.held_back:
            notes.append(f"held back {self.gate.describe_held()}; run `funes scrub`, then push again")
        removed = " and ".join(what for what, count in (("the forgotten sessions", self.retracted),
                                                        ("the scrubbed secrets", self.scrub_retracted)) if count)
        if removed and not self.history_purged:
            notes.append(f"the repo's earlier commits still hold {removed}: push again with "
                         "--purge-history to squash its history")
        if self.scrub_retracted:
            notes.append("revoke the scrubbed secrets: anyone who read the repo before this push may hold them")
        if self.releases_holding:
            notes.append(f"release tag(s) {', '.join(self.releases_holding)} still name commits holding the forgotten"
                         " sessions: a release stays as published; `funes release --force` publishes the newest again"
                         " without them, and deleting a tag on the Hub withdraws a release")
        if self.history_purged:
            notes.append("copies already downloaded from the repo (clones, other machines' caches) cannot be "
                         "recalled: forgetting reaches only the Hub")
        if self.pending_review:
            notes.append(f"{len(self.pending_review)} session(s) of {self.project} await review:"
                         f" `funes curate {self.remote} {self.project}`")
        return notes


def push(remote: str, *, location: MemoryLocation | None = None, assume_yes: bool = False,
         confirm: Callable[[str], bool] | None = None, max_attempts: int = MAX_ATTEMPTS,
         purge_history: bool = False, release: ReleaseDraft | None = None) -> PushReport:
    """Publish what ``remote`` lacks of the memory at ``location`` (default: the local one).

    ``confirm`` asks the user a yes/no question (None: nobody to ask).  Raises
    :class:`NothingPublishable` (exit 2) when the gate held back everything new,
    :class:`PushRefused` when the wrong-memory guard was not confirmed,
    :class:`~funes.errors.WriterBusyError` when another push to ``remote`` from this
    memory is running, and :class:`~funes.errors.RemoteError` for the Hub's failures.
    ``purge_history`` squashes the repo's history to the head this push leaves, so no
    earlier commit still holds forgotten sessions.  ``release`` (from
    :mod:`funes.hub.release`) ships only its chunks, all of them or none, and lists the
    release in the commit's ledger and card even when no chunk is new.
    """
    hub_remote = parse_remote(remote)
    location = location or local_memory()
    local = Memory.open(location)
    local.require_rows()
    with _publish_lock(location, hub_remote):
        publication = _Publication(hub_remote, location, local, release)
        report = publication.run(assume_yes=assume_yes, confirm=confirm, max_attempts=max_attempts)
        if purge_history and (report.commit is not None or publication.repo.state() is not None):
            publication.repo.squash_history(f"funes push --purge-history: history squashed to {report.commit or 'head'}")
            report.history_purged = True
            publication.record_squash(publication.repo.require_state().sha)
        return report


def check_remote(receipt: Receipt, location: MemoryLocation) -> dict[str, Any]:
    """What ``receipt``'s remote holds now of what was forgotten or scrubbed in the memory
    at ``location``, asked of the Hub (its head's table, fetched into the HF cache, and its
    commit count) instead of read from the receipt; the keys of
    :meth:`~funes.hub.receipts.Removals.left_on`.  Its history counts as purged when it
    is one commit, or when no push from here removed anything since the last squash."""
    remote = HubRemote(receipt.remote.removeprefix(URI_PREFIX), receipt.endpoint)
    publication = _Publication(remote, location, Memory.open(location))
    state = publication.repo.state()
    table = _RemoteTable.read(publication.repo, state)
    forgotten = publication._retractable(table)
    scrubbed = publication._scrub_outdated(table) - forgotten.keys()
    history_purged = state is None or publication.repo.commit_count() == 1 or not receipt.history_holds_removed
    return {"forgotten_sessions": len(set(forgotten.values())), "scrubbed_chunks": len(scrubbed),
            "history_purged": history_purged, "holds_removed": bool(forgotten or scrubbed or not history_purged),
            "checked": "hub"}


@contextmanager
def _publish_lock(location: MemoryLocation, remote: HubRemote) -> Iterator[None]:
    from filelock import FileLock, Timeout

    path = receipt_path(location, remote).with_suffix(".push.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        raise WriterBusyError(f"another funes push of this memory to {remote.uri} is running; it will ship this too") from exc
    try:
        yield
    finally:
        lock.release()


@dataclass(frozen=True)
class _RemoteTable:
    snapshot: Snapshot
    memory: Memory
    ids: frozenset[str]

    @classmethod
    def read(cls, repo: HubRepo, state: RepoState | None) -> _RemoteTable | None:
        if state is None or not state.has_table:
            return None
        snapshot = fetch_snapshot(repo, state)
        memory = Memory.open(MemoryLocation(uri=str(snapshot.root), label=repo.remote.uri))
        return cls(snapshot, memory, frozenset(memory.scan(["id"]).column("id").to_pylist()))


class _Publication:
    def __init__(self, remote: HubRemote, location: MemoryLocation, local: Memory,
                 release: ReleaseDraft | None = None):
        self.remote = remote
        self.release = release
        self.location = location
        self.local = local
        self.repo = HubRepo(remote)
        self.curation = Curation.load(remote)
        from funes.traces.model import session_key

        exclusions = load_exclusions()  # before anything is read: a broken list ships nothing
        self.sessions = local.scan(tuple(dict.fromkeys((*SESSION_COLUMNS, *ROW_COLUMNS))))
        self.local_ids = frozenset(self.sessions.column("id").to_pylist())
        self.excluded = frozenset(exclusions.excluded_keys(self.sessions))
        self.excluded_ids = frozenset(
            chunk for chunk, harness, session in zip(*(self.sessions.column(c).to_pylist() for c in
                                                       ("id", "harness", "session_id")), strict=True)
            if session_key(harness or "", session) in self.excluded) if self.excluded else frozenset()
        self.receipt = Receipt.load(location, remote)
        self.first_push = self.receipt is None
        # Read before the records: whatever is forgotten or scrubbed after this moment
        # is not in this push, and the receipt must not claim it is.
        self.checked_at = time.time()
        removals = Removals.of(location)
        self.forgotten = frozenset(removals.forgotten)
        self.scrubbed = frozenset(removals.scrubbed)

    def run(self, *, assume_yes: bool, confirm: Callable[[str], bool] | None, max_attempts: int) -> PushReport:
        confirmed = assume_yes
        for attempt in range(1, max_attempts + 1):
            state = self.repo.state()
            remote_table = _RemoteTable.read(self.repo, state)
            report = PushReport(self.remote.uri, attempts=attempt, private=None if state is None else state.private)
            remote_ids = remote_table.ids if remote_table else frozenset()
            if remote_table is not None:
                self._check_model(remote_table.memory)
            retract = self._retractable(remote_table)
            outdated = self._scrub_outdated(remote_table)
            # A scrubbed chunk leaves the remote and its redacted version is a candidate.
            candidates = self._eligible(remote_table, report) - (remote_ids - outdated)
            if self.release is not None:
                candidates &= self.release.ids
            report.already_there = len(self.local_ids & remote_ids)
            if candidates and not confirmed:
                self._guard(remote_ids, candidates, confirm)
                confirmed = True
            report.gate = gate(self.local, candidates)
            publishable = report.gate.publishable
            if self.release is not None and (report.gate.held_chunks or report.gate.awaiting_vectors):
                # A release missing some of its chunks would be published half-way.
                waiting = report.gate.describe_held() or f"{report.gate.awaiting_vectors} chunk(s) without vectors"
                raise NothingPublishable(f"{self.remote.uri}: release {self.release.tag} not published: {waiting};"
                                         " run `funes scrub` or `funes index --yes`, then release again", report)
            if not publishable and not retract and not outdated and self.release is None:
                if report.gate.held_chunks:
                    raise NothingPublishable(f"{self.remote.uri}: nothing published, held back"
                                             f" {report.gate.describe_held()}; run `funes scrub`, then push again",
                                             report)
                if state is not None:
                    self._record(state.sha, remote_ids, removed=False)
                return report
            try:
                self._publish(state, remote_table, publishable, report, retract, outdated)
            except HeadMoved:
                # Another host pushed since we read the head: start again from the new one.
                time.sleep(RETRY_BASE_S * 2 ** (attempt - 1) * random.uniform(0.5, 1.5))
                continue
            self._record(report.commit, (remote_ids - retract.keys() - outdated) | set(publishable),  # type: ignore[arg-type]
                         removed=bool(retract or outdated))
            return report
        raise RemoteError(f"{self.remote.uri} kept moving during {max_attempts} attempts to push; try again")

    # ------------------------------------------------------------------ what ships
    def _check_model(self, remote: Memory) -> None:
        if remote.identity != self.local.identity:
            theirs, ours = remote.identity, self.local.identity
            raise MemoryIncompatibleError(
                f"{self.remote.uri} holds vectors of {theirs['model_id'] or 'an unknown model'}"
                f" ({theirs['revision'][:12] or '?'}, dim {theirs['dim'] or '?'}) but this memory's are"
                f" {ours['model_id']} ({ours['revision'][:12]}, dim {ours['dim']}): push to another repo"
            )

    def _eligible(self, remote_table: _RemoteTable | None, report: PushReport) -> set[str]:
        """The local chunks this remote may receive: all of them, or for a project memory
        the included sessions of its repository."""
        stamped = remote_table.memory.metadata.get(PROJECT_KEY) if remote_table else None
        if stamped and self.curation.project and stamped != self.curation.project:
            raise UsageError(f"{self.remote.uri} is the project memory of {stamped}, but this host's curation"
                             f" names {self.curation.project}: correct {curation_path(self.remote)}")
        report.project = stamped or self.curation.project
        report.excluded = len(self.excluded_ids)
        if report.project is None:
            return set(self.local_ids - self.excluded_ids)
        project = ProjectSessions.from_rows(self.sessions, report.project, self.excluded)
        report.pending_review = project.pending(self.curation, remote_table.ids if remote_table else ())
        return project.admitted(self.curation)

    def _retractable(self, remote_table: _RemoteTable | None) -> dict[str, str]:
        """The remote's chunks of sessions forgotten here: {chunk id: session key}."""
        if remote_table is None or not self.forgotten:
            return {}
        from funes.traces.model import session_key

        rows = remote_table.memory.scan(["id", "harness", "session_id"])
        return {chunk: key for chunk, harness, session in zip(*(rows.column(c).to_pylist() for c in
                                                                  ("id", "harness", "session_id")), strict=True)
                if (key := session_key(harness or "", session)) in self.forgotten}

    def _scrub_outdated(self, remote_table: _RemoteTable | None) -> frozenset[str]:
        """The remote's chunks that `funes scrub` changed here (text replaced or dropped,
        files or commands redacted in place, a result embedded again) and that still differ there in one of those
        columns (a chunk already replaced reads the same on both sides).  A column the
        remote's table lacks (one written before it existed) holds nothing to retract."""
        if remote_table is None or not self.scrubbed:
            return frozenset()
        held = sorted(self.scrubbed & remote_table.ids)
        if not held:
            return frozenset()
        absent = set(remote_table.memory.lacks(SCRUBBED_COLUMNS))
        columns = ("id", *(c for c in SCRUBBED_COLUMNS if c not in absent))

        def values(memory: Memory) -> dict[str, tuple]:
            rows = rows_by_id(memory, held, columns).to_pylist()
            return {row["id"]: tuple(row[c] for c in columns[1:]) for row in rows}

        theirs, ours = values(remote_table.memory), values(self.local)
        return frozenset(chunk for chunk in held if ours.get(chunk) != theirs.get(chunk))

    def _guard(self, remote_ids: frozenset[str], candidates: set[str], confirm: Callable[[str], bool] | None) -> None:
        """A first push to a remote that shares nothing with this memory: ask."""
        if not self.first_push or self.local_ids & remote_ids:
            return
        held = "holds none of this memory's chunks" if remote_ids else "is empty or does not exist yet"
        question = f"{self.remote.uri} {held}; publish {len(candidates)} chunks of this memory there?"
        if confirm is not None and confirm(question):
            return
        raise PushRefused(self.remote.uri, held)

    # ------------------------------------------------------------------ the commit
    def _publish(self, state: RepoState | None, remote_table: _RemoteTable | None, publishable: list[str],
                 report: PushReport, retract: dict[str, str], outdated: frozenset[str]) -> None:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        rows = rows_by_id(self.local, publishable, self.local.dataset.schema.names)
        report.pushed = rows.num_rows
        report.sessions = len(set(zip(rows.column("harness").to_pylist(), rows.column("session_id").to_pylist())))
        report.retracted, report.retracted_sessions = len(retract), len(set(retract.values()))
        report.scrub_retracted = len(outdated - retract.keys())
        removed = sorted(retract.keys() | outdated)
        with tempfile.TemporaryDirectory(prefix="funes-push-") as scratch:
            staging = Path(scratch)
            table = self._stage(staging, remote_table, rows, report.project, removed)
            known = set(remote_table.snapshot.files) if remote_table else set()
            written = sorted(path for path in _files_under(staging) if path not in known and not _mutable(path))
            operations: list[Any] = [CommitOperationAdd(path, str(staging / path)) for path in written]
            if removed and state is not None:
                # The files the new version no longer reads (the rewritten fragments' old data and
                # deletion files) leave the head too: their bytes hold the removed text.
                from funes.hub.snapshot import live_table_files

                live = set(live_table_files(staging / TABLE_DIR, set(state.files) | set(written)))
                stale = sorted(path for path in state.files if path.startswith((f"{TABLE_DIR}/data/",
                                                                              f"{TABLE_DIR}/_deletions/"))
                               and path not in live)
                operations += [CommitOperationDelete(path) for path in stale]
            releases = read_releases(self.repo, state)
            if retract:
                gone = set(retract.values())
                first = next((n for n, release in enumerate(releases) if gone & set(release.added)), len(releases))
                report.releases_holding = [release.tag for release in releases[first:]]
            if self.release is not None:
                from funes.traces.model import session_key

                held = table.to_table(columns=["session_id", "harness", "ts"])
                stats = CardStats.of(held, {})
                keys = [{session_key(h or "", s) for h, s in zip(t.column("harness").to_pylist(),
                                                                 t.column("session_id").to_pylist(), strict=True)}
                        for t in (rows, held)]
                releases = self.release.ledger(releases, self.release.entry(stats.chunks, stats.sessions, keys[0], _now()),
                                               present=keys[1])
                operations.append(CommitOperationAdd(RELEASES_PATH, encode_releases(releases)))
            card = self._card(state, table, report, releases)
            if card is not None:
                operations.append(CommitOperationAdd(CARD_PATH, card.encode("utf-8")))
            if state is None:
                self.repo.create()
                state = self.repo.require_state()
                report.created, report.private = True, state.private
                if state.has_table:
                    raise HeadMoved(f"{self.remote.uri} was created and pushed to meanwhile")
            verb = f"funes release {self.release.tag}" if self.release is not None else "funes push"
            message = f"{verb}: {report.pushed} chunks from {report.sessions} session(s)"
            if retract:
                message += f", {report.retracted} removed from {report.retracted_sessions} forgotten session(s)"
            if report.scrub_retracted:
                message += f", {report.scrub_retracted} scrubbed chunk(s) retracted"
            report.commit = self.repo.commit(operations, parent=state.sha, message=message)

    def _stage(self, staging: Path, remote_table: _RemoteTable | None, rows: pa.Table, project: str | None,
               retract: list[str] = ()) -> Any:
        """The remote's table with the ``retract`` ids removed and ``rows`` appended, in
        ``staging``: its files linked from the HF cache (Lance only ever adds files), the
        new ones written by Lance.  Removed rows are compacted away, so the fragments
        that held them are rewritten without their bytes."""
        import lance

        uri = str(staging / TABLE_DIR)
        if remote_table is None:
            schema = self.local.dataset.schema
            metadata = dict(schema.metadata or {})
            if project:
                metadata[PROJECT_KEY.encode()] = project.encode()
            lance.write_dataset(_conform(rows, schema.with_metadata(metadata)), uri)
            return lance.dataset(uri)
        for path in remote_table.snapshot.files:
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.realpath(remote_table.snapshot.root / path), target)
        dataset = lance.dataset(uri)
        # Delete before inserting: a scrubbed chunk's redacted version keeps its id.
        if retract:
            from funes.memory.sql import sql_in

            for start in range(0, len(retract), 500):
                dataset.delete(sql_in("id", retract[start:start + 500]))
        dataset = lance.dataset(uri)
        missing = missing_fields(dataset.schema)
        if missing:
            # A table pushed by an older funes: give it this funes's columns (null-filled, a
            # metadata-only commit) so the rows appended keep their provenance.
            dataset.add_columns(pa.schema(missing))
            lance.dataset(uri).update_schema_metadata({f"{META_PREFIX}schema_version": SCHEMA_VERSION})
        if rows.num_rows:
            dataset = lance.dataset(uri)
            dataset.merge_insert("id").when_not_matched_insert_all().execute(_conform(rows, dataset.schema))
        dataset = lance.dataset(uri)
        if retract and any(fragment.metadata.deletion_file is not None for fragment in dataset.get_fragments()):
            dataset.optimize.compact_files(materialize_deletions=True, materialize_deletions_threshold=0.0,
                                           target_rows_per_fragment=1 << 30)
        if project and PROJECT_KEY not in remote_table.memory.metadata:
            lance.dataset(uri).update_schema_metadata({PROJECT_KEY: project})
        return lance.dataset(uri)

    def _card(self, state: RepoState | None, table: Any, report: PushReport, releases: list[Release]) -> str | None:
        """The card to commit, or None to keep a hand-written one."""
        if state is not None and CARD_PATH in state.files:
            existing = self.repo.download(CARD_PATH, state.sha).read_text(encoding="utf-8", errors="replace")
            if not is_funes_card(existing):
                report.card = "kept"
                return None
            report.card = "refreshed"
        else:
            report.card = "written"
        from funes.memory.schema import decode_metadata

        stats = CardStats.of(table.to_table(columns=["session_id", "harness", "ts"]), decode_metadata(table.schema))
        return render_card(self.remote, stats, _now(), releases)

    def _record(self, commit: str, remote_ids: set[str] | frozenset[str], *, removed: bool) -> None:
        """Remember what the remote holds of this memory, and see the new head at once.
        ``removed``: this push deleted rows from the head, which its history still holds."""
        held = self.local_ids & frozenset(remote_ids)
        harness, session, ids = (self.sessions.column(name).to_pylist() for name in ("harness", "session_id", "id"))
        from funes.traces.model import session_key

        sessions = frozenset(session_key(h or "", s) for h, s, chunk in zip(harness, session, ids, strict=True)
                             if chunk in held)
        earlier = self.receipt.history_holds_removed if self.receipt is not None else False
        self.receipt = Receipt(remote=self.remote.uri, endpoint=self.remote.endpoint, memory=self.location.uri,
                               commit=commit, pushed_at=_now(), ids=held, sessions=sessions,
                               checked_at=self.checked_at, history_holds_removed=removed or earlier)
        self.receipt.save(self.location, self.remote)
        pin_head(self.remote, commit)

    def record_squash(self, commit: str) -> None:
        """The history was squashed to ``commit``: no earlier commit holds anything."""
        if self.receipt is not None:
            self.receipt = replace(self.receipt, commit=commit, history_holds_removed=False)
            self.receipt.save(self.location, self.remote)
        pin_head(self.remote, commit)


def _conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` in the column order and types of ``schema``; columns it lacks are null."""
    columns = [rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _mutable(path: str) -> bool:
    """Lance's version hint is rewritten by every commit: publishing it would turn each
    push into a modification, and readers find the newest manifest by listing anyway."""
    return path == f"{VERSIONS_DIR}{VERSION_HINT}"


def _files_under(root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file() or path.is_symlink()]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
