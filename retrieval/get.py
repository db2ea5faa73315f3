"""`get`: a turn and the turns around it, split blocks reassembled whole."""

from __future__ import annotations

from dataclasses import dataclass, field

from funes.chunking import reassemble
from funes.errors import FunesError, bounded_int
from funes.memory.store import Memory
from funes.retrieval.bounds import MAX_WINDOW

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
    target: str  # the requested turn's uuid
    turns: list[TurnView]
    total: int  # turns in the session (its highest seq + 1)


def turn_window(memory: Memory, session_id: str, turn_uuid: str, window: int = 3) -> Window:
    """The turn ``turn_uuid`` of the session ``session_id`` names (an id, or a unique
    prefix of one) and ``window`` turns either side."""
    bounded_int("window", window, 0, MAX_WINDOW)
    session_id = memory.resolve_session(session_id)
    quoted_session = session_id.replace("'", "''")
    quoted_turn = turn_uuid.replace("'", "''")
    found = memory.scan(["seq"], f"session_id = '{quoted_session}' AND turn_uuid = '{quoted_turn}'")
    if found.num_rows == 0:
        raise TurnNotFoundError(f"turn {turn_uuid} not found in session {session_id}")
    seq = int(found.column("seq")[0].as_py())
    rows = memory.session_rows(session_id, seq - window, seq + window, columns=ROW_FIELDS)
    seqs = memory.scan(["seq"], f"session_id = '{quoted_session}'").column("seq").to_pylist()
    turns: dict[tuple[int, str], TurnView] = {}
    pieces: dict[tuple[int, str, int], list[tuple[int, str]]] = {}
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
                  target=turn_uuid, turns=ordered, total=(max(seqs) + 1) if seqs else 0)


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
    return "\n".join(parts)
