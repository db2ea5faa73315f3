"""The BM25 document of a chunk: its text with the context it is found by.

What is indexed for a chunk is a *document* (:func:`document`), not the bare chunk
text: its own text weighted three times after its context, which depends on the
block type (:func:`document_pieces`).  Text, thinking and tool calls take the two
conversation chunks (text or thinking) before them: a turn often answers the one
before it ("here it is!" after "did you finish the painting?"), and an assistant's
short "stale build artefacts, let me recompile" is found by the reasoning before
it.  A tool result takes the call that produced it ("what did the test run print"
names the command), not the conversation; a tool call reads as its argument
values, not escaped JSON.  These were chosen on the LoCoMo and coding dev sets
(BENCHMARKS.md, "Ranking and fusion").  Only *earlier* chunks are used, so a
chunk's document never changes once it is written (transcripts grow at the end),
and the context is derived from the table when a segment is built, never stored:
deleting or re-redacting a chunk removes its words from its neighbours' documents
at the next rebuild.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from funes.memory.tokens import TermCounts, count_pieces

# What a chunk's document holds (see :func:`document`); part of the manifest, so a
# change rebuilds the index rather than mixing two schemes.  ``context_blocks``:
# the block types that serve as context (the conversation, not tool traffic);
# ``context_turns``: context comes from at most this many turns (by seq) before
# the chunk's own, which bounds the rows a writer reads to build the documents of
# a few new chunks; ``call_chars``: how much of the producing call a tool result's
# document carries.
DOCUMENT = {"scheme": 2, "context_chunks": 2, "context_chars": 400, "context_turns": 8, "own_weight": 3,
            "context_blocks": ["text", "thinking"], "call_chars": 400}
# Columns :func:`documents_from_rows` reads.
DOCUMENT_COLUMNS = ("id", "session_id", "seq", "block_idx", "split_idx", "block_type", "tool_name", "text")


def text_head(text: str, limit: int) -> str:
    """At most ``limit`` characters from the start of ``text``, cut at a space when
    one is in the second half."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut != -1 else limit]


_JSON_ESCAPE = re.compile(r'\\(["\\/nrt])')
_UNESCAPED = {"n": "\n", "r": "\n", "t": "\t"}


@functools.lru_cache(maxsize=1024)
def call_text(text: str) -> str:
    """What BM25 reads of a tool call stored as JSON: its argument values, one a
    line, strings unescaped (a command, a path, a file's new content), not the
    JSON around them, whose escapes would glue ``\\n`` onto the next word.  A
    piece of a split call is not valid JSON: its escapes are undone alone.
    Memoised: a call's document reads it, and so does each of its results' (a
    piece of a call is at most a chunk's length, so the memo stays small)."""
    try:
        arguments = json.loads(text)
    except ValueError:
        return _JSON_ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), text)
    if not isinstance(arguments, dict):
        return text
    return "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in arguments.values())


def document_pieces(text: str, context: Sequence[str] = (), *, block_type: str = "text",
                    tool_name: str | None = None, call: str | None = None) -> list[tuple[str, int]]:
    """The text BM25 indexes for a chunk, as its pieces in order, each with how often
    it occurs there (:func:`document` joins them by line breaks).

    * text and thinking, and tool calls: the last ``context_chunks`` of
      ``context`` (the conversation before it, each cut to ``context_chars``),
      then the chunk's own text ``own_weight`` times, so a term of the chunk itself
      weighs more than one of its neighbours'.  A LoCoMo reply ("here it is!")
      is found by the question before it; an assistant's "stale build artefacts,
      let me recompile" by the reasoning that led to it.
    * a tool call reads as its tool's name and its argument values
      (:func:`call_text`), not as JSON;
    * a tool result: the head of the ``call`` that produced it (``call_chars``),
      then its own text, with the tool's name, ``own_weight`` times, and no
      conversation: "what did the test run print" names the command, and the
      prose around a long output would only blur it."""
    if block_type == "tool_result":
        parts = [(text_head(call_text(call), DOCUMENT["call_chars"]), 1)] if call else []
    else:
        parts = [(text_head(c, DOCUMENT["context_chars"]), 1) for c in context[-DOCUMENT["context_chunks"]:] if c]
    own = call_text(text) if block_type == "tool_use" else text
    if tool_name and block_type in ("tool_use", "tool_result"):
        own = f"{tool_name} {own}"
    return [*parts, (own, DOCUMENT["own_weight"])]


def document(text: str, context: Sequence[str] = (), *, block_type: str = "text", tool_name: str | None = None,
             call: str | None = None) -> str:
    """The text BM25 indexes for a chunk (:func:`document_pieces`)."""
    return "\n".join(piece for piece, times in document_pieces(text, context, block_type=block_type,
                                                               tool_name=tool_name, call=call)
                     for _ in range(times))


def documents_from_rows(rows: Sequence[dict], wanted: Iterable[str] | None = None) -> dict[str, str]:
    """``{chunk id: document}`` for the ``wanted`` ids (all when None), from rows
    with :data:`DOCUMENT_COLUMNS` that include, for each wanted chunk, the chunks of
    its session up to ``context_turns`` turns before it (extra rows are harmless).

    Rows are ordered by (seq, block_idx, split_idx) in their session.  A chunk's
    context is the chunks of ``context_blocks`` types just before it within
    ``context_turns`` turns; a tool result's call is the nearest earlier tool call
    (its first piece) of the same tool within that reach."""
    return _documents_of_rows(rows, wanted, document)


def call_heads(results: Sequence[dict], calls: Sequence[dict]) -> dict[str, str]:
    """``{chunk id: head}``: for each tool result among ``results`` (rows with
    :data:`DOCUMENT_COLUMNS`), the head of the call that produced it as its document
    carries it (:func:`document_pieces`), found among ``calls``: the first pieces of
    the tool calls of its session up to ``context_turns`` turns before it.  A result
    with no call in reach is absent."""
    wanted = [row["id"] for row in results if row.get("block_type") == "tool_result"]
    pieces = _documents_of_rows([*results, *calls], wanted, document_pieces)
    return {chunk: parts[0][0] for chunk, parts in pieces.items() if len(parts) > 1}


def _documents_of_rows(rows: Sequence[dict], wanted: Iterable[str] | None, make: Callable[..., Any]) -> dict[str, Any]:
    """:func:`documents_from_rows`, each document made by ``make`` (:func:`document`
    or :func:`document_pieces`) from the chunk's text, context and call."""
    want = None if wanted is None else set(wanted)
    by_session: dict[str, list[dict]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row)
    out: dict[str, Any] = {}
    depth, reach = DOCUMENT["context_chunks"], DOCUMENT["context_turns"]
    conversation = set(DOCUMENT["context_blocks"])
    for session_rows in by_session.values():
        session_rows.sort(key=lambda r: (int(r["seq"] or 0), int(r["block_idx"] or 0), int(r["split_idx"] or 0),
                                         r["id"]))
        seen: set[str] = set()
        context: list[tuple[int, str]] = []  # (seq, text) of the conversation so far, last `depth`
        calls: dict[str | None, tuple[int, str]] = {}  # tool name -> (seq, text) of its last call
        for row in session_rows:  # a row fetched twice (overlapping queries) counts once
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            seq = int(row["seq"] or 0)
            block_type = row.get("block_type") or "text"
            tool = row.get("tool_name")
            text = row["text"] or ""
            if want is None or row["id"] in want:
                call = calls.get(tool)
                out[row["id"]] = make(
                    text, [t for s, t in context if seq - s <= reach], block_type=block_type, tool_name=tool,
                    call=call[1] if call and seq - call[0] <= reach else None)
            if block_type in conversation:
                context = [*context, (seq, text)][-depth:] if depth > 0 else []
            elif block_type == "tool_use" and not row["split_idx"]:
                calls[tool] = (seq, text)
    return out


def document_rows(chunks: Iterable[object]) -> list[dict]:
    """Chunks (:class:`funes.chunking.Chunk`) as the rows :func:`documents_from_rows` reads."""
    return [{column: getattr(chunk, column) for column in DOCUMENT_COLUMNS} for chunk in chunks]


def session_term_counts(chunks: Sequence[object]) -> TermCounts:
    """The term counts of the documents of ``chunks``, a session's, as a write of
    them builds them when the table holds nothing else of the session: made by
    the process that chunked them (see :class:`TermCounts`)."""
    documents = _documents_of_rows(document_rows(chunks), None, document_pieces)
    return count_pieces(list(documents), list(documents.values()))


def results_of_calls(rows: Sequence[dict]) -> dict[str, dict]:
    """``{call chunk id: result row}``: the first piece of the result of each tool
    call whose first piece is among ``rows`` (with :data:`DOCUMENT_COLUMNS`; the
    sessions' tool traffic, first pieces, from ``context_turns`` turns before the
    calls to as many after), so a call is shown with what came of it.

    Calls made together (an agent's parallel reads) are answered in the order they
    were made: in a group (calls, then the results after them, until the next
    call), when a tool has as many results as calls its k-th result is its k-th
    call's; otherwise (a call left unanswered) each result is the nearest earlier
    call's of its tool, the rule a result's document follows.  That rule alone
    would give two parallel reads' results the second path; the document keeps
    it because it reads the same from any read that reaches ``context_turns``
    back, which a writer's incremental documents rely on.  A result more than
    ``context_turns`` turns after its call, and a call no result answers, are absent."""
    reach = DOCUMENT["context_turns"]
    by_session: dict[str, list[dict]] = {}
    for row in rows:
        if row["block_type"] in ("tool_use", "tool_result") and not row["split_idx"]:
            by_session.setdefault(row["session_id"], []).append(row)
    out: dict[str, dict] = {}
    for session_rows in by_session.values():
        session_rows.sort(key=lambda r: (int(r["seq"] or 0), int(r["block_idx"] or 0), r["id"]))
        groups: list[list[dict]] = []
        for row in session_rows:
            if not groups or (row["block_type"] == "tool_use" and groups[-1][-1]["block_type"] == "tool_result"):
                groups.append([])
            groups[-1].append(row)
        for group in groups:
            for call, result in _group_pairs(group):
                if int(result["seq"] or 0) - int(call["seq"] or 0) <= reach and call["id"] not in out:
                    out[call["id"]] = result
    return out


def _group_pairs(group: list[dict]) -> Iterator[tuple[dict, dict]]:
    """(call, result) of one group of tool traffic in session order (:func:`results_of_calls`)."""
    calls: dict[str | None, list[dict]] = {}
    results: dict[str | None, list[dict]] = {}
    for row in group:
        (calls if row["block_type"] == "tool_use" else results).setdefault(row.get("tool_name"), []).append(row)
    for tool, answers in results.items():
        made = calls.get(tool, [])
        if len(made) == len(answers):
            yield from zip(made, answers)
            continue
        for answer in answers:
            earlier = [call for call in made if (call["seq"], call["block_idx"]) < (answer["seq"], answer["block_idx"])]
            if earlier:
                yield earlier[-1], answer
