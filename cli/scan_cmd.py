"""`funes scan`: exact text over every chunk, so "0 blocks" means absent."""

from __future__ import annotations

import sys

import typer

from funes.cli.common import print_json, warn_if_damaged
from funes.cli.main import app


@app.command("scan")
def scan_command(
    needles: list[str] = typer.Argument(None, help="The exact text(s) to find (literal, never a pattern)."),
    ignore_case: bool = typer.Option(False, "--ignore-case", "-i", help="Match regardless of letter case."),
    context: int = typer.Option(80, "--context", help="Characters shown either side of the first match in a block."),
    limit: int = typer.Option(50, "--limit", help="Matching blocks listed (the totals count them all)."),
    harness: str = typer.Option(None, "--harness", help="Only this agent's sessions (funes status names the agents)."),
    block_type: str = typer.Option(None, "--type", help="text, thinking, tool_use or tool_result."),
    workdir: str = typer.Option(None, "--workdir", help="Project directory (or its workdir facet): a prefix match."),
    repo: str = typer.Option(None, "--repo", help="owner/name of the git repository."),
    branch: str = typer.Option(None, "--branch", help="Git branch the session ran on."),
    session: str = typer.Option(None, "--session", help="One session: its id or a unique prefix (8+ characters)."),
    since: str = typer.Option(None, "--since", help="ISO date or span (7d, 2w, 12h)."),
    until: str = typer.Option(None, "--until", help="ISO date or span."),
    memory: str = typer.Option(None, "--memory", help="local (default), a folder, org/repo, hf://datasets/…, s3://…"),
    as_json: bool = typer.Option(False, "--json", help="Totals per needle and the matches as one JSON object."),
) -> None:
    """Exact substring search over every chunk of the memory (not the ranked index):
    split blocks are reassembled, so a needle across a split is found once and no
    match means the text is not in the memory."""
    from funes.retrieval.access import open_memory
    from funes.retrieval.filters import Filters
    from funes.retrieval.scan import checked_needles, format_scan, scan_json, scan_memory

    needles = checked_needles(needles or [])
    filters = Filters.parse(harness=harness, block_type=block_type, workdir=workdir, repo=repo, branch=branch,
                            session=session, since=since, until=until)
    opened = open_memory(memory)
    try:
        result = scan_memory(opened, needles, ignore_case=ignore_case, context=context, limit=limit, filters=filters)
    finally:
        warn_if_damaged(opened)
    if as_json:
        print_json(scan_json(result))
    else:
        sys.stdout.write(format_scan(result) + "\n")
