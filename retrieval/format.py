"""The agent format: the stable, parseable text `recall` and `get` print (and the
MCP tools return).  The contract lives in docs/contract.md and is tested
verbatim; change both together or not at all.

Every token `recall` returns is one the agent pays for on every later turn, so the
agent format packs its hits into a budget (:func:`format_recall`): of each hit the
window that matched the query, not its whole passage, and nothing twice; `--json`
keeps every hit whole.

Recalled text comes from transcripts, so it may hold anything, including lines that
look like a hit's header, its ``→ get`` line or the ``---`` separator.  So every line
of recalled text is quoted (``> ``), and every field of a structural line is printed
on one line (:func:`field`): a line that does not start with ``>`` is funes's own,
whatever the transcripts hold."""

from __future__ import annotations

from typing import Any

from funes.memory.location import LOCAL_LABEL
from funes.memory.tokens import tokenize
from funes.retrieval.bounds import CHARS_PER_TOKEN, DEFAULT_BUDGET
from funes.retrieval.passage import ELLIPSIS, answer_chars, answer_window, one_line
from funes.retrieval.search import NEIGHBOR_PREVIEW, Hit, Neighbor, RecallResult

SEPARATOR = "---"
NO_RESULTS = "no results"
QUOTE = "> "


def field(value: object) -> str:
    """``value`` for a structural line: whitespace and unprintable characters (line
    breaks of every kind, tabs, escape codes) become ``\\xNN`` / ``\\uNNNN``, so the
    line stays one line and its fields split on single spaces."""
    text = str(value)
    if text.isprintable() and not any(ch.isspace() for ch in text):
        return text
    return "".join(ch if ch.isprintable() and not ch.isspace() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def quoted(text: str) -> str:
    """Every line of ``text`` prefixed ``> `` (``>`` alone for an empty line).  Lines
    break wherever Python's ``str.splitlines`` breaks them (``\\r``, ``\\u2028`` and
    the rest, not only ``\\n``), so no parser finds an unquoted line inside the text."""
    return "\n".join(QUOTE + line if line else QUOTE.rstrip() for line in text.splitlines() or [""])


def get_line(session_id: str, turn_uuid: str, memory_label: str) -> str:
    """A turn's drill-down, the ``funes get`` command that opens it: ``--memory`` only
    for a memory other than the default one, which ``get`` opens without it."""
    memory = "" if memory_label == LOCAL_LABEL else f" --memory {field(memory_label)}"
    return f"  → get {field(session_id)} {field(turn_uuid)}{memory}"


def _header(hit: Hit, memory_label: str, session_shown: bool) -> list[str]:
    """A hit's provenance: its agent and project only where no hit above it in the
    answer named its session (the ``→ get`` line names the session of every hit)."""
    mark = hit.stale.line() if hit.stale is not None else None
    where = "" if session_shown else f" {field(hit.harness)} {field(hit.workdir)}/{field(hit.session_id[:8])}"
    return [f"[{field(hit.ts)}]{where} {field(hit.block_type)}  score={hit.score:.3f}",
            get_line(hit.session_id, hit.turn_uuid, memory_label),
            *([f"  ! {' '.join(field(word) for word in mark.split(' '))}"] if mark else [])]


def _result_line(result: Neighbor) -> str:
    """The line that opens a tool call's result, before its quoted window."""
    return f"  ⇒ [{field(result.role)} {field(result.block_type)} seq{result.seq}]"


def _neighbor_line(neighbor: Neighbor) -> str:
    return (f"  ~ [{field(neighbor.role)} {field(neighbor.block_type)} seq{neighbor.seq}] "
            f"{one_line(neighbor.text)[:NEIGHBOR_PREVIEW]}")


def _cost(head: list[str], window: str, result: list[str] = ()) -> int:
    """Characters a hit takes: its head, its quoted window, its result's lines, the
    separator, each with its line break."""
    return (sum(len(line) + 1 for line in (*head, *result)) + len(quoted(window)) + 1
            + len(SEPARATOR) + 1)


def more_line(count: int) -> str:
    """The last line when the budget left hits out."""
    return f"{count} more hit{'s' if count != 1 else ''}: a larger budget (--budget) or k (-k) shows them"


def format_recall(result: RecallResult, budget: int = DEFAULT_BUDGET) -> str:
    """The hits packed into ``budget`` tokens (characters / 4): of each, in rank
    order, its provenance (its agent and project at its session's first hit), its
    ``→ get`` line and the window of its passage that holds the query's words
    (retrieval/passage.py; wider for a tool result), and for a tool call the
    window of its result; a hit whose window shows only
    text already shown is left out; neighbours come last, with what the budget has
    left, those already shown left out; the last line counts the hits the budget
    left out.  The first hit is always shown, its window cut to fit."""
    if not result.hits:
        return NO_RESULTS
    limit = budget * CHARS_PER_TOKEN
    terms = frozenset(tokenize([result.query])[0])
    shown: list[tuple[Hit, list[str], str]] = []  # hit, its lines, its window normalised
    used = 0
    left_out = 0
    result_turns = set()  # the turns of the results shown with their calls
    for position, hit in enumerate(result.hits):
        window = answer_window(hit.text, terms, answer_chars(hit.block_type))
        outcome = []  # a tool call's result: its line and its quoted window
        if hit.result is not None:
            outcome_window = answer_window(hit.result.text, terms, answer_chars(hit.result.block_type))
            outcome = [_result_line(hit.result), quoted(outcome_window)]
        seen = one_line(window.strip(ELLIPSIS))
        if any(seen in earlier for _, _, earlier in shown):
            continue
        head = _header(hit, result.memory_label, any(hit.session_id == other.session_id for other, _, _ in shown))
        room = limit - used - len(more_line(len(result.hits) - position)) - 1
        if _cost(head, window, outcome) > room:
            if shown:
                left_out = len(result.hits) - position
                break
            outcome = []  # the first hit, cut to fit: its own text first
            while window and _cost(head, window) > room:
                window = window[:len(window) - (_cost(head, window) - room)]
        cost = _cost(head, window, outcome)
        if outcome:  # only a result shown counts as shown
            seen = f"{seen} {one_line(outcome_window.strip(ELLIPSIS))}"
            result_turns.add(hit.result.turn_uuid)
        shown.append((hit, [*head, quoted(window), *outcome], seen))
        used += cost
    reserve = len(more_line(left_out)) + 1 if left_out else 0
    lines_of = {}
    shown_turns = {hit.turn_uuid for hit, _, _ in shown} | result_turns
    for hit, lines, _ in shown:
        extra = []
        for neighbor in hit.neighbors:
            line = _neighbor_line(neighbor)
            preview = one_line(neighbor.text)[:NEIGHBOR_PREVIEW]
            if neighbor.turn_uuid in shown_turns or any(preview in seen for _, _, seen in shown) \
                    or used + len(line) + 1 + reserve > limit:
                continue
            extra.append(line)
            used += len(line) + 1
        lines_of[id(hit)] = [*lines, *extra, SEPARATOR]
    out = [line for hit, _, _ in shown for line in lines_of[id(hit)]]
    if left_out:
        out.append(more_line(left_out))
    return "\n".join(out)


def hits_json(result: RecallResult) -> list[dict[str, Any]]:
    """`--json`: a list of hits, each with every provenance field, the text, the
    score of each stage, and how the ranking was made (so a reranker that could
    not be loaded is visible on every hit)."""
    hits = []
    for hit in result.hits:
        record = hit.to_json(result.memory_label)
        record["reranker"] = result.reranker
        record["reranker_note"] = result.reranker_note
        hits.append(record)
    return hits
