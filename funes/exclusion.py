"""What must never be kept: the user's exclusion list, and whether a session is on it.

The list is one plain-text file, ``$FUNES_HOME/exclude`` (:func:`exclusion_path`), one
pattern a line, ``#`` starting a comment; `funes exclude add/remove` edit it and a user
may edit it by hand.  A pattern is one of:

* a folder, absolute or ``~/…``: the sessions run in it or below it (their recorded cwd);
* ``owner/name``: the sessions of that repository (the ``repo`` provenance records),
  case-insensitive, ``*`` and ``?`` allowed (``my-client/*``);
* a glob starting with ``/``, ``~`` or ``*``: the sessions whose cwd or transcript path
  it matches (``*`` also matches ``/``: ``*/client-*/*``).

A matching session is kept out of every memory from the moment it is listed: indexing
(:func:`funes.indexing.parse_stage`, which `funes index`, `funes add`, the hook worker
and the Dagster assets all run) drops it before a byte of it is chunked or stored, and
every push drops its chunks already in the memory (:mod:`funes.hub.push`).  A list that
cannot be read is an error, never an empty list: nothing is indexed or pushed until it
is fixed (fail-closed)."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from funes.config import funes_home
from funes.errors import UsageError
from funes.files import write_atomically
from funes.traces.model import Session, session_key

EXCLUDE_FILE = "exclude"
_GLOB = re.compile(r"[*?\[]")
_REPO = re.compile(r"[A-Za-z0-9_.*?-]+/[A-Za-z0-9_.*?-]+")
HEADER = ("# funes exclude: sessions never kept in a memory nor pushed; one pattern a line, '#' starts a comment\n"
          "# a folder (/abs or ~/…: the sessions run in or below it), owner/name (a repository), or a glob\n"
          "# (/…, ~… or *…) over a session's cwd and transcript path; edit by hand or with `funes exclude`\n")


# The memory's columns :meth:`Exclusions.excluded_keys` reads.
ROW_COLUMNS = ("harness", "session_id", "cwd", "repo", "source_path")


def exclusion_path() -> Path:
    return funes_home() / EXCLUDE_FILE


@dataclass(frozen=True, slots=True)
class Pattern:
    text: str  # as written in the file
    kind: str  # "folder", "repo" or "glob"

    @classmethod
    def parse(cls, text: str, where: str = "") -> Pattern:
        """``text`` read as a pattern; a one-line :class:`UsageError` (naming ``where``)
        when it is none."""
        text = text.strip()
        at = f"{where}: " if where else ""
        if not text:
            raise UsageError(f"{at}empty pattern: give a folder, owner/name or a glob")
        if not text.isprintable():
            raise UsageError(f"{at}pattern {text!r} holds a control character")
        if text.startswith(("/", "~", "*")):
            if text.count("[") != text.count("]"):
                raise UsageError(f"{at}pattern {text!r} has an unclosed '['")
            return cls(text, "glob" if _GLOB.search(text) else "folder")
        if _REPO.fullmatch(text):
            return cls(text, "repo")
        raise UsageError(f"{at}{text!r} is not a folder (/… or ~/…, ./… from here), owner/name or glob (/…, ~…, *…)")

    def _expanded(self) -> str:
        return os.path.expanduser(self.text) if self.text.startswith("~") else self.text

    def matches(self, *, cwd: str | None, repo: str | None, transcript: str | None) -> bool:
        if self.kind == "repo":
            return bool(repo) and fnmatch.fnmatchcase(repo.lower(), self.text.lower())
        if self.kind == "folder":
            folder = self._expanded().rstrip("/") or "/"
            return bool(cwd) and (cwd == folder or cwd.startswith(folder if folder == "/" else folder + "/"))
        pattern = self._expanded()
        return any(value and fnmatch.fnmatchcase(value, pattern) for value in (cwd, transcript))


@dataclass(frozen=True, slots=True)
class Exclusions:
    patterns: tuple[Pattern, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def excludes(self, *, cwd: str | None = None, repo: str | None = None, transcript: str | None = None) -> bool:
        return any(p.matches(cwd=cwd, repo=repo, transcript=transcript) for p in self.patterns)

    def excludes_transcript(self, path: Path | str) -> bool:
        """Known before parsing: a glob matches the transcript's path."""
        return any(p.kind == "glob" and p.matches(cwd=None, repo=None, transcript=str(path)) for p in self.patterns)

    def excludes_session(self, session: Session) -> bool:
        return self.excludes(cwd=session.cwd, repo=session.repo, transcript=session.source_path)

    def excluded_keys(self, rows) -> set[str]:
        """The session keys among ``rows`` (a pyarrow table with ``harness``,
        ``session_id``, ``cwd``, ``repo`` and ``source_path``) that are excluded."""
        if not self.patterns or rows.num_rows == 0:
            return set()
        columns = [rows.column(name).to_pylist() for name in ROW_COLUMNS]
        return {session_key(harness or "", session) for harness, session, cwd, repo, source in zip(*columns, strict=True)
                if self.excludes(cwd=cwd, repo=repo, transcript=source)}


_cache: dict[str, tuple[tuple[int, int], Exclusions]] = {}


def load_exclusions(path: Path | None = None) -> Exclusions:
    """The exclusion list (empty when the file does not exist), re-read only when the
    file changed (a hook worker lives for minutes).  A line that is no pattern raises
    :class:`UsageError` naming the file and line."""
    path = path or exclusion_path()
    try:
        stat = path.stat()
    except FileNotFoundError:
        return Exclusions()
    except OSError as exc:
        raise UsageError(f"cannot read the exclusion list {path}: {exc.strerror or exc}") from None
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _cache.get(str(path))
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the exclusion list {path}: {getattr(exc, 'strerror', None) or exc}") from None
    patterns = []
    for number, line in enumerate(text.splitlines(), 1):
        body = line.partition("#")[0].strip()
        if body:
            patterns.append(Pattern.parse(body, f"{path}:{number}"))
    exclusions = Exclusions(tuple(patterns))
    _cache[str(path)] = (stamp, exclusions)
    return exclusions


def normalised(text: str, cwd: Path | None = None) -> str:
    """A pattern as `funes exclude add` stores it: ``.`` and ``./…``/``../…`` made
    absolute from ``cwd`` (the file must not depend on where it is read from)."""
    text = text.strip()
    if text in (".", "..") or text.startswith(("./", "../")):
        return str(((cwd or Path.cwd()) / text).resolve())
    return text


def add_patterns(texts: Iterable[str], path: Path | None = None) -> list[Pattern]:
    """Append the patterns not yet listed (the file's other lines kept as written);
    the patterns added."""
    path = path or exclusion_path()
    current = load_exclusions(path)
    wanted = [Pattern.parse(normalised(text), "funes exclude add") for text in texts]
    listed = {p.text for p in current.patterns}
    added = [p for p in dict.fromkeys(wanted) if p.text not in listed]
    if added:
        try:
            existing = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            existing = HEADER
        if existing and not existing.endswith("\n"):
            existing += "\n"
        write_atomically(path, existing + "".join(f"{p.text}\n" for p in added))
    return added


def remove_pattern(text: str, path: Path | None = None) -> int:
    """Remove the lines whose pattern is ``text`` (comments and other lines kept); how
    many were removed (0: it was not listed)."""
    path = path or exclusion_path()
    load_exclusions(path)  # a broken file is refused before it is rewritten
    wanted = normalised(text)
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return 0
    kept = [line for line in lines if line.partition("#")[0].strip() != wanted]
    if len(kept) != len(lines):
        write_atomically(path, "".join(kept))
    return len(lines) - len(kept)


def excluded_in(table, exclusions: Exclusions) -> list[str]:
    """The keys of the sessions in ``table`` (a memory's Lance table) that
    ``exclusions`` matches: what `funes exclude add` offers to forget."""
    if not exclusions:
        return []
    rows = table.search().select(list(ROW_COLUMNS)).limit(None).to_arrow()
    return sorted(exclusions.excluded_keys(rows))
