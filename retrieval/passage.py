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
from collections.abc import Sequence

from funes.chunking import reassemble
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
    splits in split order (those a reader has; the chunk alone is enough);
    ``chunk``: the hit's own ``(char_start, text)``."""
    start, text = chunk
    block = reassemble(pieces) if len(pieces) > 1 else text
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
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    low = max(0, start - max(0, limit - (end - start)) // 2)
    high = min(len(text), low + max(limit, end - start))
    low = max(0, high - max(limit, end - start))
    return text[low:high]


# What a hit shows in the agent format: this many characters of its passage, where
# the query's words are densest (the budget holds about six such hits in 1,000
# tokens); chosen on both coding dev sets together (BENCHMARKS.md, "Recall output budget").
ANSWER_CHARS = 480
# A tool result's answer is a span of output (a log's lines, a listing), longer than
# a sentence of text; a wider window keeps it whole (chosen leave one session out on
# both coding dev sets, BENCHMARKS.md "Recall output budget").
TOOL_RESULT_ANSWER_CHARS = 800


def answer_chars(block_type: str) -> int:
    """How much of a hit's passage the agent format shows, by its block type."""
    return TOOL_RESULT_ANSWER_CHARS if block_type == "tool_result" else ANSWER_CHARS
# A cut moves to a line break (else a space) at most this far, so a window shows whole lines.
SNAP_CHARS = 60
ELLIPSIS = "…"


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
