"""What each page of `funes browse` reads: the read side of funes.retrieval over one
memory, its answers handed to funes.cli.browse.pages.  Each page reads the memory's
latest version (the turns the hooks index while the page is open show on the next
click), and search keeps its models loaded across pages, as the MCP server does."""

from __future__ import annotations

from typing import Any

from funes.cli.browse import pages
from funes.errors import UsageError, bounded_int
from funes.retrieval.bounds import DEFAULT_K, RANGE_TURNS, check_counts
from funes.retrieval.filters import Filters, filter_arguments


class Site:
    def __init__(self, spec: str | None, memory: Any) -> None:
        from funes.cli.mcp_server import RecallService

        self.spec = spec
        self.label = memory.location.label
        self.recalls = RecallService(spec)

    @classmethod
    def open(cls, spec: str | None) -> Site:
        """The memory ``spec`` names, opened and checked now, so a memory that cannot
        be read is a one-line error before anything is served."""
        from funes.retrieval.access import open_memory

        memory = open_memory(spec)
        memory.require_rows()
        return cls(spec, memory)

    def read(self) -> Any:
        """The memory's latest version (opening a local table costs milliseconds; a Hub
        head is resolved again only when its pin expires)."""
        from funes.retrieval.access import open_memory

        return open_memory(self.spec)

    @staticmethod
    def harnesses(memory: Any) -> list[str]:
        return sorted(harness for harness in memory.stats().per_harness if harness)

    # --- pages: each returns (title, body) -----------------------------------------------------

    def overview_page(self, request) -> tuple[str, str]:
        from funes.retrieval.sessions import list_sessions
        from funes.retrieval.status import memory_status

        return "Memory", pages.overview(memory_status(self.spec), list_sessions(self.read()))

    def search_page(self, request) -> tuple[str, str]:
        from funes.retrieval.stale import mark_stale

        params = request.query_params
        query = params.get("q", "").strip()
        k = _number(params.get("k"), "k", DEFAULT_K)
        arguments = filter_arguments("recall")
        given = {argument.name: params.get(argument.name, "") for argument in arguments}
        if not query:
            return "Search", pages.search_form(query, pages.filter_controls(arguments, given,
                                                                             self.harnesses(self.read())), k)
        check_counts(k=k)
        recaller = self.recalls.recaller(None)  # the models loaded at the first search, kept
        form = pages.search_form(query, pages.filter_controls(arguments, given, self.harnesses(recaller.memory)), k)
        result = recaller.recall(query, k=k, filters=_filters(arguments, given), neighbors=0)
        mark_stale(result.hits)
        return "Search", form + pages.search_results(result)

    def sessions_page(self, request) -> tuple[str, str]:
        from funes.retrieval.sessions import list_sessions

        memory = self.read()
        arguments = filter_arguments("sessions")
        given = {argument.name: request.query_params.get(argument.name, "") for argument in arguments}
        form = ("<form class=filters method=get action='/sessions'>"
                + pages.filter_controls(arguments, given, self.harnesses(memory))
                + "<label>&nbsp;<button type=submit>List</button></label></form>")
        return "Sessions", form + pages.sessions_table(list_sessions(memory, _filters(arguments, given)))

    def session_page(self, request) -> tuple[str, str]:
        """A range of the session's turns, as `get --from/--to` reads it."""
        from funes.retrieval.get import turn_range

        first = _number(request.query_params.get("from"), "from", 0)
        last = request.query_params.get("to")
        memory = self.read()
        window = turn_range(memory, request.path_params["session_id"], first,
                            None if not last else _number(last, "to", 0))
        return f"Session {window.session_id[:12]}", pages.session_view(window, first, RANGE_TURNS,
                                                                       _exit_codes(memory, window))

    def history_page(self, request) -> tuple[str, str]:
        from funes.retrieval.history import file_history

        arguments = [a for a in filter_arguments("history") if a.name != "file"]
        path = request.query_params.get("file", "").strip()
        given = {argument.name: request.query_params.get(argument.name, "") for argument in arguments}
        memory = self.read()
        form = pages.history_form(path, pages.filter_controls(arguments, given, self.harnesses(memory)))
        if not path:
            return "File history", form
        history = file_history(memory, _filters(filter_arguments("history"), {**given, "file": path}))
        return f"History of {path}", form + pages.history_view(history)


def _number(text: str | None, name: str, default: int) -> int:
    if text is None or not text.strip():
        return default
    try:
        return bounded_int(name, int(text), 0, 10**9)
    except ValueError:
        raise UsageError(f"{name} {text!r}: expected a whole number") from None


def _filters(arguments, given: dict[str, str]) -> Filters:
    """The page's controls as :class:`Filters`: a blank control is a filter left out,
    a --here/--anywhere choice a switch."""
    values: dict[str, Any] = {}
    for argument in arguments:
        value = (given.get(argument.name) or "").strip()
        if not value:
            continue
        values[argument.name] = {"true": True, "false": False}.get(value) if argument.off_flag else value
    return Filters.parse(**values)


def _exit_codes(memory: Any, window: Any) -> dict[tuple[int, int], int]:
    """(seq, the block's place in its turn) → the exit code a tool result recorded:
    a turn's blocks come in block order (retrieval/get.py), so the place is the
    rank of the block's index among its turn's."""
    from funes.memory.sql import quote

    if not window.turns or memory.lacks(("exit_code",)):
        return {}
    rows = memory.scan(["seq", "block_idx", "exit_code"],
                       f"session_id = {quote(window.session_id)} AND seq >= {window.turns[0].seq} "
                       f"AND seq <= {window.turns[-1].seq}").to_pylist()
    blocks: dict[int, dict[int, int | None]] = {}
    for row in rows:
        codes = blocks.setdefault(int(row["seq"]), {})
        if codes.get(int(row["block_idx"] or 0)) is None:
            codes[int(row["block_idx"] or 0)] = row["exit_code"]
    return {(seq, place): code for seq, codes in blocks.items()
            for place, index in enumerate(sorted(codes)) if (code := codes[index]) is not None}
