"""Stale marks: what has moved on in the checkout since a recalled turn ran.

A hit's turn records the files its tool calls touched (funes/provenance.py) and the
branch it ran on.  When the query runs inside a git checkout of the hit's project
(funes/projects.py), each hit says which of those files have commits after the
turn's time or are gone from the checkout, and whether the turn ran on another
branch than the one checked out now.

Cheap by construction: only the hits of one answer, and one `git log` for all of
them (the commit times of every file they touched, since the oldest hit), capped at
:data:`GIT_TIMEOUT_S`; a git that is missing, fails or runs out of time marks
nothing, so a hit never claims what was not checked."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from funes.projects import Project, project_at
from funes.provenance import relative_elsewhere
from funes.retrieval.search import Hit

GIT_TIMEOUT_S = 1.5
LISTED = 3  # files named on a hit's line in the agent format; --json lists them all


@dataclass
class Stale:
    """What changed since one hit's turn, in the checkout the query ran in."""

    changed: dict[str, int] = field(default_factory=dict)  # path → commits to it since the turn
    gone: list[str] = field(default_factory=list)  # touched then, absent from the checkout now
    branch: str | None = None  # the turn's branch, when the checkout is on another
    checkout_branch: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"changed": [{"path": path, "commits": count} for path, count in self.changed.items()],
                "gone": self.gone, "other_branch": self.branch, "checkout_branch": self.checkout_branch}

    def line(self) -> str | None:
        """The hit's mark in the agent format, or None when nothing moved on."""
        notes = [f"{path} +{count} commit{'s' if count != 1 else ''}" for path, count in self.changed.items()]
        notes += [f"{path} gone" for path in self.gone]
        parts = []
        if notes:
            more = f", {len(notes) - LISTED} more" if len(notes) > LISTED else ""
            parts.append("since: " + ", ".join(notes[:LISTED]) + more)
        if self.branch:
            parts.append(f"ran on {self.branch}, checkout on {self.checkout_branch or 'a detached HEAD'}")
        return "; ".join(parts) or None


def mark_stale(hits: list[Hit], cwd: str | None = None) -> None:
    """Set ``hit.stale`` on each hit of the project of the checkout at ``cwd``
    (default: the process's); the others, and all of them when there is no checkout
    or git does not answer in time, keep None."""
    project = project_at(cwd or os.getcwd())
    if project is None:
        return
    mine = [hit for hit in hits if project.holds(hit.repo, hit.cwd)]
    if not mine:
        return
    paths = {id(hit): _checkout_paths(hit, project) for hit in mine}
    wanted = sorted({path for found in paths.values() for path in found.values()})
    since = [moment for hit in mine if (moment := _epoch(hit.ts)) is not None and paths[id(hit)]]
    commits = _commit_times(project.top, wanted, min(since)) if wanted and since else {}
    if commits is None:
        return
    for hit in mine:
        moment = _epoch(hit.ts)
        mark = Stale(checkout_branch=project.branch)
        if hit.branch and project.branch != hit.branch:
            mark.branch = hit.branch
        touched = {entry["path"]: entry["actions"] for entry in hit.files}
        for stored, here in paths[id(hit)].items():
            if not os.path.lexists(os.path.join(project.top, here)):
                if "delete" not in touched.get(stored, ()):
                    mark.gone.append(stored)
            elif moment is not None:
                count = sum(1 for when in commits.get(here, ()) if when > moment)
                if count:
                    mark.changed[stored] = count
        hit.stale = mark


def _checkout_paths(hit: Hit, project: Project) -> dict[str, str]:
    """The hit's touched files (as stored) → their path in the checkout, for those in it."""
    found = {}
    for entry in hit.files:
        stored = entry["path"]
        if not stored.startswith("/"):
            found[stored] = stored
            continue
        for top in project.tops:
            if stored.startswith(top.rstrip("/") + "/"):
                found[stored] = stored[len(top.rstrip("/")) + 1:]
                break
        else:  # a path recorded in another checkout of the repository
            relative = relative_elsewhere(stored, project.tops)
            if relative:
                found[stored] = relative
    return found


def _commit_times(top: str, paths: list[str], since: float) -> dict[str, list[float]] | None:
    """Path → the commit times (epoch seconds) of the commits to it after ``since``,
    from one `git log`; None when git is missing, fails or runs out of time."""
    try:
        done = subprocess.run(
            ["git", "-C", top, "-c", "core.quotepath=off", "log",
             f"--since={datetime.fromtimestamp(since, timezone.utc):%Y-%m-%dT%H:%M:%SZ}", "--format=%x1e%ct",
             "--name-only", "--no-renames", "--", *paths],
            capture_output=True, text=True, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    times: dict[str, list[float]] = {}
    for record in done.stdout.split("\x1e")[1:]:
        stamp, *names = record.strip().split("\n")
        for name in names:
            if name:
                times.setdefault(name, []).append(float(stamp))
    return times


def _epoch(ts: str | None) -> float | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() if ts else None
    except ValueError:
        return None
