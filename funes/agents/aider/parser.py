"""Aider (Aider-AI/aider): the markdown chat log ``.aider.chat.history.md``.

Format facts: FORMAT.md.  Aider keeps no central store: it appends to
``.aider.chat.history.md`` in the git root it was launched in (else the launch
folder, or wherever ``--chat-history-file`` / ``AIDER_CHAT_HISTORY_FILE`` points).
Every launch appends ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (local time,
no zone) and then, line by line: what the user typed as ``#### `` lines, Aider's
own messages as ``> `` lines, both ending in two spaces (a markdown line break),
and the model's replies as plain markdown.

Discovery is a bounded search, since history files live in project folders: the
roots are ``$FUNES_AIDER_ROOTS`` (folders separated by ``os.pathsep``), else the
home folder, plus the file ``$AIDER_CHAT_HISTORY_FILE`` names; below a root it looks
``MAX_DEPTH`` folders deep, skips hidden, dependency and build folders, and gives up
after ``MAX_FOLDERS`` folders.  A path given to ``funes index`` is searched the same way.

One unit per launch: its session id is ``"{start:%Y%m%dT%H%M%S}-{hash of the file's
path}"`` (``-2``, ``-3`` for launches stamped the same second), its signature the
launch's byte range (the file's size and mtime for the last launch, the only one
that still grows).  turn_uuid = ``"{session}:{n}"``, n counting the launch's
segments (runs of lines of one kind), which appending never renumbers.

Turns: ``####`` lines are the user's (``/run cmd`` and ``!cmd`` become a ``run``
tool_use carrying the command, ``/add`` and ``/read-only`` a tool_use reading the
files); a reply is the assistant's; ``>`` lines are Aider's report, role ``tool``,
a ``tool_result`` named ``aider`` (token counts and the start-up banner dropped).
``Applied edit to <path>`` lines in the report after a reply add an ``edit``
tool_use with those files to the reply, paired with the report.  Times: the
launch's, then for each user message the time ``.aider.input.history`` beside the
log recorded for the same input (``# <time>`` then ``+line`` lines), local time
read as this machine's zone.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from funes.agents.aider import AGENT
from funes.errors import TraceReadError
from funes.traces.common import TurnCollector, file_touches, finish_session, format_ts, paused_gc, workdir_facet
from funes.traces.model import Block, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness
HISTORY_NAME = ".aider.chat.history.md"
INPUT_HISTORY_NAME = ".aider.input.history"
MAX_DEPTH = 4
MAX_FOLDERS = 20_000
INPUT_WINDOW = 64  # inputs looked at, from the launch's start on, to time one user message
_SKIPPED_DIRS = frozenset({
    "node_modules", "__pycache__", "site-packages", "venv", "env", "target", "build", "dist", "vendor",
    "Library", "Applications", "snap", "go", "AppData",
})
# Searched for as a literal and kept when it starts a line: a leading ``^`` makes the
# regex engine try every position of the file (14x slower on a 240 kB log).
_HEADER = re.compile(rb"# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[ \t]*\r?$", re.MULTILINE)
_NOISE_PREFIXES = ("Tokens: ", "Aider v", "Main model:", "Weak model:", "Editor model:", "Model:", "Git repo:",
                   "Repo-map:", "Use /help", "https://aider.chat/")
_APPLIED = re.compile(r"^Applied edit to (.+)$", re.MULTILINE)


def default_roots() -> list[Path]:
    return AGENT.roots()


def history_files(root: Path) -> Iterator[Path]:
    """The chat logs at most MAX_DEPTH folders below ``root`` (or ``root`` itself)."""
    if root.is_file():
        yield root
        return
    visited = 0
    frontier = [(root, 0)]
    while frontier:
        folder, depth = frontier.pop()
        visited += 1
        if visited > MAX_FOLDERS:
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        below = []
        for entry in entries:
            try:
                if entry.name == HISTORY_NAME and entry.is_file():
                    yield Path(entry.path)
                elif (depth < MAX_DEPTH and entry.is_dir(follow_symlinks=False)
                      and not entry.name.startswith(".") and entry.name not in _SKIPPED_DIRS):
                    below.append((Path(entry.path), depth + 1))
            except OSError:
                continue
        frontier.extend(reversed(below))


@dataclass(frozen=True)
class Launch:
    session_id: str
    start: int  # byte offset of the header (or 0 for text before the first header)
    end: int
    started: str  # the header's time as written, "" for text before the first header


def _path_hash(path: Path) -> str:
    return hashlib.sha1(str(path.absolute()).encode("utf-8", errors="surrogatepass")).hexdigest()[:8]


def launches(path: Path, data: bytes) -> list[Launch]:
    """The launches a chat log holds, in file order."""
    tag = _path_hash(path)
    headers = [match for match in _HEADER.finditer(data) if match.start() == 0 or data[match.start() - 1] == 10]
    found: list[Launch] = []
    if data[: headers[0].start() if headers else len(data)].strip():
        found.append(Launch(f"unstamped-{tag}", 0, headers[0].start() if headers else len(data), ""))
    seen: dict[str, int] = {}
    for number, match in enumerate(headers):
        started = match.group(1).decode()
        stamp = started.replace("-", "").replace(":", "").replace(" ", "T")
        seen[stamp] = seen.get(stamp, 0) + 1
        suffix = f"-{seen[stamp]}" if seen[stamp] > 1 else ""
        end = headers[number + 1].start() if number + 1 < len(headers) else len(data)
        found.append(Launch(f"{stamp}-{tag}{suffix}", match.start(), end, started))
    return found


@lru_cache(maxsize=2)
def _load(path: Path, signature: tuple[int, int]) -> tuple[bytes, dict[str, Launch]]:
    """A chat log's bytes and launches by session id, kept for the next unit of the
    same file version: indexing a log parses each of its launches in turn."""
    del signature
    data = path.read_bytes()
    return data, {launch.session_id: launch for launch in launches(path, data)}


def read_log(path: Path) -> tuple[os.stat_result, bytes, dict[str, Launch]]:
    try:
        stat = path.stat()
        data, found = _load(path, (stat.st_size, stat.st_mtime_ns))
    except OSError as exc:
        raise TraceReadError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return stat, data, found


def discover(root: Path) -> Iterator[SourceUnit]:
    for path in history_files(root):
        try:
            stat, _, found = read_log(path)
        except TraceReadError:
            continue  # vanished since the walk
        for number, launch in enumerate(found.values()):
            last = number == len(found) - 1
            signature = f"{launch.start}:{stat.st_size}:{stat.st_mtime_ns}" if last else f"{launch.start}-{launch.end}"
            yield SourceUnit(HARNESS, path, launch.session_id, signature)


# --- Times --------------------------------------------------------------------------------------

def local_ts(text: str) -> str:
    """A local wall-clock time Aider wrote, as RFC 3339 UTC (read in this machine's zone)."""
    for pattern in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            return format_ts(datetime.strptime(text.strip(), pattern).astimezone())
        except (ValueError, OverflowError, OSError):
            continue
    return ""


@lru_cache(maxsize=4)
def _inputs(path: Path, signature: tuple[int, int]) -> tuple[tuple[str, str], ...]:
    """``(time, text)`` of every input in ``.aider.input.history``, in time order
    (cached per file version)."""
    del signature
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ()
    entries: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# "):
            entries.append((local_ts(line[2:]), []))
        elif line.startswith("+") and entries:
            entries[-1][1].append(line[1:])
    return tuple(sorted((ts, "\n".join(lines)) for ts, lines in entries if ts))


def _input_times(log: Path) -> tuple[tuple[str, str], ...]:
    path = log.with_name(INPUT_HISTORY_NAME)
    try:
        stat = path.stat()
    except OSError:
        return ()
    return _inputs(path, (stat.st_size, stat.st_mtime_ns))


# --- One launch ---------------------------------------------------------------------------------

# Aider's own lines: the user's (``#### …``, group 1 its text) and its reports (``> …``,
# group 2 its text), both ending in the two spaces of a markdown line break; the model's
# replies are stripped and have none.  Anchored on the newline before the line rather
# than ``^``.
_OWN_LINE = re.compile(r"\n(?:####(?: ([^\n]*))?|> ?([^\n]*))  \r?(?=\n|\Z)")


def segments(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of the launch's runs of user, notice and reply lines (kind
    ``user``, ``notice`` or ``reply``; text stripped); blank lines end no run (they
    belong to the reply around them).  One pass over the matches, no call per line:
    a pasted input can be thousands of lines."""
    found: list[tuple[str, str]] = []
    text = "\n" + text
    at = 0
    kind = ""  # of the run of own lines being gathered
    lines: list[str] = []
    for match in _OWN_LINE.finditer(text):
        start, end = match.span()
        if start > at:
            reply = text[at:start].strip()
            if reply:  # a reply ends the run of own lines before it
                if lines:
                    found.append((kind, "\n".join(lines).strip()))
                    lines = []
                found.append(("reply", reply.replace("\r\n", "\n")))
        typed, notice = match.groups()
        if notice is None:
            line_kind, content = "user", typed or ""
            if content == "<blank>":
                content = ""
        else:
            line_kind, content = "notice", notice
        if line_kind != kind and lines:
            found.append((kind, "\n".join(lines).strip()))
            lines = []
        kind = line_kind
        lines.append(content)
        at = end
    if lines:
        found.append((kind, "\n".join(lines).strip()))
    tail = text[at:].strip()
    if tail:
        found.append(("reply", tail.replace("\r\n", "\n")))
    return found


# What shlex (POSIX mode, whitespace-split, no comments) treats specially besides its
# whitespace: without these, its split is a plain split on that whitespace, and shlex's
# pure-Python tokenizer costs more than the rest of a command's turn.
_SHLEX_SPECIAL = re.compile(r"[\"'\\]")
_SHLEX_WORD = re.compile(r"[^ \t\r\n]+")


def _command_words(rest: str) -> list[str]:
    """The words of ``/add``'s arguments, as shlex.split gives them (a bare split when
    the quoting is unbalanced)."""
    if not _SHLEX_SPECIAL.search(rest):
        return _SHLEX_WORD.findall(rest)
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def _command_blocks(text: str, turn_uuid: str) -> tuple[list[Block], str | None]:
    """A typed command as a tool_use (and the id its report answers to), else text."""
    if not text.startswith(("!", "/")):  # most of what people type: words, not a command
        return [Block("text", text)], None
    first = text.split("\n", 1)[0]
    name = argument = None
    if first.startswith("!") and first[1:].strip():
        name, argument = "run", text[1:].strip()
    else:
        word, _, rest = first.partition(" ")
        if word in ("/run", "/test") and rest.strip():
            name, argument = word[1:], text[len(word):].strip()
        elif word in ("/add", "/read-only") and rest.strip():
            paths = _command_words(rest)
            tool_id = f"{turn_uuid}:{word[1:]}"
            return [Block("tool_use", text, word[1:], tool_id, file_touches(paths, "read"))], tool_id
    if name is None:
        return [Block("text", text)], None
    tool_id = f"{turn_uuid}:{name}"
    return [Block("tool_use", argument or text, name, tool_id, (), argument)], tool_id


def _report(text: str) -> str:
    """A notice without its token counts and start-up banner lines."""
    if "\n" not in text:  # one line, the common case
        return "" if text.startswith(_NOISE_PREFIXES) else text.strip()
    return "\n".join([line for line in text.split("\n") if not line.startswith(_NOISE_PREFIXES)]).strip()


@paused_gc()
def parse(unit: SourceUnit) -> Session:
    path = unit.path
    cwd = str(path.absolute().parent)
    session = Session(harness=HARNESS, session_id=unit.session_id, source_path=str(path), cwd=cwd,
                      workdir=workdir_facet(cwd, path.parent.name))
    _, data, found = read_log(path)
    launch = found.get(unit.session_id)
    if launch is None:
        session.warnings.append(ParseWarning(str(path), 0, f"launch {unit.session_id} is no longer in the file"))
        return finish_session(session)
    body = data[launch.start:launch.end].decode("utf-8", errors="replace")
    last_line = body.rsplit("\n", 1)[-1]
    if last_line.startswith(("####", ">")):  # Aider's own line, its line break not written yet
        body = body[: len(body) - len(last_line)]
        line = data.count(b"\n", 0, launch.end) + 1
        session.warnings.append(ParseWarning(str(path), line, "partial last line (still being written?)"))
    if launch.started:
        body = body.split("\n", 1)[1] if "\n" in body else ""
    started = local_ts(launch.started) if launch.started else ""
    inputs = _input_times(path)
    pointer = bisect.bisect_left(inputs, (started,)) if started else 0
    turns = TurnCollector(session)
    ts = started
    waiting: str | None = None  # the tool_use id the next report answers (a command, an edit)
    reply = None
    prefix = f"{unit.session_id}:"
    for number, (kind, text) in enumerate(segments(body)):
        turn_uuid = f"{prefix}{number}"
        if kind == "user":
            if inputs:
                match = next((i for i in range(pointer, min(pointer + INPUT_WINDOW, len(inputs)))
                              if inputs[i][1].strip() == text), None)
                if match is not None:
                    ts, pointer = inputs[match][0], match + 1
            blocks, waiting = _command_blocks(text, turn_uuid)
            turns.add(turn_uuid, turns.last_uuid, "user", ts, blocks)
            reply = None
        elif kind == "reply":
            reply = turns.add(turn_uuid, turns.last_uuid, "assistant", ts, [Block("text", text)])
            waiting = None
        else:
            report = _report(text)
            edited = _APPLIED.findall(report) if "Applied edit to " in report else None
            if edited and reply is not None:
                waiting = f"{reply.turn_uuid}:edit"
                reply.blocks.append(Block("tool_use", "\n".join(edited), "edit", waiting, file_touches(edited, "edit")))
            name = "edit" if edited and reply is not None else None if waiting else "aider"
            turns.add(turn_uuid, turns.last_uuid, "tool", ts, [Block("tool_result", report, name, waiting)])
            reply = waiting = None
    return finish_session(session)
