"""`history`: the turns that touched a file, newest first, each with the text that
explains what was done to it.

The turns come from the provenance every chunk of a turn carries (funes/provenance.py):
one Lance-side predicate over the ``files`` column, so only the rows of turns that
touched the file are read.  The explanation is the assistant's text beside the tool
call: the text of that turn, else the nearest assistant text before it in the session
(up to :data:`LOOKBACK` turns back, never past a message of the user's, whose request
is not the agent's explanation)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from funes.chunking import reassemble
from funes.errors import FunesError, bounded_int
from funes.memory.reader import Memory
from funes.provenance import decode_commands, decode_files
from funes.retrieval.bounds import MAX_HISTORY_LIMIT
from funes.retrieval.filters import ROOT_COMMIT, Filters

COLUMNS = ("session_id", "turn_uuid", "seq", "ts", "harness", "workdir", "cwd", "repo", "branch", "files",
           "commands")
TEXT_COLUMNS = ("seq", "role", "block_type", "block_idx", "split_idx", "char_start", "text")
LOOKBACK = 20  # turns searched back for the explanation
EXPLANATION_CHARS = 600


class NothingTouchedError(FunesError):
    """No stored turn touched the file asked about."""

    exit_code = 1


@dataclass(frozen=True)
class Touch:
    path: str
    actions: list[str]


@dataclass(frozen=True)
class HistoryEntry:
    session_id: str
    turn_uuid: str
    seq: int
    ts: str
    harness: str
    workdir: str
    repo: str
    branch: str
    touches: list[Touch]  # the turn's files that the asked path names
    commands: list[str]  # every command the turn ran
    explanation: str  # capped at EXPLANATION_CHARS
    explanation_seq: int | None  # the turn the explanation was read from

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class History:
    path: str
    entries: list[HistoryEntry]  # newest first, at most `limit`
    turns: int  # every turn that touched the path
    sessions: int
    memory_label: str = ""
    projects: list[str] = field(default_factory=list)  # of every such turn (project_label), when not scoped to one

    @property
    def truncated(self) -> bool:
        return len(self.entries) < self.turns


def file_history(memory: Memory, filters: Filters, *, limit: int = 50) -> History:
    """The turns of ``memory`` that touched ``filters.file`` (a prefix: see
    :func:`funes.provenance.query_paths`), narrowed by the other filters, newest
    first (undated turns last); :class:`NothingTouchedError` when there are none."""
    import polars as pl

    if not filters.file:
        raise ValueError("file_history needs filters.file")
    bounded_int("--limit", limit, 1, MAX_HISTORY_LIMIT)
    filters = filters.bound(memory)
    frame = pl.from_arrow(memory.scan(COLUMNS, filters.where()))
    if frame.is_empty():
        label = project_label(filters.project.label, None) if filters.project else ""
        scope = (f" (in this project, {label}: --anywhere asks every project)" if filters.implicit
                 else " (with these filters)" if _narrowed(filters) else "")
        raise NothingTouchedError(f"no turn touched {filters.file} in memory at {memory.location.label}{scope}")
    turns = (frame.unique(["session_id", "turn_uuid"], keep="first")
             .with_columns((pl.col("ts").fill_null("") == "").alias("undated"))
             .sort(["undated", "ts", "session_id", "seq"], descending=[False, True, False, True]))
    shown = turns.head(limit).to_dicts()
    explanations = _explanations(memory, shown)
    entries = []
    for row in shown:
        files = decode_files(row["files"])
        touches = [Touch(f.path, list(f.actions)) for f in files if filters.touches(f.path, row["cwd"])]
        text, seq = explanations.get((row["session_id"], int(row["seq"] or 0)), ("", None))
        entries.append(HistoryEntry(
            session_id=row["session_id"], turn_uuid=row["turn_uuid"], seq=int(row["seq"] or 0), ts=row["ts"] or "",
            harness=row["harness"] or "", workdir=row["workdir"] or "", repo=row["repo"] or "",
            branch=row["branch"] or "", touches=touches, commands=decode_commands(row["commands"]),
            explanation=text, explanation_seq=seq))
    projects = [] if filters.project is not None else sorted(
        {project_label(repo, workdir) for repo, workdir in turns.select("repo", "workdir").iter_rows()})
    return History(filters.file, entries, turns.height, turns["session_id"].n_unique(), memory.location.label,
                   projects)


def project_label(repo: str | None, workdir: str | None) -> str:
    """How a turn's project is named: its repository (a root commit by its first 12
    digits), else its workdir."""
    if repo:
        return repo[:12] if ROOT_COMMIT.fullmatch(repo) else repo
    return workdir or "?"


def _narrowed(filters: Filters) -> bool:
    return any(getattr(filters, name) for name in ("harness", "workdir", "repo", "branch", "session", "since",
                                                   "until", "command", "project"))


def _explanations(memory: Memory, entries: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[str, int]]:
    """(session_id, seq) → (the explanation, the seq it was read from)."""
    wanted: dict[str, list[int]] = {}
    for row in entries:
        wanted.setdefault(row["session_id"], []).append(int(row["seq"] or 0))
    found: dict[tuple[str, int], tuple[str, int]] = {}
    for session_id, seqs in wanted.items():
        rows = memory.session_rows(session_id, min(seqs) - LOOKBACK, max(seqs), columns=TEXT_COLUMNS)
        # Per turn: its assistant text (blocks reassembled), and whether the user spoke in it.
        pieces: dict[tuple[int, int], list[tuple[int, str]]] = {}
        user_turns: set[int] = set()
        for row in rows:
            if row["block_type"] != "text":
                continue
            seq = int(row["seq"] or 0)
            if row["role"] == "user":
                user_turns.add(seq)
            elif row["role"] == "assistant":
                pieces.setdefault((seq, int(row["block_idx"] or 0)), []).append(
                    (int(row["char_start"] or 0), row["text"] or ""))
        said: dict[int, list[str]] = {}
        for (seq, _), chunks in sorted(pieces.items()):
            said.setdefault(seq, []).append(reassemble(chunks).strip())
        for seq in seqs:
            for earlier in range(seq, seq - LOOKBACK - 1, -1):
                texts = [t for t in said.get(earlier, []) if t]
                if texts:
                    found[(session_id, seq)] = (_capped("\n\n".join(texts)), earlier)
                    break
                if earlier in user_turns:
                    break
    return found


def _capped(text: str) -> str:
    return text if len(text) <= EXPLANATION_CHARS else text[:EXPLANATION_CHARS].rstrip() + "…"


def format_history(history: History) -> str:
    """The agent format (docs/contract.md): per turn a header naming what it did to
    which file, its `→ get` line, the explanation quoted, ``---``; then a total line."""
    from funes.retrieval.format import SEPARATOR, field, get_line, quoted

    parts = []
    for e in history.entries:
        touched = " ".join(f"{','.join(t.actions)}={field(t.path)}" for t in e.touches)
        parts.append(f"[{field(e.ts)}] {field(e.harness)} {field(e.workdir)}/{field(e.session_id[:8])} "
                     f"seq{e.seq}  {touched}\n"
                     + get_line(e.session_id, e.turn_uuid, history.memory_label)
                     + (f"\n{quoted(e.explanation)}" if e.explanation else "") + f"\n{SEPARATOR}")
    parts.append(f"{history.turns} turn(s) in {history.sessions} session(s) touched {field(history.path)}"
                 + (f"; listed the newest {len(history.entries)}: narrow with filters or raise --limit"
                    if history.truncated else ""))
    if len(history.projects) > 1:
        parts.append(f"in {len(history.projects)} projects: {' '.join(map(field, history.projects))}; "
                     "--here, --repo or --workdir keeps to one")
    return "\n".join(parts)


def history_json(history: History) -> dict[str, Any]:
    return {"memory": history.memory_label, "path": history.path, "turns": history.turns,
            "sessions": history.sessions, "truncated": history.truncated, "projects": history.projects,
            "entries": [e.to_json() for e in history.entries]}
