"""Project memories and the curation that feeds them.

A remote is the *project memory* of a repository (``owner/name``) once ``funes curate``
names it so; the name is then stamped into the remote table's schema metadata
(``funes.project``) by the next push, so every host pushing there learns it.  A push to a
project memory ships only the sessions of that repository that this host marked
``include``: a session nobody reviewed stays local, so neither a new session nor an early
push leaks one.  Any other remote is a personal memory and receives everything.

Decisions are this host's (each host publishes only its own sessions) and live in a
file people and agents can edit, ``$FUNES_HOME/curation/<endpoint>/<org>/<repo>``::

    project acme/app
    include 0b1c…  42   # reviewed at 42 chunks
    exclude 9f3e…       # internal pitch, stays private

An ``include`` records how many chunks the session had when reviewed: a session that grew
since is held until reviewed again, as a new commit dismisses a PR review.  Sub-agent
sessions follow the decision on their parent.  The remote is append-only: a decision
prevents, it never retracts what already shipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from funes.config import funes_home
from funes.errors import UsageError
from funes.files import write_atomically
from funes.hub.repo import HubRemote
from funes.memory.schema import META_PREFIX
from funes.memory.reader import Memory

PROJECT_KEY = f"{META_PREFIX}project"
SESSION_COLUMNS = ("id", "session_id", "repo", "parent_session_id", "is_subagent")


def curation_path(remote: HubRemote) -> Path:
    return funes_home() / "curation" / remote.key


@dataclass
class Curation:
    remote: HubRemote
    project: str | None = None
    included: dict[str, int | None] = field(default_factory=dict)  # session → chunks when reviewed
    excluded: set[str] = field(default_factory=set)
    comments: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, remote: HubRemote) -> Curation:
        curation = cls(remote)
        try:
            lines = curation_path(remote).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return curation
        for line in lines:
            body, _, comment = line.partition("#")
            words = body.split()
            # An unreadable line decides nothing: its session stays held, never shipped.
            if len(words) == 2 and words[0] == "project":
                curation.project = words[1]
            elif len(words) in (2, 3) and words[0] == "include":
                count = int(words[2]) if len(words) == 3 and words[2].isdigit() else None
                curation.included[words[1]] = count
            elif len(words) == 2 and words[0] == "exclude":
                curation.excluded.add(words[1])
            else:
                continue
            if comment.strip() and len(words) >= 2 and words[0] != "project":
                curation.comments[words[1]] = comment.strip()
        return curation

    def save(self) -> None:
        path = curation_path(self.remote)
        lines = [f"# funes curation for {self.remote.uri} on {self.remote.endpoint}: this host's decisions",
                 "# include <session> [chunks reviewed] | exclude <session>; '#' starts a comment"]
        if self.project:
            lines.append(f"project {self.project}")
        for session, count in sorted(self.included.items()):
            lines.append(_with_comment(f"include {session}" + ("" if count is None else f" {count}"),
                                       self.comments.get(session)))
        for session in sorted(self.excluded):
            lines.append(_with_comment(f"exclude {session}", self.comments.get(session)))
        write_atomically(path, "\n".join(lines) + "\n")

    def name_project(self, project: str) -> None:
        if self.project and self.project != project:
            raise UsageError(f"{self.remote.uri} is the project memory of {self.project}, not {project}")
        self.project = project

    def include(self, session: str, chunks: int) -> None:
        self.excluded.discard(session)
        self.included[session] = chunks

    def exclude(self, session: str) -> None:
        self.included.pop(session, None)
        self.excluded.add(session)

    def admits(self, session: str, chunks: int) -> bool:
        """Included, and not grown since it was reviewed."""
        if session not in self.included:
            return False
        reviewed = self.included[session]
        return reviewed is None or chunks <= reviewed

    def decided(self, session: str, chunks: int) -> bool:
        return session in self.excluded or self.admits(session, chunks)


def _with_comment(line: str, comment: str | None) -> str:
    return f"{line}   # {comment}" if comment else line


@dataclass(frozen=True)
class ProjectSessions:
    """The local sessions of one repository: chunk ids per top-level session, with the
    sub-agent sessions folded into their parent's."""

    chunks: dict[str, list[str]]  # top-level session → chunk ids (its sub-agents' included)
    own_chunks: dict[str, int]  # top-level session → its own chunk count (what a review covers)

    @classmethod
    def of(cls, memory: Memory, project: str) -> ProjectSessions:
        """The project's sessions in ``memory``, those on the exclusion list left out."""
        from funes.exclusion import ROW_COLUMNS, load_exclusions

        rows = memory.scan(tuple(dict.fromkeys((*SESSION_COLUMNS, *ROW_COLUMNS))))
        return cls.from_rows(rows, project, load_exclusions().excluded_keys(rows))

    @classmethod
    def from_rows(cls, rows: pa.Table, project: str, excluded: Set[str] = frozenset()) -> ProjectSessions:
        """``excluded``: session keys (:func:`funes.traces.model.session_key`) left out."""
        from funes.traces.model import session_key

        chunks: dict[str, list[str]] = {}
        own: dict[str, int] = {}
        for row in rows.to_pylist():
            if row["repo"] != project or (excluded and session_key(row["harness"] or "", row["session_id"]) in excluded):
                continue
            top = row["parent_session_id"] if row["is_subagent"] and row["parent_session_id"] else row["session_id"]
            chunks.setdefault(top, []).append(row["id"])
            if top == row["session_id"]:
                own[top] = own.get(top, 0) + 1
        return cls(chunks, {session: own.get(session, 0) for session in chunks})

    def admitted(self, curation: Curation) -> set[str]:
        """Chunk ids a push may ship."""
        return {chunk for session, ids in self.chunks.items()
                if curation.admits(session, self.own_chunks[session]) for chunk in ids}

    def pending(self, curation: Curation, remote_ids: Iterable[str] = ()) -> list[str]:
        """Sessions awaiting a decision (none yet, or grown since) that hold chunks the
        remote lacks."""
        present = set(remote_ids)
        return sorted(session for session, ids in self.chunks.items()
                      if not curation.decided(session, self.own_chunks[session])
                      and any(chunk not in present for chunk in ids))

    def resolve(self, prefix: str) -> str:
        """The session a (possibly shortened) id names."""
        if prefix in self.chunks:
            return prefix
        matches = [session for session in self.chunks if session.startswith(prefix)]
        if len(matches) != 1:
            known = "several sessions" if matches else "no session"
            raise UsageError(f"{prefix!r} names {known} of this project in the local memory")
        return matches[0]
