"""SQL for Lance's filters: the one place a value is quoted into a predicate.

Lance takes a filter as a SQL expression string, so every value a caller names
(a session id, a path, a date) is written into it as a string literal; quoting it
here, and nowhere else, keeps a quote inside a value from ending the literal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def quote(value: str) -> str:
    """``value`` as a SQL string literal (a quote inside it doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Sequence[str]) -> str:
    """``column`` is one of ``values`` (at least one: ``IN ()`` is not SQL)."""
    return f"{column} IN ({', '.join(quote(v) for v in values)})"


def spans_sql(spans: Mapping[str, tuple[int, int]]) -> str:
    """The rows of each session ``{session_id: (seq_min, seq_max)}`` names.  The ``IN``
    list first: Lance answers it from the BTREE on ``session_id`` and tests the
    ranges on those rows alone (the ranges alone scan the whole column)."""
    ranges = " OR ".join(f"(session_id = {quote(sid)} AND seq >= {int(low)} AND seq <= {int(high)})"
                         for sid, (low, high) in spans.items())
    return f"{sql_in('session_id', list(spans))} AND ({ranges})"


def turns_sql(seqs: Mapping[str, Sequence[int]]) -> str:
    """The first chunk of every block of the turns each session ``{session_id: seqs}``
    names: the ``IN`` list on ``session_id`` first (answered from its BTREE), then
    each session's own seqs, so sessions whose hits lie far apart read no turn
    between them."""
    turns = " OR ".join(f"(session_id = {quote(sid)} AND seq IN ({', '.join(str(int(s)) for s in sorted(set(at)))}))"
                        for sid, at in seqs.items())
    return f"{sql_in('session_id', list(seqs))} AND split_idx = 0 AND ({turns})"
