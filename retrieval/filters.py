"""Recall filters: parsed and checked once, then turned into a Lance predicate.

Filters the Rust funes lacks (project/workdir, repo, branch, session, dates, the
files a turn touched and the commands it ran) are first-class here.  Every value is
validated up front so a typo is a one-line usage error, not an empty result.

``--file`` and ``--command`` are turn-level: a row qualifies when its turn touched
the file or ran the command (every chunk of a turn carries the turn's provenance:
funes/provenance.py)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta, timezone

from funes.errors import FunesError, UsageError
from funes.memory.sql import quote, sql_in
from funes.projects import Project, project_at, under
from funes.provenance import matches_path, query_paths, recorded_roots, relative_elsewhere
from funes.retrieval.bounds import MAX_NEEDLE_CHARS
from funes.traces.common import workdir_facet
from funes.traces.model import BLOCK_TYPES

ROOT_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")
_RELATIVE = re.compile(r"^(\d+)\s*([hdwmy])$")
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


def file_predicate(forms: tuple[str, ...], roots: tuple[tuple[str, str], ...] = ()) -> str:
    """The row's turn touched a file whose stored path starts with one of ``forms``
    (each stored path follows a newline: funes/provenance.py), or, for each ``(root,
    relative)`` of ``roots``, one starting with ``relative`` in a session run at
    ``root`` or below it."""
    clauses = [f"strpos(files, {quote(chr(10) + form)}) > 0" for form in forms]
    clauses += [f"(strpos(files, {quote(chr(10) + relative)}) > 0 AND {under_predicate(root)})"
                for root, relative in roots]
    return "(" + " OR ".join(clauses) + ")"


def under_predicate(folder: str) -> str:
    """The row's session ran in ``folder`` or below it."""
    return f"(cwd = {quote(folder)} OR strpos(cwd, {quote(folder.rstrip('/') + '/')}) = 1)"


def project_predicate(project: Project) -> str:
    """The row's turn belongs to ``project`` (:meth:`funes.projects.Project.holds`)."""
    clauses = [sql_in("lower(repo)", project.names)] if project.names else []
    if project.tops:
        clauses.append(f"((repo IS NULL OR repo = '') AND ({' OR '.join(map(under_predicate, project.tops))}))")
    return f"({' OR '.join(clauses)})" if clauses else "(1 = 0)"


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
class FilterArgument:
    """One filter as every front end takes it: the parameter name (a Python keyword and
    an MCP tool argument), the CLI flag, the help both show, and the reading commands
    (MCP tools of the same names) that take it.  cli/options.py derives the typer
    options and the MCP tools' parameters from :data:`FILTER_ARGUMENTS`."""

    name: str
    flag: str
    help: str
    commands: tuple[str, ...] = ("recall", "sessions", "scan", "history")
    # A switch (true, false or left out) instead of a text value: its flag for false, and a short flag.
    off_flag: str | None = None
    short: str | None = None


FILTER_ARGUMENTS: tuple[FilterArgument, ...] = (
    FilterArgument("harness", "--harness", "Only this agent's sessions (funes status names the agents)."),
    FilterArgument("block_type", "--type", "text, thinking, tool_use or tool_result.", ("recall", "scan")),
    FilterArgument("here", "--here", "Only this project (--here, -H; true): the repository of the current "
                   "directory, every worktree, clone and moved checkout of it (outside a checkout, this folder). "
                   "--anywhere (false): every project, also for a file filter, which inside a checkout "
                   "otherwise keeps to its project.",
                   off_flag="--anywhere", short="-H"),
    FilterArgument("workdir", "--workdir", "Project directory (or its workdir facet): a prefix match; the top "
                   "folder of a git checkout names its whole repository, as --here does."),
    FilterArgument("repo", "--repo", "owner/name of the git repository (or the root commit of one without "
                   "such a remote)."),
    FilterArgument("branch", "--branch", "Git branch the session ran on."),
    FilterArgument("session", "--session", "One session: its id or a unique prefix (8+ characters)."),
    FilterArgument("since", "--since", "ISO date or span (7d, 2w, 12h)."),
    FilterArgument("until", "--until", "ISO date or span."),
    # `history` takes it too, as its PATH.
    FilterArgument("file", "--file", "Only turns that touched this file (read, edit, write, delete): a path "
                   "relative to the repo root, or a local path; a prefix match, so a folder names its files."),
    FilterArgument("command", "--command", "Only turns that ran a shell command containing this text."),
    FilterArgument("since_release", "--since-release",
                   "Only sessions the releases after this tag added (a Hub memory: org/repo or org/repo@tag).",
                   ("recall",)),
)


def filter_arguments(command: str) -> tuple[FilterArgument, ...]:
    """The filters the reading command (or MCP tool) ``command`` takes, in the table's order."""
    return tuple(argument for argument in FILTER_ARGUMENTS if command in argument.commands)


@dataclass(frozen=True)
class Filters:
    harness: str | None = None
    block_type: str | None = None
    here: bool | None = None  # None: this project only for a --file asked inside a checkout
    workdir: str | None = None  # facet prefix
    repo: str | None = None
    branch: str | None = None
    session: str | None = None
    since: str | None = None
    until: str | None = None
    file: str | None = None  # as given
    command: str | None = None  # a substring of a command the turn ran
    since_release: str | None = None  # a release tag, until `released` turns it into `sessions`
    file_forms: tuple[str, ...] = ()  # the stored path prefixes ``file`` names (provenance.query_paths)
    # (root, relative): ``file`` as recorded by a session run at root (provenance.recorded_roots)
    file_roots: tuple[tuple[str, str], ...] = ()
    project: Project | None = None  # the repository --here or a --file asked inside a checkout keeps to
    implicit: bool = False  # ``project`` comes from a --file asked inside a checkout, not from --here
    checkout: Project | None = None  # the repository --workdir names (its checkout's top folder); see bound
    sessions: tuple[str, ...] | None = None  # only these session ids (`--since-release`); () admits none

    @classmethod
    def parse(cls, *, now: datetime | None = None, cwd: str | None = None, **given: str | bool | None) -> Filters:
        """The filters named in :data:`FILTER_ARGUMENTS`, each checked (None: not given);
        ``cwd`` (default: the process's) is where --here and relative paths are read."""
        cwd = cwd or os.getcwd()
        for argument in FILTER_ARGUMENTS:
            value = given.get(argument.name)
            if isinstance(value, str) and not value.strip():  # never "no filter": a script's unset variable
                raise UsageError(f"{argument.flag} {value!r}: give a value, or leave {argument.flag} out")
        raw = cls(**given)
        canonical = None
        if raw.harness:
            from funes.agents import agent_names, canonical_harness

            canonical = canonical_harness(raw.harness)
            if canonical is None:
                raise UsageError(f"--harness {raw.harness!r}: expected one of {agent_names()}")
        if raw.block_type and raw.block_type not in BLOCK_TYPES:
            raise UsageError(f"--type {raw.block_type!r}: expected one of {', '.join(BLOCK_TYPES)}")
        facet = None
        if raw.workdir:
            # A path or a facet: both become the facet (every non-alphanumeric → "-").
            facet = workdir_facet(raw.workdir.rstrip("/\\") or raw.workdir)
            if not facet:
                raise UsageError(f"--workdir {raw.workdir!r}: expected a directory path or a workdir facet")
        if raw.repo and not (re.fullmatch(r"[^/\s]+/[^/\s]+", raw.repo) or ROOT_COMMIT.fullmatch(raw.repo)):
            raise UsageError(f"--repo {raw.repo!r}: expected owner/name or a root commit's hash")
        start = parse_when(raw.since, flag="--since", now=now) if raw.since else None
        end = parse_when(raw.until, flag="--until", now=now, end_of_day=True) if raw.until else None
        if start and end and start > end:
            raise UsageError(f"--since {raw.since} is after --until {raw.until}")
        for flag, value in (("--file", raw.file), ("--command", raw.command)):
            if value and len(value) > MAX_NEEDLE_CHARS:
                raise UsageError(f"{flag} of {len(value):,} characters: the limit is {MAX_NEEDLE_CHARS:,}")
        project = checkout = None
        implicit = bool(raw.here is None and raw.file and not (raw.workdir or raw.repo or raw.session))
        if raw.here or implicit:
            project = project_at(cwd)
            if raw.here and project is None:  # no checkout: this folder is the project
                facet = facet or workdir_facet(cwd.rstrip("/\\") or cwd)
        folder = os.path.normpath(os.path.join(cwd, os.path.expanduser(raw.workdir or "")))
        if raw.workdir and os.path.isdir(folder):
            named = project_at(folder)
            checkout = named if named is not None and named.top == folder else None
        forms = tuple(query_paths(raw.file, cwd=cwd)) if raw.file else ()
        # An absolute path in no checkout here: maybe as a session elsewhere recorded it.
        roots = tuple(recorded_roots(forms[0])) if len(forms) == 1 and forms[0].startswith("/") else ()
        return replace(raw, harness=canonical, workdir=facet, since=start, until=end, file_forms=forms,
                       file_roots=roots, project=project, implicit=implicit and project is not None,
                       checkout=checkout)

    def touches(self, path: str, cwd: str | None) -> bool:
        """A stored ``path`` of a turn run in ``cwd`` is one the file filter names."""
        return matches_path(path, self.file_forms) or any(
            path.startswith(relative) and under(cwd, root) for root, relative in self.file_roots)

    def released(self, memory) -> Filters:
        """``since_release`` resolved against ``memory``: the sessions the releases after
        that tag added (a memory read from the Hub lists its releases).  `bound` does it
        for every read; a batch of recalls calls it first, so the releases are read once
        and a tag the memory lacks stops the whole batch."""
        if self.since_release is None:
            return self
        from funes.hub.reader import release_sessions

        return replace(self, since_release=None, sessions=release_sessions(memory.location, self.since_release))

    def bound(self, memory) -> Filters:
        """These filters for reading ``memory``: the session prefix resolved to its id;
        a file or command filter on a memory written before funes stored them is a
        one-line error saying how to migrate it."""
        filters = self.released(memory)
        if self.checkout is not None:  # a checkout's top folder names its repository: any worktree or clone
            filters = replace(filters, workdir=None, checkout=None, project=self.project or self.checkout)
        if filters.project is not None and memory.lacks(("cwd",)):  # the Rust funes's: folders unknown
            filters = replace(filters, project=replace(filters.project, tops=()))
        if filters.implicit and not memory.count(project_predicate(filters.project)):
            # The memory holds nothing of this project: no other project's file to keep apart from.
            filters = replace(filters, project=None, implicit=False)
        if filters.project is not None and filters.file_roots:
            # A path another checkout of this project recorded, asked for in this one.
            relative = relative_elsewhere(filters.file_forms[0], filters.project.tops)
            if relative:
                filters = replace(filters, file_forms=(*filters.file_forms, relative))
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
        equal = {"harness": self.harness, "block_type": self.block_type, "branch": self.branch,
                 "session_id": self.session}
        clauses = [f"{column} = {quote(value)}" for column, value in equal.items() if value]
        if self.workdir:
            # Facets hold only [A-Za-z0-9-], so LIKE needs no escaping.
            clauses.append(f"workdir LIKE {quote(self.workdir + '%')}")
        if self.repo:
            clauses.append(f"strpos(lower(repo), {quote(self.repo.lower())}) = 1" if ROOT_COMMIT.fullmatch(self.repo)
                           else f"lower(repo) = {quote(self.repo.lower())}")
        if self.project:
            clauses.append(project_predicate(self.project))
        clauses += [f"ts {operator} {quote(bound)}" for operator, bound in ((">=", self.since), ("<=", self.until))
                    if bound]
        if self.file_forms:
            clauses.append(file_predicate(self.file_forms, self.file_roots))
        if self.command:
            clauses.append(command_predicate(self.command))
        if self.sessions is not None:
            clauses.append(sql_in("session_id", self.sessions or [""]))
        return " AND ".join(clauses) if clauses else None
