"""A project is its repository, not its folder.

Worktrees, clones and moved checkouts of one repository are one project.  The memory
records a session's repository in its ``repo`` column when it is indexed
(funes/traces/common.py): ``owner/name`` from a remote, else the checkout's root
commit.  A checkout here is known by both (a clone whose ``origin`` is a local path
records the root commit, the checkout it was cloned from its ``owner/name``), and,
for turns indexed with no repository (an older memory, a folder that was not yet a
checkout), by the folders of every worktree of the repository on this machine.

:func:`project_at` reads what a checkout here is known by: its remote from
``.git/config``, its branch from ``HEAD``, its worktrees from ``.git/worktrees``, and
its root commit with one git call (cached per process)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from funes.provenance import checkout_root
from funes.traces.common import checkout_identity, clean_branch, git_dirs, root_commit


@dataclass(frozen=True)
class Project:
    top: str  # the top folder of the checkout asked about
    names: tuple[str, ...]  # lower case: owner/name, the root commit (what `repo` may hold)
    tops: tuple[str, ...]  # the top folder of every worktree of the repository here
    branch: str | None  # the branch checked out at ``top`` now

    @property
    def label(self) -> str:
        return self.names[0] if self.names else self.top

    def holds(self, repo: str | None, cwd: str | None) -> bool:
        """A turn recorded with ``repo`` (else run in ``cwd``) belongs to this project
        (the SQL of it: funes.retrieval.filters.project_predicate)."""
        if repo:
            return repo.lower() in self.names
        return any(under(cwd, top) for top in self.tops)


def under(cwd: str | None, folder: str) -> bool:
    """A session run in ``cwd`` ran in ``folder`` or below it (the SQL of it:
    funes.retrieval.filters.under_predicate)."""
    return bool(cwd) and (cwd == folder or cwd.startswith(folder.rstrip("/") + "/"))


def project_at(path: str) -> Project | None:
    """The project of the git checkout holding ``path`` on this machine, or None."""
    top = checkout_root(path)
    if top is None:
        return None
    top = posixpath.normpath(top)
    remote, _ = checkout_identity(top)
    names = tuple(dict.fromkeys(name.lower() for name in (remote, root_commit(top)) if name))
    tops, branch = _worktrees(top)
    return Project(top=top, names=names, tops=tops, branch=branch)


def _worktrees(top: str) -> tuple[tuple[str, ...], str | None]:
    """(the top folder of every worktree of ``top``'s repository, ``top`` first; the
    branch checked out at ``top``), read from the git directories themselves."""
    found = [top]
    branch = None
    try:
        dirs = git_dirs(Path(top))
        if dirs is None:
            return (top,), None
        own, common = dirs
        head = (own / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if head.startswith("ref: refs/heads/"):
            branch = clean_branch(head.removeprefix("ref: refs/heads/"))
        if common.name == ".git":
            found.append(str(common.parent))
        for pointer in sorted((common / "worktrees").glob("*/gitdir")):
            found.append(str(Path(pointer.read_text(encoding="utf-8", errors="replace").strip()).parent))
    except OSError:
        pass
    return tuple(dict.fromkeys(posixpath.normpath(folder) for folder in found)), branch
