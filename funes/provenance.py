"""Files and commands as stored provenance: what a turn's tool calls touched and ran.

Parsers read them off each agent's tool records (``Block.files``, ``Block.command``,
``Block.exit_code``: see funes/traces/common.py).  Chunking stores them per *turn*:
every chunk of a turn carries the files all of that turn's tool calls touched and the
commands they ran, so "this hit's turn touched the file" is a plain predicate on the
hit's own row, for recall, scan, sessions and history alike.  A tool_result chunk
also carries its command's exit status.

Paths are stored the same way whatever the agent wrote:

* a relative path is first taken relative to the session's cwd (the agent's own
  working directory), when the session records one;
* the *root* is the top folder of the git checkout holding the cwd, when that
  checkout exists on this machine at index time; else the cwd itself when the trace
  shows the session ran in a git checkout (it records a repository or a branch:
  agents are mostly started in a checkout's top folder); else there is none;
* a path inside the root is stored relative to it (``funes/cli/main.py``), with ``/``
  separators; any other path is stored absolute, as the trace has it (normalised:
  ``a/./b/../c`` is ``a/c``).

The stored text of a turn's files is one line per distinct path, ``<path>\\t<actions>``
(actions comma-joined in FILE_ACTIONS order), between newlines; commands are joined
by :data:`COMMAND_SEPARATOR`.  Both forms make the filters a substring test that
Lance runs itself (``strpos``), never a scan in Python.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from funes.traces.model import FILE_ACTIONS, Session, Turn

COMMAND_SEPARATOR = "\x1e"  # ASCII record separator: never part of a command anyone typed
# Characters that would break the stored line format; a path holding one is stored with a space instead.
_LINE_BREAKING = re.compile(r"[\t\n\r\x1e]")
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


@dataclass(frozen=True, slots=True)
class TouchedFile:
    path: str  # as stored: relative to the root, or absolute
    actions: tuple[str, ...]  # in FILE_ACTIONS order


def _is_windows(path: str) -> bool:
    return bool(_WINDOWS_ABSOLUTE.match(path))


def _is_absolute(path: str) -> bool:
    return path.startswith("/") or _is_windows(path)


def _normalised(path: str) -> str:
    if _is_windows(path):
        return ntpath.normpath(path).replace("\\", "/")
    return posixpath.normpath(path) if path else path


def _inside(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (both absolute, normalised) when inside it."""
    if _is_windows(path) != _is_windows(root):
        return None
    fold = str.lower if _is_windows(path) else str  # Windows paths compare without case
    root_prefix = root.rstrip("/") + "/"
    if fold(path) == fold(root.rstrip("/")):
        return "."
    if fold(path).startswith(fold(root_prefix)):
        return path[len(root_prefix):]
    return None


def checkout_root(cwd: str) -> str | None:
    """The top folder of the git checkout holding ``cwd`` as it is on this machine
    now (the folder with the ``.git`` entry), or None."""
    if not cwd or _is_windows(cwd) and os.sep == "/":
        return None
    try:
        start = Path(cwd)
        if not start.is_dir():
            return None
        for folder in (start, *start.parents):
            if (folder / ".git").exists():
                return str(folder)
    except OSError:
        return None
    return None


def session_root(session: Session) -> str | None:
    """The folder a session's paths are stored relative to (see the module doc).
    Called after the parser's :func:`~funes.traces.common.finish_session`, which
    fills the repo and branch from the checkout when the trace lacks them."""
    top = checkout_root(session.cwd)
    if top is not None:
        return _normalised(top)
    if (session.repo or session.branch) and session.cwd and _is_absolute(session.cwd):
        return _normalised(session.cwd)
    return None


def stored_path(path: str, cwd: str, root: str | None) -> str:
    """How ``path``, as a tool call named it in a session run in ``cwd``, is stored."""
    text = _LINE_BREAKING.sub(" ", path.strip())
    if not text:
        return text
    if not _is_absolute(text) and not text.startswith("~") and cwd and _is_absolute(cwd):
        joiner = ntpath.join if _is_windows(cwd) else posixpath.join
        text = joiner(cwd, text)
    text = _normalised(text)
    if root and _is_absolute(text):
        relative = _inside(text, root)
        if relative is not None:
            return relative
    return text


def turn_files(turn: Turn, cwd: str, root: str | None) -> list[TouchedFile]:
    """Every file the turn's tool calls touched, each once with all its actions, in
    first-touch order."""
    actions: dict[str, set[str]] = {}
    for block in turn.blocks:
        for touch in block.files:
            path = stored_path(touch.path, cwd, root)
            if path:
                actions.setdefault(path, set()).add(touch.action)
    return [TouchedFile(path, tuple(a for a in FILE_ACTIONS if a in done)) for path, done in actions.items()]


def turn_commands(turn: Turn) -> list[str]:
    """The shell commands the turn's tool calls ran, in call order."""
    return [block.command.replace(COMMAND_SEPARATOR, " ") for block in turn.blocks if block.command]


def encode_files(files: Sequence[TouchedFile]) -> str | None:
    if not files:
        return None
    return "\n" + "".join(f"{f.path}\t{','.join(f.actions)}\n" for f in files)


def decode_files(text: str | None) -> list[TouchedFile]:
    found = []
    for line in (text or "").split("\n"):
        if line:
            path, _, actions = line.partition("\t")
            found.append(TouchedFile(path, tuple(a for a in actions.split(",") if a)))
    return found


def encode_commands(commands: Sequence[str]) -> str | None:
    return COMMAND_SEPARATOR.join(commands) if commands else None


def decode_commands(text: str | None) -> list[str]:
    return [command for command in (text or "").split(COMMAND_SEPARATOR) if command]


# ---------------------------------------------------------------------------- asking
def query_paths(given: str, *, cwd: str | None = None) -> list[str]:
    """The stored forms a ``--file`` argument names, matched as prefixes.

    A path starting with ``/``, ``./``, ``../`` or ``~`` names a file on this machine:
    it is made absolute (from ``cwd``, default the process's), and when it lies in a
    git checkout here its path relative to that checkout's top folder is asked for
    too.  (An absolute path in no checkout here may be one recorded on another
    machine: :func:`relative_elsewhere` and :func:`recorded_roots`.)  Any other path is
    taken as relative to a repository's root, as stored."""
    text = _LINE_BREAKING.sub(" ", given.strip())
    local = text.startswith(("/", "./", "../", "~")) or text in (".", "..") or _is_windows(text)
    if not local:
        return [_normalised(text) + ("/" if text.endswith("/") and text != "/" else "")]
    absolute = _normalised(os.path.join(cwd or os.getcwd(), os.path.expanduser(text)))
    forms = [absolute]
    folder = absolute
    while folder and not os.path.isdir(folder):  # a file, or one deleted since: its nearest folder
        parent = posixpath.dirname(folder)
        folder = parent if parent != folder else ""
    top = checkout_root(folder) if folder else None
    if top is not None:
        relative = _inside(absolute, _normalised(top))
        if relative is not None and relative != ".":
            forms.append(relative)
    return forms


def relative_elsewhere(absolute: str, tops: Sequence[str]) -> str | None:
    """``absolute``, a path recorded in another checkout of the repository whose
    checkouts here are ``tops``, relative to that checkout: the longest tail of it
    that exists in one of ``tops``, else the tail after a folder named as one of
    them; None when neither."""
    parts = [part for part in absolute.replace("\\", "/").split("/") if part]
    tails = ["/".join(parts[start:]) for start in range(1, len(parts))]
    for tail in tails:
        if any(os.path.lexists(os.path.join(top, tail)) for top in tops):
            return tail
    names = {posixpath.basename(top.rstrip("/")) for top in tops}
    for start in range(len(parts) - 2, -1, -1):
        if parts[start] in names:
            return "/".join(parts[start + 1:])
    return None


def recorded_roots(absolute: str) -> list[tuple[str, str]]:
    """Every way ``absolute`` may be a path stored relative to the root of a session
    recorded at that root (or below it): ``(root, relative)`` pairs, for paths asked
    for as another machine recorded them."""
    parts = [part for part in absolute.split("/") if part] if absolute.startswith("/") else []
    return [("/" + "/".join(parts[:cut]), "/".join(parts[cut:])) for cut in range(1, len(parts))]


def matches_path(path: str, forms: Iterable[str]) -> bool:
    return any(path.startswith(form) for form in forms)
