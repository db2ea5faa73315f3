"""Recall filters: parsed and checked once, then turned into a Lance predicate.

Filters the Rust funes lacks (project/workdir, repo, branch, session, dates, the
files a turn touched and the commands it ran) are first-class here.  Every value is
validated up front so a typo is a one-line usage error, not an empty result.

``--file`` and ``--command`` are turn-level: a row qualifies when its turn touched
the file or ran the command (every chunk of a turn carries the turn's provenance:
funes/provenance.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta, timezone

from funes.errors import FunesError, UsageError
from funes.memory.sql import quote, sql_in
from funes.provenance import query_paths
from funes.retrieval.bounds import MAX_NEEDLE_CHARS
from funes.traces.common import workdir_facet
from funes.traces.model import BLOCK_TYPES

_RELATIVE = re.compile(r"^(\d+)\s*([hdwmy])$")
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


def file_predicate(forms: tuple[str, ...]) -> str:
    """The row's turn touched a file whose stored path starts with one of ``forms``
    (each stored path follows a newline: funes/provenance.py)."""
    return "(" + " OR ".join(f"strpos(files, {quote(chr(10) + form)}) > 0" for form in forms) + ")"


def command_predicate(text: str) -> str:
    """The row's turn ran a command containing ``text``."""
    return f"strpos(commands, {quote(text)}) > 0"


def parse_when(value: str, *, flag: str, now: datetime | None = None, end_of_day: bool = False) -> str:
    """An ISO date/time or a relative span (``7d``, ``2w``, ``12h``, ``3m``, ``1y``)
    as the RFC 3339 UTC string stored in ``ts`` (so it compares as text)."""
    now = now or datetime.now(timezone.utc)
    text = value.strip().lower()
    match = _RELATIVE.match(text)
    if match:
        moment = now - timedelta(days=int(match.group(1)) * _UNIT_DAYS[match.group(2)])
    else:
        try:
            raw = value.strip()
            moment = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
        except ValueError:
            raise UsageError(
                f"{flag} {value!r}: expected an ISO date (2026-05-01), a date and time, or a span like 7d, 2w, 12h"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        if end_of_day and len(raw) == 10:  # a bare date in --until includes that whole day
            moment += timedelta(days=1) - timedelta(milliseconds=1)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class Filters:
    harness: str | None = None
    block_type: str | None = None
    workdir: str | None = None  # facet prefix
    repo: str | None = None
    branch: str | None = None
    session: str | None = None
    since: str | None = None
    until: str | None = None
    file: str | None = None  # as given
    command: str | None = None  # a substring of a command the turn ran
    file_forms: tuple[str, ...] = ()  # the stored path prefixes ``file`` names (provenance.query_paths)
    sessions: tuple[str, ...] | None = None  # only these session ids (`--since-release`); () admits none

    @classmethod
    def parse(
        cls,
        *,
        harness: str | None = None,
        block_type: str | None = None,
        workdir: str | None = None,
        repo: str | None = None,
        branch: str | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        file: str | None = None,
        command: str | None = None,
        now: datetime | None = None,
    ) -> Filters:
        given = {"--harness": harness, "--type": block_type, "--workdir": workdir, "--repo": repo,
                 "--branch": branch, "--session": session, "--since": since, "--until": until,
                 "--file": file, "--command": command}
        for flag, value in given.items():
            if value is not None and not value.strip():  # never "no filter": a script's unset variable
                raise UsageError(f"{flag} {value!r}: give a value, or leave {flag} out")
        canonical = None
        if harness:
            from funes.agents import agent_names, canonical_harness

            canonical = canonical_harness(harness)
            if canonical is None:
                raise UsageError(f"--harness {harness!r}: expected one of {agent_names()}")
        if block_type and block_type not in BLOCK_TYPES:
            raise UsageError(f"--type {block_type!r}: expected one of {', '.join(BLOCK_TYPES)}")
        facet = None
        if workdir:
            # A path or a facet: both become the facet (every non-alphanumeric → "-").
            facet = workdir_facet(workdir.rstrip("/\\") or workdir)
            if not facet:
                raise UsageError(f"--workdir {workdir!r}: expected a directory path or a workdir facet")
        if repo and not re.fullmatch(r"[^/\s]+/[^/\s]+", repo):
            raise UsageError(f"--repo {repo!r}: expected owner/name")
        start = parse_when(since, flag="--since", now=now) if since else None
        end = parse_when(until, flag="--until", now=now, end_of_day=True) if until else None
        if start and end and start > end:
            raise UsageError(f"--since {since} is after --until {until}")
        for flag, value in (("--file", file), ("--command", command)):
            if value and len(value) > MAX_NEEDLE_CHARS:
                raise UsageError(f"{flag} of {len(value):,} characters: the limit is {MAX_NEEDLE_CHARS:,}")
        forms = tuple(query_paths(file)) if file else ()
        return cls(canonical, block_type or None, facet, repo or None, branch or None, session or None, start, end,
                   file or None, command or None, forms)

    def bound(self, memory) -> Filters:
        """These filters for reading ``memory``: the session prefix resolved to its id;
        a file or command filter on a memory written before funes stored them is a
        one-line error saying how to migrate it."""
        filters = self
        if self.session:
            filters = replace(filters, session=memory.resolve_session(self.session))
        if (self.file or self.command) and memory.lacks(("files", "commands")):
            flag = "--file" if self.file else "--command"
            raise FunesError(f"memory at {memory.location.label} was written before funes recorded the files and "
                             f"commands of turns, so {flag} cannot filter it: run `funes index` once to add them "
                             "(turns indexed before then have none)")
        return filters

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self)) or self.sessions is not None

    def where(self) -> str | None:
        """The Lance SQL predicate, or None when nothing is filtered."""
        clauses = []
        if self.harness:
            clauses.append(f"harness = {quote(self.harness)}")
        if self.block_type:
            clauses.append(f"block_type = {quote(self.block_type)}")
        if self.workdir:
            # Facets hold only [A-Za-z0-9-], so LIKE needs no escaping.
            clauses.append(f"workdir LIKE {quote(self.workdir + '%')}")
        if self.repo:
            clauses.append(f"lower(repo) = {quote(self.repo.lower())}")
        if self.branch:
            clauses.append(f"branch = {quote(self.branch)}")
        if self.session:
            clauses.append(f"session_id = {quote(self.session)}")
        if self.since:
            clauses.append(f"ts >= {quote(self.since)}")
        if self.until:
            clauses.append(f"ts <= {quote(self.until)}")
        if self.file_forms:
            clauses.append(file_predicate(self.file_forms))
        if self.command:
            clauses.append(command_predicate(self.command))
        if self.sessions is not None:
            clauses.append(sql_in("session_id", self.sessions or [""]))
        return " AND ".join(clauses) if clauses else None
