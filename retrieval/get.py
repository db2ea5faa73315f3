"""`get`: a turn and the turns around it, split blocks reassembled whole."""

from __future__ import annotations

from dataclasses import dataclass, field

from funes.chunking import reassemble
from funes.errors import FunesError, bounded_int
from funes.memory.sql import quote
from funes.memory.reader import Memory
from funes.retrieval.bounds import MAX_SEQ, MAX_WINDOW, RANGE_MAX_CHARS, RANGE_TURNS

ROW_FIELDS = ("seq", "turn_uuid", "role", "ts", "block_idx", "split_idx", "char_start", "block_type",
              "tool_name", "text", "harness", "workdir")


class TurnNotFoundError(FunesError):
    exit_code = 1


@dataclass
class BlockView:
    block_type: str
    tool_name: str | None
    text: str


@dataclass
class TurnView:
    seq: int
    turn_uuid: str
    role: str
    ts: str
    blocks: list[BlockView] = field(default_factory=list)


@dataclass
class Window:
    session_id: str
    harness: str
    workdir: str
    target: str | None  # the requested turn's uuid; None for a range
    turns: list[TurnView]
    total: int  # turns in the session (its highest seq + 1)
    next_seq: int | None = None  # a range cut short, or with turns after it: where to continue


def turn_window(memory: Memory, session_id: str, turn_uuid: str, window: int = 3) -> Window:
    """The turn ``turn_uuid`` of the session ``session_id`` names (an id, or a unique
    prefix of one) and ``window`` turns either side."""
    bounded_int("window", window, 0, MAX_WINDOW)
    session_id = memory.resolve_session(session_id)
    found = memory.scan(["seq"], f"session_id = {quote(session_id)} AND turn_uuid = {quote(turn_uuid)}")
    if found.num_rows == 0:
        raise TurnNotFoundError(f"turn {turn_uuid} not found in session {session_id}")
    seq = int(found.column("seq")[0].as_py())
    rows = memory.session_rows(session_id, seq - window, seq + window, columns=ROW_FIELDS)
    return _window(memory, session_id, rows, target=turn_uuid)


def turn_range(memory: Memory, session_id: str, first: int = 0, last: int | None = None,
               max_chars: int = RANGE_MAX_CHARS) -> Window:
    """The turns of a session (an id, or a unique prefix of one) whose seq is from
    ``first`` to ``last`` (default: ``first`` + 19), cut before the turn that would
    bring the text past ``max_chars`` (one turn at least, whole).  ``Window.next_seq``
    names where to continue when turns of the session follow."""
    bounded_int("--from", first, 0, MAX_SEQ)
    if last is None:
        last = first + RANGE_TURNS - 1
    bounded_int("--to", last, first, MAX_SEQ)
    session_id = memory.resolve_session(session_id)
    rows = memory.session_rows(session_id, first, last, columns=ROW_FIELDS)
    view = _window(memory, session_id, rows, target=None)
    size, kept = 0, []
    for turn in view.turns:
        size += sum(len(block.text) for block in turn.blocks)
        if kept and size > max_chars:
            view.next_seq = turn.seq
            break
        kept.append(turn)
    view.turns = kept
    if view.next_seq is None and kept and last < view.total - 1:
        view.next_seq = last + 1
    if not kept:
        raise TurnNotFoundError(f"session {session_id} has no turn from {first} to {last} "
                                f"(its turns are 0-{view.total - 1})")
    return view


def _window(memory: Memory, session_id: str, rows: list[dict], target: str | None) -> Window:
    """The turns of ``rows`` (one session's, ordered), their split blocks reassembled."""
    seqs = memory.scan(["seq"], f"session_id = {quote(session_id)}").column("seq").to_pylist()
    turns: dict[tuple[int, str], TurnView] = {}
    pieces: dict[tuple[int, str, int], list[tuple[int, int, str]]] = {}
    block_meta: dict[tuple[int, str, int], tuple[str, str | None]] = {}
    for row in rows:
        key = (int(row["seq"]), row["turn_uuid"])
        if key not in turns:
            turns[key] = TurnView(seq=key[0], turn_uuid=key[1], role=row["role"] or "", ts=row["ts"] or "")
        block_key = (*key, int(row["block_idx"]))
        pieces.setdefault(block_key, []).append((int(row["split_idx"]), int(row["char_start"] or 0), row["text"]))
        block_meta[block_key] = (row["block_type"] or "", row["tool_name"])
    for block_key in sorted(pieces):
        splits = sorted(pieces[block_key])
        block_type, tool_name = block_meta[block_key]
        text = reassemble((start, text) for _, start, text in splits)
        turns[block_key[:2]].blocks.append(BlockView(block_type, tool_name, text))
    ordered = [turns[key] for key in sorted(turns)]
    first = rows[0] if rows else {}
    return Window(session_id=session_id, harness=first.get("harness") or "", workdir=first.get("workdir") or "",
                  target=target, turns=ordered, total=(max(seqs) + 1) if seqs else 0)


def block_text(block: BlockView) -> str:
    if block.block_type == "text":
        return block.text
    label = block.block_type if not block.tool_name else f"{block.block_type} {block.tool_name}"
    return f"[{label}] {block.text}"


def format_window(window: Window) -> str:
    """The agent format of a window: per turn a header, its blocks quoted line by line
    (see funes.retrieval.format), ``---``; then the range read and the session's size."""
    from funes.retrieval.format import SEPARATOR, field, quoted

    parts = []
    for turn in window.turns:
        marker = "  (requested)" if turn.turn_uuid == window.target else ""
        body = quoted("\n\n".join(block_text(block) for block in turn.blocks))
        parts.append(f"[{field(turn.ts)}] {field(turn.role)} seq{turn.seq} turn={field(turn.turn_uuid)}{marker}\n"
                     f"{body}\n{SEPARATOR}")
    if window.turns:
        parts.append(f"turns {window.turns[0].seq}-{window.turns[-1].seq} of {window.total}")
    if window.next_seq is not None:
        parts.append(f"continue with: funes get {field(window.session_id)} --from {window.next_seq}")
    return "\n".join(parts)
