"""Helpers every parser shares: facets, timestamps, tool-input JSON, repo identity."""

from __future__ import annotations

import configparser
import json
import re
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from funes.traces.model import Session

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def workdir_facet(cwd: str | None, fallback: str = "") -> str:
    """The cwd with every non-alphanumeric character replaced by ``-``.

    This equals Claude Code's project-folder name, so facets agree across agents.
    A cwd with nothing but separators ("", "/") counts as no cwd: ``fallback``.
    """
    if cwd:
        facet = _NON_ALNUM.sub("-", cwd)
        if facet.strip("-"):
            return facet
    return fallback


def compact_json(value: Any) -> str:
    """Tool input as compact JSON in source key order (the stored tool_use text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_input_text(value: Any) -> str:
    """A tool call's arguments: a JSON string passes through verbatim, anything else
    becomes compact JSON, and missing input is ``{}``."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return compact_json(value)


def format_ts(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def normalize_ts(value: Any) -> str:
    """RFC 3339 UTC with milliseconds, from an ISO string, epoch milliseconds or
    epoch seconds; "" when the value cannot be read as a time."""
    if value is None or isinstance(value, bool):
        return ""
    try:
        if isinstance(value, (int, float)):
            seconds = float(value)
            if abs(seconds) > 1e11:  # epoch milliseconds (pi message timestamps)
                seconds /= 1000.0
            return format_ts(datetime.fromtimestamp(seconds, tz=timezone.utc))
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return ""
            if text[-1] in "zZ":
                text = text[:-1] + "+00:00"
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            return format_ts(moment)
    except (ValueError, OverflowError, OSError):
        return ""
    return ""


def clean_branch(value: Any) -> str | None:
    """A recorded git branch, or None for detached ("HEAD") and empty values."""
    if isinstance(value, str):
        value = value.strip()
        if value and value != "HEAD":
            return value
    return None


_REMOTE_URL = re.compile(r"(?:[:/])([^/:]+)/([^/]+?)(?:\.git)?/?$")


def repo_from_remote_url(url: str) -> str | None:
    """``owner/name`` from a git remote URL (https, ssh or scp-like)."""
    match = _REMOTE_URL.search(url.strip())
    if not match:
        return None
    return f"{match.group(1)}/{match.group(2)}"


def _git_dir(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                git_dir = Path(text[len("gitdir:"):].strip())
                if not git_dir.is_absolute():
                    git_dir = (folder / git_dir).resolve()
                common = git_dir / "commondir"
                if common.is_file():
                    git_dir = (git_dir / common.read_text().strip()).resolve()
                return git_dir
    return None


@lru_cache(maxsize=1024)
def repo_identity(cwd: str) -> str | None:
    """``owner/name`` of the checkout containing ``cwd``, from its ``origin`` remote
    (else its first remote); None when the cwd no longer exists or has no remote.
    Reads .git/config directly: no subprocess on the indexing path."""
    if not cwd:
        return None
    try:
        start = Path(cwd)
        if not start.is_dir():
            return None
        git_dir = _git_dir(start)
        if git_dir is None:
            return None
        config = configparser.ConfigParser(strict=False, interpolation=None)
        config.read(git_dir / "config", encoding="utf-8")
    except (OSError, configparser.Error):
        return None
    urls = {}
    for section in config.sections():
        match = re.fullmatch(r'remote "(.+)"', section)
        if match and config.has_option(section, "url"):
            urls[match.group(1)] = config.get(section, "url")
    url = urls.get("origin") or next(iter(urls.values()), None)
    return repo_from_remote_url(url) if url else None


def backfill_tool_names(session: Session) -> None:
    """Give every tool_result without a name the name of the tool_use with the same
    id (last write wins)."""
    names: dict[str, str] = {}
    for turn in session.turns:
        for block in turn.blocks:
            if block.block_type == "tool_use" and block.tool_use_id and block.tool_name:
                names[block.tool_use_id] = block.tool_name
    if not names:
        return
    for turn in session.turns:
        for block in turn.blocks:
            if block.block_type == "tool_result" and not block.tool_name and block.tool_use_id:
                block.tool_name = names.get(block.tool_use_id)
