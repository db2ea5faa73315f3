"""One shape for every agent's traces: Session → Turn → Block.

Every agent's parser (``funes/agents/<name>/parser.py``) produces these objects
and nothing downstream of parsing knows which agent wrote a transcript.  A
session's ``harness`` is its agent's stored name (:attr:`funes.agents.Agent.harness`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

BLOCK_TYPES = ("text", "thinking", "tool_use", "tool_result")
ROLES = ("user", "assistant", "tool")

# Tiers order indexing work: what people said first, tool calls next, tool output last.
TIER_OF_BLOCK = {"text": 1, "thinking": 1, "tool_use": 2, "tool_result": 3}
# Each tier by the name reports give it (thinking shares the text tier).
TIER_NAMES = {1: "text", 2: "tool_use", 3: "tool_result"}


# What a tool call did to a file, as far as its arguments tell.
FILE_ACTIONS = ("read", "edit", "write", "delete")


@dataclass(frozen=True, slots=True)
class FileTouch:
    """A file a tool call read, edited in place, wrote whole (created or
    overwrote) or deleted, with the path as the trace records it."""

    path: str
    action: str  # one of FILE_ACTIONS


@dataclass(slots=True)
class Block:
    block_type: str  # one of BLOCK_TYPES
    text: str
    tool_name: str | None = None
    tool_use_id: str | None = None
    # Provenance a parser reads off the agent's own tool records, for history and
    # file/command filters: on tool_use blocks the files the call touched and the
    # shell command it ran; on tool_result blocks the command's exit status when
    # the trace records one.
    files: tuple[FileTouch, ...] = ()
    command: str | None = None
    exit_code: int | None = None


@dataclass(slots=True)
class Turn:
    turn_uuid: str
    parent_uuid: str | None
    seq: int  # 0-based among the session's retained turns, in file/row order
    role: str  # one of ROLES
    ts: str  # RFC 3339 UTC ("2026-01-02T03:04:05.123Z") or "" when unknown
    blocks: list[Block]
    # A subagent's turn its parent's transcript holds inline (its "user" is the agent
    # that launched it); a subagent with a transcript of its own is Session.is_subagent.
    is_subagent: bool = False


@dataclass(slots=True)
class ParseWarning:
    """Something skipped while parsing; ``line`` is 1-based (0 when not line-bound)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass(slots=True)
class Session:
    harness: str
    session_id: str
    source_path: str
    cwd: str  # raw recorded working directory ("" when none)
    workdir: str  # facet derived from cwd (see common.workdir_facet)
    # "owner/name" and branch: what the trace records (a remote URL, a branch),
    # else what the checkout at cwd says now (common.finish_session).
    repo: str | None = None
    branch: str | None = None
    parent_session_id: str | None = None
    is_subagent: bool = False
    turns: list[Turn] = field(default_factory=list)
    warnings: list[ParseWarning] = field(default_factory=list)

    @property
    def key(self) -> str:
        return session_key(self.harness, self.session_id)


def session_key(harness: str, session_id: str) -> str:
    """The partition key of a session: ``<harness>--<session_id>``."""
    return f"{harness}--{session_id}"


def split_session_key(key: str) -> tuple[str, str]:
    """``(harness, session_id)`` of a partition key, :func:`session_key` read back."""
    harness, _, session_id = key.partition("--")
    return harness, session_id


@dataclass(frozen=True, slots=True)
class SourceUnit:
    """One independently indexable piece of trace data.

    A transcript file, one session inside an agent's database, or one row
    (session) of an export file: whatever the agent's parser can read on its own.
    ``signature`` changes whenever the unit's content may have changed (size and
    mtime for a file, the newest message id for a database session), so an
    unchanged unit is never parsed twice.
    """

    harness: str
    path: Path
    session_id: str
    signature: str

    @property
    def key(self) -> str:
        return session_key(self.harness, self.session_id)
