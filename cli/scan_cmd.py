"""`funes scan`: exact text over every chunk, so "0 blocks" means absent."""

from __future__ import annotations

import typer

from funes.cli.common import print_answer, read_memory
from funes.cli.main import app
from funes.cli.options import READ_MEMORY, filter_options
from funes.retrieval.filters import Filters


@app.command("scan")
@filter_options("scan")
def scan_command(
    needles: list[str] = typer.Argument(None, help="The exact text(s) to find (literal, never a pattern)."),
    ignore_case: bool = typer.Option(False, "--ignore-case", "-i", help="Match regardless of letter case."),
    context: int = typer.Option(80, "--context", help="Characters shown either side of the first match in a block."),
    limit: int = typer.Option(50, "--limit", help="Matching blocks listed (the totals count them all)."),
    filters: Filters = None,  # an option per filter: filter_options
    memory: str = READ_MEMORY,
    as_json: bool = typer.Option(False, "--json", help="Totals per needle and the matches as one JSON object."),
) -> None:
    """Exact substring search over every chunk of the memory (not the ranked index):
    split blocks are reassembled, so a needle across a split is found once and no
    match means the text is not in the memory."""
    from funes.retrieval.scan import checked_needles, format_scan, scan_json, scan_memory

    needles = checked_needles(needles or [])
    result = read_memory(memory, lambda opened: scan_memory(opened, needles, ignore_case=ignore_case, context=context,
                                                            limit=limit, filters=filters))
    print_answer(result, as_json, scan_json, format_scan)
