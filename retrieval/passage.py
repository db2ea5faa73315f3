"""What a hit shows: the passage of its block around the chunk that matched.

A block is split into chunks of about 600 characters (funes/chunking.py) so that
each is embedded whole, and ranking keeps one chunk per block, its best.  The
best chunk is not always the piece that holds the answer: the reasoning before a
conclusion, the line of a log after the one the query's words matched.  So a hit
shows its whole block when the block is at most :data:`PASSAGE_CHARS`, else that
many characters of it centred on the chunk that matched, verbatim.

A tool call is stored as its arguments' compact JSON (the Rust funes's format),
where a command's newlines and quotes are escapes (``\\n``, ``\\"``).  It is shown
as its arguments, one ``name: value`` a line with string values as they were
given, so the command or the path an agent ran reads as it ran it.

On the coding dev set this lifts R@10 from 0.712 to 0.797 and MRR@10 from 0.392
to 0.438 with the ranking unchanged, and changes nothing on LoCoMo, whose turns
are single short chunks (BENCHMARKS.md, "Recall quality (dev sets)").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from funes.chunking import SPLIT_SIZE, reassemble
from funes.memory.documents import call_text
from funes.memory.tokens import TOKENIZER, tokenize

# Characters a hit shows of a block longer than that: two chunks' worth.
PASSAGE_CHARS = 1200
_WORD = re.compile(TOKENIZER["pattern"])


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) one space: the form
    in which two texts are the same text, and a preview reads on one line."""
    return " ".join(text.split())


def readable_call(text: str) -> str:
    """A tool call's JSON arguments as ``name: value`` lines (strings unescaped,
    other values as compact JSON); text that is not a JSON object as it is."""
    try:
        arguments = json.loads(text)
    except ValueError:
        return text
    if not isinstance(arguments, dict):
        return text
    return "\n".join(f"{name}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
                     for name, value in arguments.items())


def passage(pieces: Sequence[tuple[int, str]], chunk: tuple[int, str], block_type: str,
            limit: int = PASSAGE_CHARS) -> str:
    """The text a hit shows.  ``pieces``: the block's ``(char_start, text)``
    splits in split order, every one or a run of them that holds the passage
    (:func:`passage_pieces`; the chunk alone is enough); ``chunk``: the hit's own
    ``(char_start, text)``."""
    start, text = chunk
    if len(pieces) > 1:
        base = pieces[0][0]  # a run that starts inside the block
        block = reassemble((at - base, piece) for at, piece in pieces)
        start -= base
    else:
        block = text
    if block_type == "tool_use":
        shown = readable_call(block)
        if shown is not block:
            if len(shown) <= limit:
                return shown
            # Where the chunk is in the decoded call: one of its whole lines
            # (escapes undone: a piece of a split call is no JSON of its own).
            piece = call_text(text)
            lines = piece.split("\n")
            probe = max(lines[1:-1] or lines, key=len)
            at = shown.find(probe) if len(probe) >= 20 else -1
            if at >= 0:
                begin = max(0, at - piece.find(probe))
            else:  # no line to find: where it is in proportion
                begin = start * len(shown) // max(1, len(block))
            return _window(shown, begin, begin + len(piece), limit)
    if len(block) <= limit:
        return block
    return _window(block, start, start + len(text), limit)


def _window(text: str, start: int, end: int, limit: int) -> str:
    """``limit`` characters of ``text`` around ``[start, end)``, as even on both
    sides as the text's ends allow."""
    low, high = _window_bounds(len(text), start, end, limit)
    return text[low:high]


def _window_bounds(length: int, start: int, end: int, limit: int) -> tuple[int, int]:
    start, end = max(0, min(start, length)), max(0, min(end, length))
    low = max(0, start - max(0, limit - (end - start)) // 2)
    high = min(length, low + max(limit, end - start))
    return max(0, high - max(limit, end - start)), high


# The splits either side of a hit's chunk first read for its passage: at the shortest
# stride between splits (150 characters) four reach the 600 a passage can run past
# its chunk, and a typical one needs one or two.
PASSAGE_REACH = 4
Block = tuple[str, str, int]


def passage_pieces(read: Callable[[Mapping[Block, Iterable[int]]], dict[Block, dict[int, tuple[int, str]]]],
                   rows: Iterable[Mapping[str, Any]], limit: int = PASSAGE_CHARS) -> dict[Block, list[tuple[int, str]]]:
    """Of each block of ``rows`` (chunk rows, one a block, as the ranking keeps them)
    that can have more than one split, the run of its splits that holds the passage
    :func:`passage` shows around that row:
    ``read`` (:meth:`funes.memory.reader.Memory.block_splits`) is asked for the
    splits within :data:`PASSAGE_REACH` of the chunk (a tool call's from its first:
    its arguments are decoded whole), then twice as far, while the passage would
    reach past what was read, the run ended early or the block's end is unknown."""
    todo: dict[Block, tuple[Mapping[str, Any], dict[int, tuple[int, str]]]] = {}
    for row in rows:
        text = row["text"] or ""
        if row["split_idx"] or len(text) >= SPLIT_SIZE // 2:  # else it is its whole block
            block = (row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0))
            todo[block] = (row, {int(row["split_idx"] or 0): (int(row["char_start"] or 0), text)})
    done: dict[Block, list[tuple[int, str]]] = {}
    asked: dict[Block, set[int]] = {block: set() for block in todo}
    reach = PASSAGE_REACH
    while todo:
        wanted = {}
        for block, (row, have) in todo.items():
            split = int(row["split_idx"] or 0)
            first, last = _run(have, split)
            # Never past a split asked for and absent: the block ends there (before
            # the run, the memory lost it).
            low = first if first - 1 in asked[block] else 0 if row["block_type"] == "tool_use" \
                else max(0, split - reach)
            high = last if last + 1 in asked[block] else split + reach
            wanted[block] = [i for i in range(low, high + 1) if i not in have and i not in asked[block]]
            asked[block].update(wanted[block])
        found = read({block: splits for block, splits in wanted.items() if splits})
        for block in list(todo):
            row, have = todo[block]
            have.update(found.get(block, {}))
            first, last = _run(have, int(row["split_idx"] or 0))
            if not wanted[block] or _holds_passage(row, have, first, last, asked[block], limit):
                done[block] = [have[i] for i in range(first, last + 1)]
                del todo[block]
        reach *= 2
    return done


def _run(have: Mapping[int, tuple[int, str]], split: int) -> tuple[int, int]:
    """The first and last split of the unbroken run of ``have`` through ``split``."""
    first = last = split
    while first - 1 in have:
        first -= 1
    while last + 1 in have:
        last += 1
    return first, last


def _holds_passage(row: Mapping[str, Any], have: Mapping[int, tuple[int, str]], first: int, last: int,
                   asked: set[int], limit: int) -> bool:
    """Whether the run ``first``..``last`` of ``have`` shows ``row``'s passage as its
    whole block would: a tool call needs its whole block, a text the window around
    the chunk with the run's ends not cutting it."""
    starts, ends = first == 0, last + 1 in asked  # asked for and absent: the block ends there
    if starts and ends:
        return True
    if row["block_type"] == "tool_use":
        return False
    base = have[first][0]
    length = have[last][0] + len(have[last][1]) - base
    if length <= limit:  # perhaps all of a short block: not known until its ends are
        return False
    chunk_start = int(row["char_start"] or 0) - base
    low, high = _window_bounds(length, chunk_start, chunk_start + len(row["text"] or ""), limit)
    return (low > 0 or starts) and (high < length or ends)


# What a hit shows in the agent format: this many characters of its passage, where
# the query's words are densest (the budget holds about six such hits in 1,000
# tokens); chosen on both coding dev sets together (BENCHMARKS.md, "Recall output budget").
ANSWER_CHARS = 480
# A tool result's answer is a span of output (a log's lines, a listing), longer than
# a sentence of text; a wider window keeps it whole (chosen leave one session out on
# both coding dev sets, BENCHMARKS.md "Recall output budget").
TOOL_RESULT_ANSWER_CHARS = 800
# A cut moves to a line break (else a space) at most this far, so a window shows whole lines.
SNAP_CHARS = 60
ELLIPSIS = "…"


def answer_chars(block_type: str) -> int:
    """How much of a hit's passage the agent format shows, by its block type."""
    return TOOL_RESULT_ANSWER_CHARS if block_type == "tool_result" else ANSWER_CHARS


def answer_window(text: str, terms: frozenset[str], limit: int = ANSWER_CHARS) -> str:
    """The part of a hit's passage ``text`` that answers: ``limit`` characters (about),
    starting at a word of the query, that hold the most distinct query ``terms`` (tokens
    as BM25 reads them), then the most of their occurrences, the earliest of equals; cut
    at line breaks or spaces, ``…`` where text was left out.  Without a matching word, the
    passage's middle (the chunk that matched, retrieval/passage.py)."""
    if len(text) <= limit:
        return text
    words = list(_WORD.finditer(text))
    hits = [(m.start(), set(tokens) & terms) for m, tokens in zip(words, tokenize([m.group() for m in words]))]
    hits = [(at, found) for at, found in hits if found]
    if hits:
        def covered(start: int) -> tuple[int, int]:
            inside = [found for at, found in hits if start <= at < start + limit]
            return len(set().union(*inside)), len(inside)
        start = max((at for at, _ in hits), key=lambda s: (*covered(s), -s))
    else:
        start = (len(text) - limit) // 2
    start = min(max(0, start), len(text) - limit)
    return _cut(text, start, start + limit)


def _cut(text: str, start: int, end: int) -> str:
    if start > 0:
        line = text.rfind("\n", max(0, start - SNAP_CHARS), start)
        space = -1 if not text[start - 1].isalnum() else text.find(" ", start, start + SNAP_CHARS)
        start = line + 1 if line >= 0 else space + 1 if space >= 0 else start
    if end < len(text):
        line = text.rfind("\n", end - SNAP_CHARS, end)
        space = text.rfind(" ", end - SNAP_CHARS, end)
        end = line if line >= 0 else space if space >= 0 else end
    return (ELLIPSIS if start > 0 else "") + text[start:end].strip("\n") + (ELLIPSIS if end < len(text) else "")
