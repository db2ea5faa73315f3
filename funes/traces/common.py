"""Helpers every parser shares: facets, timestamps, tool-input JSON, tool-call
provenance (files, commands, exit codes), repo identity, turn collection and file
discovery."""

from __future__ import annotations

import configparser
import gc
import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from funes.traces.model import Block, FileTouch, ParseWarning, Session, SourceUnit, Turn

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def workdir_facet(cwd: str | None, fallback: str = "") -> str:
    """The cwd with every non-alphanumeric character replaced by ``-``.

    This is how agents commonly name a project's folder, so facets agree across agents.
    A cwd with nothing but separators ("", "/") counts as no cwd: ``fallback``.
    """
    if cwd:
        facet = _NON_ALNUM.sub("-", cwd)
        if facet.strip("-"):
            return facet
    return fallback


# One encoder for every call: json.dumps with options builds a new JSONEncoder each time,
# and JSONEncoder.encode builds a new C encoder each time; this is the C encoder it builds
# (without the circular-reference check: decoded JSON holds no cycles), made once.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_COMPACT_C = None if json.encoder.c_make_encoder is None else json.encoder.c_make_encoder(
    None, _COMPACT_JSON.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)


def compact_json(value: Any) -> str:
    """Tool input as compact JSON in source key order (the stored tool_use text)."""
    if _COMPACT_C is None:
        return _COMPACT_JSON.encode(value)
    return "".join(_COMPACT_C(value, 0))


def tagged_spans(text: str, open_tag: str, close_tag: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every ``<open_tag>…<close_tag>`` span, left to right, each
    closed by the first close after its opening: what ``finditer`` of
    ``open(.*?)close`` (DOTALL) finds, by ``str.find`` (the regex engine's lazy loop
    costs ~80 ns a character, over whole prompts and thoughts)."""
    spans: list[tuple[int, int]] = []
    at = 0
    while (start := text.find(open_tag, at)) != -1:
        close = text.find(close_tag, start + len(open_tag))
        if close == -1:
            break
        at = close + len(close_tag)
        spans.append((start, at))
    return spans


def tool_input_text(value: Any) -> str:
    """A tool call's arguments: a JSON string passes through verbatim, anything else
    becomes compact JSON, and missing input is ``{}``."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return compact_json(value)


def format_ts(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


# What JavaScript's toISOString() writes, i.e. nearly every agent's
# timestamp: already in the stored form, so only its validity needs checking.
_CANONICAL_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


def normalize_ts(value: Any) -> str:
    """RFC 3339 UTC with milliseconds, from an ISO string, epoch milliseconds or
    epoch seconds; "" when the value cannot be read as a time."""
    if value is None or isinstance(value, bool):
        return ""
    try:
        if isinstance(value, (int, float)):
            seconds = float(value)
            if abs(seconds) > 1e11:  # epoch milliseconds (JavaScript's Date.now())
                seconds /= 1000.0
            return format_ts(datetime.fromtimestamp(seconds, tz=timezone.utc))
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return ""
            if _CANONICAL_TS.fullmatch(text):
                datetime.fromisoformat(text[:-1])  # rejects month 13 and the like
                return text
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


# scp-like remotes (``git@host:owner/name.git``): a host, a colon, no "//".
_SCP_REMOTE = re.compile(r"^(?:[^@/]+@)?[^/:]+:(?!//)(.+)$")


def repo_from_remote_url(url: str) -> str | None:
    """``owner/name`` from a git remote URL: https or ssh URLs
    (``https://github.com/o/n.git``, ``ssh://git@host:22/o/n``) and scp-like
    remotes (``git@github.com:o/n.git``), with any ``.git`` suffix and trailing
    slash dropped.  For nested groups (``gitlab.com/g/sub/n``) the last two
    segments.  None for local paths and for URLs naming fewer than two segments."""
    text = url.strip()
    if "://" in text:
        scheme, rest = text.split("://", 1)
        if scheme.lower() == "file":
            return None
        path = rest.split("/", 1)[1] if "/" in rest else ""
    else:
        match = _SCP_REMOTE.match(text)
        if match is None:
            return None  # a local path
        path = match.group(1)
    path = path.split("?", 1)[0].split("#", 1)[0]
    segments = [segment for segment in path.split("/") if segment]
    if segments:
        segments[-1] = segments[-1].removesuffix(".git")
    segments = [segment for segment in segments if segment]
    if len(segments) < 2:
        return None
    return f"{segments[-2]}/{segments[-1]}"


def git_dirs(start: Path) -> tuple[Path, Path] | None:
    """(the checkout's own git dir, which holds HEAD; the common git dir, which
    holds config) for the checkout containing ``start``.  They differ for a
    worktree, whose ``.git`` file points at ``<common>/worktrees/<name>``."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git, dot_git
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                git_dir = Path(text[len("gitdir:"):].strip())
                if not git_dir.is_absolute():
                    git_dir = (folder / git_dir).resolve()
                common = git_dir / "commondir"
                common_dir = (git_dir / common.read_text().strip()).resolve() if common.is_file() else git_dir
                return git_dir, common_dir
    return None


@lru_cache(maxsize=1024)
def checkout_identity(cwd: str) -> tuple[str | None, str | None]:
    """(``owner/name`` from the ``origin`` remote, else the first remote; the
    checked-out branch) of the git checkout containing ``cwd``, as it is now;
    (None, None) when the cwd no longer exists or is in no checkout.  Reads
    ``.git`` directly: no subprocess on the indexing path."""
    if not cwd:
        return None, None
    try:
        start = Path(cwd)
        if not start.is_dir():
            return None, None
        dirs = git_dirs(start)
        if dirs is None:
            return None, None
        own_dir, common_dir = dirs
        config = configparser.ConfigParser(strict=False, interpolation=None)
        config.read(common_dir / "config", encoding="utf-8")
        head = (own_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip() \
            if (own_dir / "HEAD").is_file() else ""
    except (OSError, configparser.Error):
        return None, None
    urls = {}
    for section in config.sections():
        match = re.fullmatch(r'remote "(.+)"', section)
        if match and config.has_option(section, "url"):
            urls[match.group(1)] = config.get(section, "url")
    url = urls.get("origin") or next(iter(urls.values()), None)
    branch = clean_branch(head.removeprefix("ref: refs/heads/")) if head.startswith("ref: refs/heads/") else None
    return (repo_from_remote_url(url) if url else None), branch


@lru_cache(maxsize=1024)
def root_commit(cwd: str) -> str | None:
    """The oldest root commit of the checkout containing ``cwd`` (what a repository
    without a remote naming ``owner/name`` is known by: every clone, worktree and moved
    checkout of it shares it), or None (no checkout, no commit yet, no git).  One git
    call per checkout a process meets; only for checkouts without such a remote."""
    try:
        # Only inside a checkout: a cwd in none costs no process.  A recorded cwd is
        # any text (too long, NUL bytes): the file system's refusal means no checkout.
        if not cwd or not Path(cwd).is_dir() or git_dirs(Path(cwd)) is None:
            return None
    except (OSError, ValueError):
        return None
    try:
        done = subprocess.run(["git", "-C", cwd, "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                              text=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    roots = done.stdout.split() if done.returncode == 0 else []
    return roots[-1] if roots else None  # rev-list lists newest first: the last is the oldest


# ---------------------------------------------------------------------------- tool-call provenance
# The argument names tools commonly give the file they act on, and a shell command.
PATH_ARGUMENTS = ("file_path", "path", "notebook_path", "filePath", "filename")
COMMAND_ARGUMENTS = ("command", "cmd")
# Shells whose ``-c`` script is the command when a call records an argv.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell"})
# The headers of a V4A (apply_patch) patch, and what each does to its file.
# No leading ``^``: kept when at a line start (a ``^`` makes the regex engine try every
# position of a long patch instead of jumping to the literal ``*** ``).
_PATCH_HEADER = re.compile(r"\*\*\* (Update File|Add File|Delete File|Move to): (.+?)\s*$", re.MULTILINE)
_PATCH_ACTIONS = {"Update File": "edit", "Add File": "write", "Delete File": "delete", "Move to": "write"}
# How agents state a command's exit status in its output, one line each:
# "Exit code: 0", "Exit code 1", "Process exited with code 0", "Command exited with code 2".
_EXIT_LINE = re.compile(r"(?:Exit code:?|Process exited with code|Command exited with code) (-?[0-9]{1,9})")


def call_arguments(value: Any) -> dict[str, Any] | None:
    """A tool call's arguments as a mapping: a dict as is, a JSON object's text
    decoded; None for anything else (raw input, broken JSON)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return None
        return decoded if isinstance(decoded, dict) else None
    return None


def command_text(value: Any) -> str | None:
    """A shell command as a call records it: a string as is; an argv as the script
    a shell runs (``["bash", "-lc", "make test"]`` → ``make test``), else joined
    the way a shell would read it; None for anything else."""
    if isinstance(value, str):
        return value or None
    if not isinstance(value, list) or not value or not all(isinstance(part, str) for part in value):
        return None
    if len(value) == 3 and Path(value[0]).name in _SHELLS and value[1].startswith("-") and value[1].endswith("c"):
        return value[2] or None
    return shlex.join(value)


def patch_touches(patch: Any) -> tuple[FileTouch, ...]:
    """The files an apply_patch (V4A) body updates, adds, deletes or moves to,
    in patch order."""
    if not isinstance(patch, str):
        return ()
    return tuple(FileTouch(match.group(2), _PATCH_ACTIONS[match.group(1)]) for match in _PATCH_HEADER.finditer(patch)
                 if match.start() == 0 or patch[match.start() - 1] == "\n")


def _argument_paths(node: Any, keys: Collection[str], named: bool, found: list[str]) -> None:
    if isinstance(node, str):
        if named and node.strip():
            found.append(node.strip())
    elif isinstance(node, list):
        for item in node:
            _argument_paths(item, keys, named, found)
    elif isinstance(node, dict):
        for key, item in node.items():
            if key in keys:
                _argument_paths(item, keys, True, found)
            elif isinstance(item, (list, dict)):
                _argument_paths(item, keys, False, found)


def file_touches(paths: Iterable[str], action: str) -> tuple[FileTouch, ...]:
    """One FileTouch per distinct path, in first-seen order."""
    return tuple([FileTouch(path, action) for path in dict.fromkeys(paths)])


def path_touches(arguments: Any, keys: Collection[str], action: str) -> tuple[FileTouch, ...]:
    """The files a tool call's arguments (a mapping, or the JSON text of one) name
    under any of ``keys``: a string, a list of strings, or objects holding one of
    the keys (``{"files": [{"path": …}]}``), at any depth of such lists and
    objects; each distinct path once, as ``FileTouch(path, action)``.  For tools
    whose arguments name several files or nest them, where :func:`record_call`
    reads one top-level path."""
    found: list[str] = []
    mapping = call_arguments(arguments)
    if mapping is not None:
        _argument_paths(mapping, keys, False, found)
    if len(found) == 1:  # most calls name one file: no dedup pass (a third of this function's cost)
        return (FileTouch(found[0], action),)
    return file_touches(found, action)


def file_touch(path: Any, action: str) -> tuple[FileTouch, ...]:
    """One touch of ``path`` (as the trace wrote it) by ``action`` (one of
    FILE_ACTIONS), or none when the argument is missing or not a path string."""
    return (FileTouch(path, action),) if isinstance(path, str) and path.strip() else ()


def exit_status(value: Any) -> int | None:
    """A recorded exit status: an integer (not a boolean), else None."""
    return value if type(value) is int else None


def record_call(block: Block, arguments: Any, *, action: str | None = None, shell: bool = False) -> Block:
    """Fill a tool_use block's ``files`` and ``command`` from its call's
    arguments (a mapping, or the JSON text of one) by the common conventions:
    with ``action`` (one of FILE_ACTIONS), the file named by the first of
    PATH_ARGUMENTS present; with ``shell``, the command in the first of
    COMMAND_ARGUMENTS (see :func:`command_text`)."""
    mapping = call_arguments(arguments)
    if mapping is None:
        return block
    if action is not None:
        path = next((mapping[key] for key in PATH_ARGUMENTS if isinstance(mapping.get(key), str) and mapping[key]),
                    None)
        if path is not None:
            block.files = (FileTouch(path, action),)
    if shell:
        block.command = next((text for key in COMMAND_ARGUMENTS if (text := command_text(mapping.get(key)))), None)
    return block


def stated_exit_code(line: str) -> int | None:
    """The exit status a line of tool output states (``Exit code: 1``,
    ``Process exited with code 0``, ``Command exited with code 2``), else None."""
    match = _EXIT_LINE.fullmatch(line.strip())
    return int(match.group(1)) if match else None


def json_exit_code(text: str | dict[str, Any]) -> int | None:
    """The integer ``exit_code`` of tool output that is a JSON object (at its top,
    or under ``metadata``), else None; the output as text or already decoded."""
    mapping = call_arguments(text)
    if mapping is None:
        return None
    for holder in (mapping, mapping.get("metadata")):
        if isinstance(holder, dict) and type(holder.get("exit_code")) is int:
            return holder["exit_code"]
    return None


def _settle_tool_results(session: Session) -> None:
    """Give every tool_result without a name the name of the tool_use with the same
    id (last write wins), and drop a tool_result's exit code when the tool_use it
    answers ran no shell command (exit codes belong to commands; results without a
    matching call keep theirs).  One pass over the blocks, then over the few results
    that need either."""
    names: dict[str, str] = {}
    ran_command: dict[str, bool] = {}
    pending: list[Block] = []
    for turn in session.turns:
        for block in turn.blocks:
            kind = block.block_type
            if kind == "tool_use":
                if block.tool_use_id:
                    ran_command[block.tool_use_id] = block.command is not None
                    if block.tool_name:
                        names[block.tool_use_id] = block.tool_name
            elif kind == "tool_result" and ((block.tool_use_id and not block.tool_name)
                                            or block.exit_code is not None):
                pending.append(block)
    for block in pending:
        if block.tool_use_id and not block.tool_name and names:
            block.tool_name = names.get(block.tool_use_id)
        if block.exit_code is not None and ran_command.get(block.tool_use_id or "") is False:
            block.exit_code = None


def finish_session(session: Session) -> Session:
    """What every parser does last: name tool results, keep exit codes on command
    results only, and fill the repository
    and branch the trace does not record from the checkout at the session's cwd
    (as it is now: a branch switched since is not seen); a checkout whose remotes
    name no ``owner/name`` is recorded by its root commit (funes/projects.py)."""
    _settle_tool_results(session)
    if session.repo is None or session.branch is None:
        repo, branch = checkout_identity(session.cwd)
        session.repo = session.repo or repo or root_commit(session.cwd)
        session.branch = session.branch or branch
    return session


def as_str(value: Any) -> str:
    """``value`` when it is a string, else "" (fields of the wrong type read as missing)."""
    return value if isinstance(value, str) else ""


def opt_str(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def joined_text(content: Any, part_types: Collection[str] = ("text",)) -> str:
    """The text of message content: a string as is, else the ``text`` of every part
    whose ``type`` is in ``part_types`` (a list of parts or a single part), joined by
    newlines.  Images and other parts are left out."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    if len(content) == 1:  # most messages: one part, read without a generator and a join
        part = content[0]
        text = part.get("text") if isinstance(part, dict) and part.get("type") in part_types else None
        return text if isinstance(text, str) else ""
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and part.get("type") in part_types and isinstance(part.get("text"), str)
    )


def tool_turn_role(role: str, blocks: list[Block]) -> str:
    """``"tool"`` for a user message whose non-blank blocks are all tool results (what
    the agent sends back for its own calls, not the person's words), else ``role``."""
    if role == "user":
        kept = [block for block in blocks if block.text and not block.text.isspace()]
        if kept and all(block.block_type == "tool_result" for block in kept):
            return "tool"
    return role


class TurnCollector:
    """Appends one session's turns in order.

    Drops blocks whose text is blank and turns left without blocks, numbers ``seq``
    among retained turns, and hands out turn ids that are unique within the session.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.last_uuid: str | None = None  # the most recently retained turn's id
        self._claimed: set[str] = set()

    def claim(self, preferred: Any, fallback: str) -> str:
        """``preferred`` when it is a non-empty string no earlier record of this
        session has claimed, else ``fallback``.  Claim for every record, retained or
        not, so an id never depends on skip rules, only on the lines before it."""
        usable = isinstance(preferred, str) and preferred and preferred not in self._claimed
        turn_uuid = preferred if usable else fallback
        self._claimed.add(turn_uuid)
        return turn_uuid

    def add(self, turn_uuid: str, parent_uuid: str | None, role: str, ts: str, blocks: list[Block]) -> Turn | None:
        if type(blocks) is list and len(blocks) == 1:  # most turns: no comprehension to run
            text = blocks[0].text
            if not (isinstance(text, str) and text and not text.isspace()):
                return None
            kept = blocks[:]
        else:
            kept = [block for block in blocks if isinstance(text := block.text, str) and text and not text.isspace()]
            if not kept:
                return None
        turns = self.session.turns
        turn = Turn(turn_uuid, parent_uuid, len(turns), role, ts, kept)
        turns.append(turn)
        self.last_uuid = turn_uuid
        return turn


_TRAILING_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


def trailing_uuid(name: str) -> str | None:
    """The UUID a transcript file name ends with (``rollout-<ts>-<uuid>.jsonl``,
    ``<ts>_<uuid>.jsonl``), extensions ignored."""
    stem = name
    for suffix in (".zst", ".jsonl"):
        stem = stem.removesuffix(suffix)
    match = _TRAILING_UUID.search(stem)
    return match.group(1) if match else None


def file_signature(path: Path) -> str | None:
    """``size:mtime_ns`` of a file, or None when it vanished."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def file_unit(harness: str, path: Path, session_id: str) -> SourceUnit | None:
    signature = file_signature(path)
    return None if signature is None else SourceUnit(harness, path, session_id, signature)


# Discovery runs inside parsers' ``discover(root)``, whose signature has no room
# for warnings; a caller that wants them (``funes index``) collects them here.
_discovery_warnings: ContextVar[list[ParseWarning] | None] = ContextVar("funes_discovery_warnings", default=None)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while one whole-file JSON document is turned
    into a session.  Decoding a large document makes millions of objects that stay
    alive until the session is built; with the collector running, every later
    allocation burst re-scans them all (measured on the agentsC branch: parsing ran 3x
    slower).  Decoded JSON holds no reference cycles, so nothing is lost by waiting."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def collecting_discovery_warnings(into: list[ParseWarning]) -> Iterator[list[ParseWarning]]:
    """Within this block, folders discovery cannot read are reported in ``into``."""
    token = _discovery_warnings.set(into)
    try:
        yield into
    finally:
        _discovery_warnings.reset(token)


def discovery_warning(path: Path, message: str) -> None:
    """Report something discovery skipped (dropped when nobody collects)."""
    collected = _discovery_warnings.get()
    if collected is not None:
        collected.append(ParseWarning(str(path), 0, message))


def walk_files(root: Path, accept: Callable[[str], bool], skip_dirs: Collection[str] = ()) -> Iterator[Path]:
    """Files under ``root`` whose name ``accept`` takes, in sorted order (a
    folder's files, then its subfolders), not descending into folders named in
    ``skip_dirs``.  Symlinked folders are followed, each real folder walked once
    (so a link loop ends); a folder that cannot be read is skipped with a
    discovery warning.  A file given as ``root`` is yielded whatever its name:
    the caller asked for it."""
    if root.is_file():
        yield root
        return
    visited: set[str] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        real = os.path.realpath(folder)
        if real in visited:
            continue
        visited.add(real)
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            discovery_warning(folder, f"cannot read folder ({exc.strerror or exc}): its transcripts were skipped")
            continue
        subfolders = []
        for entry in entries:
            try:
                is_folder = entry.is_dir()  # follows a symlink
            except OSError:
                is_folder = False
            if is_folder:
                if entry.name not in skip_dirs:
                    subfolders.append(Path(entry.path))
            elif accept(entry.name):
                yield Path(entry.path)
        stack.extend(reversed(subfolders))
