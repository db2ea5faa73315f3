"""`sessions`: every session a memory holds, with where and when it ran.

One pass over the table's small columns (no text, no vectors), grouped by session;
the recall filters narrow it the same way they narrow a search."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from funes.memory.reader import Memory
from funes.retrieval.filters import Filters

COLUMNS = ("session_id", "harness", "workdir", "cwd", "repo", "branch", "ts", "seq", "is_subagent",
           "parent_session_id")


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    harness: str
    workdir: str
    cwd: str
    repo: str
    branch: str
    first_ts: str
    last_ts: str
    turns: int  # distinct turns stored (by seq)
    chunks: int
    is_subagent: bool
    parent_session_id: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def list_sessions(memory: Memory, filters: Filters = Filters()) -> list[SessionSummary]:
    """The sessions of ``memory`` that ``filters`` keep, oldest first (by their first
    timestamp; sessions with none last), then by id."""
    import polars as pl

    filters = filters.bound(memory)
    table = memory.scan(COLUMNS, filters.where())
    if table.num_rows == 0:
        return []
    frame = pl.from_arrow(table)

    def text(column: str) -> pl.Expr:  # a session's value of a column its rows share
        return pl.col(column).drop_nulls().first().fill_null("")

    grouped = (frame.group_by("session_id")
               .agg(text("harness"), text("workdir"), text("cwd"), text("repo"), text("branch"),
                    text("parent_session_id"),
                    pl.col("ts").filter(pl.col("ts") != "").min().fill_null("").alias("first_ts"),
                    pl.col("ts").filter(pl.col("ts") != "").max().fill_null("").alias("last_ts"),
                    pl.col("seq").n_unique().alias("turns"),
                    pl.len().alias("chunks"),
                    # A subagent's session marks every row; a parent's transcript that holds a
                    # subagent's thread inline (an older layout) marks only that thread's.
                    pl.col("is_subagent").fill_null(False).all().alias("is_subagent"))
               .with_columns((pl.col("first_ts") == "").alias("undated"))
               .sort(["undated", "first_ts", "session_id"]))
    return [SessionSummary(**{key: row[key] for key in SessionSummary.__dataclass_fields__})
            for row in grouped.iter_rows(named=True)]


def format_sessions(sessions: list[SessionSummary]) -> str:
    """The agent format: one line per session, fields on one line as in recall's headers
    (see docs/contract.md), then a total."""
    from funes.retrieval.format import field

    if not sessions:
        return "no sessions"
    lines = []
    for s in sessions:
        where = f" repo={field(s.repo)}" if s.repo else ""
        where += f" branch={field(s.branch)}" if s.branch else ""
        sub = f" subagent-of={field(s.parent_session_id)}" if s.is_subagent and s.parent_session_id else ""
        lines.append(f"[{field(s.first_ts)} .. {field(s.last_ts)}] {field(s.harness)} {field(s.workdir)} "
                     f"session={field(s.session_id)} turns={s.turns} chunks={s.chunks}{where}{sub}")
    lines.append(f"{len(sessions)} session(s)")
    return "\n".join(lines)
