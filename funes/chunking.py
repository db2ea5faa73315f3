"""Sessions → redacted chunks with ids that never change.

One chunk per block, long blocks split with an overlap at line or word breaks.
A chunk's id is derived from (session, turn, block index, split index) only, and
its text from the block alone, so a completed turn yields byte-identical chunks
whenever it is indexed, and writing chunks is idempotent.  Each chunk records
where it starts in its block (``char_start``), so ``get`` reassembles a split
block exactly: ``block = block[:char_start] + chunk.text`` over its splits.

Order of work on a block: cap its size (head and tail kept), elide inline base64
``data:`` payloads, redact secrets on the whole block (a secret never straddles a
split), then split.  A block whose secrets cannot be located safely is dropped.
"""

from __future__ import annotations

import hashlib
import operator
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields

from funes.provenance import encode_commands, encode_files, session_root, turn_commands, turn_files
from funes.redaction import elide_data_uris, redact_many
from funes.traces.model import TIER_OF_BLOCK, Session

# Characters per chunk and the overlap between consecutive splits of one block.
# MiniLM reads 256 tokens and transcript text runs ~3.1 characters a token (median;
# 2.4 at p10), so at 1,200 characters (the Rust funes) only 63 % of chunks fit the
# window whole and a quarter of all tokens are never read; at 600, 94.5 % fit and
# 1.8 % go unread (benchmarks/embed_cpu.py, BENCHMARKS.md "Embedding").
SPLIT_SIZE = 600
SPLIT_OVERLAP = 150
# Huge tool outputs keep their head and tail; the middle is replaced by a marker.
BLOCK_CAP = 100_000


def chunking_metadata() -> dict[str, str]:
    """Stamped on a memory's table: ids of split blocks depend on these, so a
    future change can tell which memories were split the old way."""
    return {"funes.chunking.split_size": str(SPLIT_SIZE), "funes.chunking.split_overlap": str(SPLIT_OVERLAP)}


def chunk_id(session_id: str, turn_uuid: str, block_idx: int, split_idx: int) -> str:
    """First 16 hex digits of SHA-1 over ``sid:turn:block:split`` (as the Rust funes)."""
    key = f"{session_id}:{turn_uuid}:{block_idx}:{split_idx}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def cap_block(text: str, cap: int = BLOCK_CAP) -> str:
    if len(text) <= cap:
        return text
    half = cap // 2
    elided = len(text) - 2 * half
    return f"{text[:half]}\n[… {elided} characters elided …]\n{text[-half:]}"


def split_text(text: str, size: int = SPLIT_SIZE, overlap: int = SPLIT_OVERLAP) -> list[tuple[int, str]]:
    """``(char_start, piece)`` pairs covering ``text``; consecutive pieces overlap by
    about ``overlap`` characters and break after a newline, else after a space, in
    the second half of the window, else hard at ``size``."""
    if len(text) <= size:
        return [(0, text)]
    pieces: list[tuple[int, str]] = []
    start = 0
    length = len(text)
    while True:
        end = start + size
        if end >= length:
            pieces.append((start, text[start:]))
            return pieces
        floor = start + size // 2
        cut = text.rfind("\n", floor, end)
        if cut == -1:
            cut = text.rfind(" ", floor, end)
        cut = end if cut == -1 else cut + 1
        pieces.append((start, text[start:cut]))
        next_start = cut - overlap
        # Start the overlap at a word boundary when one is near, for readable chunks.
        space = text.find(" ", next_start, cut)
        if space != -1 and space + 1 < cut:
            next_start = space + 1
        start = max(next_start, start + 1)


def reassemble(pieces: Iterable[tuple[int, str]]) -> str:
    """The block text back from its ``(char_start, text)`` splits, in split order."""
    block = ""
    for start, piece in pieces:
        block = block[:start] + piece
    return block


@dataclass(slots=True)
class Chunk:
    id: str
    text: str
    harness: str
    session_id: str
    turn_uuid: str
    parent_uuid: str | None
    seq: int
    ts: str
    role: str
    block_type: str
    tool_name: str | None
    block_idx: int
    split_idx: int
    char_start: int
    tier: int
    workdir: str
    cwd: str
    repo: str | None
    branch: str | None
    source_path: str
    parent_session_id: str | None
    is_subagent: bool
    # The turn's provenance (funes/provenance.py): files its tool calls touched and
    # commands they ran, on every chunk of the turn; a tool_result's exit status.
    files: str | None = None
    commands: str | None = None
    exit_code: int | None = None

    def __reduce__(self) -> tuple[type[Chunk], tuple]:
        # A pool worker's chunks reach the writer pickled: as their fields in order
        # they take half the time each way of a slots dataclass's state (0.16 s to
        # pickle and 0.19 s to unpickle 60k chunks, against 0.40 and 0.38 s).
        return Chunk, _chunk_fields(self)


_chunk_fields = operator.attrgetter(*(f.name for f in fields(Chunk)))


@dataclass(slots=True)
class ChunkReport:
    """What chunking one or more sessions did, for summaries and warnings."""

    chunks: int = 0
    blocks: int = 0
    dropped_blocks: int = 0  # secrets that could not be located safely
    redactions: Counter[str] = field(default_factory=Counter)

    def merge(self, other: ChunkReport) -> None:
        self.chunks += other.chunks
        self.blocks += other.blocks
        self.dropped_blocks += other.dropped_blocks
        self.redactions.update(other.redactions)


def chunk_session(
    session: Session,
    *,
    include_thinking: bool = True,
    report: ChunkReport | None = None,
) -> Iterator[Chunk]:
    """Every chunk of a session, redacted, in turn/block/split order."""
    report = report if report is not None else ChunkReport()
    selected = [
        (turn, block_idx, block)
        for turn in session.turns
        for block_idx, block in enumerate(turn.blocks)
        if include_thinking or block.block_type != "thinking"
    ]
    # One scan over the session's blocks; only blocks with findings are redacted one by one.
    # Each turn's files and commands are redacted too (a command line can hold a
    # token); what cannot be redacted safely is left out.
    root = session_root(session)
    provenance: dict[int, tuple[str | None, str | None]] = {}
    for turn, _, _ in selected:
        if turn.seq not in provenance:
            provenance[turn.seq] = (encode_files(turn_files(turn, session.cwd, root)),
                                    encode_commands(turn_commands(turn)))
    stated = [(seq, which, text) for seq, pair in provenance.items() for which, text in enumerate(pair) if text]
    redactions = redact_many([elide_data_uris(cap_block(block.text)) for _, _, block in selected]
                             + [text for _, _, text in stated])
    for (seq, which, _), redaction in zip(stated, redactions[len(selected):], strict=True):
        pair = list(provenance[seq])
        pair[which] = redaction.text
        provenance[seq] = (pair[0], pair[1])
    for (turn, block_idx, block), redaction in zip(selected, redactions[:len(selected)], strict=True):
        files, commands = provenance[turn.seq]
        report.blocks += 1
        report.redactions.update(redaction.findings)
        if redaction.text is None:
            report.dropped_blocks += 1
            continue
        for split_idx, (start, piece) in enumerate(split_text(redaction.text)):
            report.chunks += 1
            yield Chunk(
                id=chunk_id(session.session_id, turn.turn_uuid, block_idx, split_idx),
                text=piece,
                harness=session.harness,
                session_id=session.session_id,
                turn_uuid=turn.turn_uuid,
                parent_uuid=turn.parent_uuid,
                seq=turn.seq,
                ts=turn.ts,
                role=turn.role,
                block_type=block.block_type,
                tool_name=block.tool_name,
                block_idx=block_idx,
                split_idx=split_idx,
                char_start=start,
                tier=TIER_OF_BLOCK.get(block.block_type, 1),
                workdir=session.workdir,
                cwd=session.cwd,
                repo=session.repo,
                branch=session.branch,
                source_path=session.source_path,
                parent_session_id=session.parent_session_id,
                is_subagent=session.is_subagent or turn.is_subagent,
                files=files,
                commands=commands,
                exit_code=block.exit_code,
            )
