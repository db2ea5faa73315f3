"""`funes exclude`: list, add and remove what must never be kept (funes/exclusion.py)."""

from __future__ import annotations

import typer

from funes.cli.common import confirm, interactive, note, print_json
from funes.cli.main import app
from funes.errors import UsageError

ACTIONS = ("list", "add", "remove")


@app.command("exclude")
def exclude_command(
    action: str = typer.Argument("list", help="list (default), add or remove."),
    patterns: list[str] = typer.Argument(None, help="Folders (/…, ~/…, ./…), owner/name repositories or globs."),
    forget: bool = typer.Option(False, "--forget", help="add: forget the sessions already in the memory that match."),
    memory: str = typer.Option(None, "--memory", help="add --forget: local (default), a folder, or s3://…"),
    yes: bool = typer.Option(False, "--yes", "-y", help="add: forget what matches without asking."),
    as_json: bool = typer.Option(False, "--json", help="list: the patterns as JSON."),
) -> None:
    """Keep sessions out of the memory and out of every push: those run in a folder, of a
    repository, or whose cwd or transcript path matches a glob.

    The list is $FUNES_HOME/exclude, one pattern a line ('#' starts a comment): edit it by
    hand or here.  Indexing, the hooks and Dagster runs leave matching sessions out from
    then on, and a push never ships them; `add` offers to forget what the memory already
    holds of them."""
    from funes.exclusion import add_patterns, exclusion_path, load_exclusions, remove_pattern

    if action not in ACTIONS:
        raise UsageError(f"exclude: unknown action {action!r}: use list, add or remove")
    patterns = patterns or []
    if action == "list":
        if patterns:
            raise UsageError("exclude list takes no pattern")
        listed = load_exclusions().patterns
        if as_json:
            print_json([{"pattern": p.text, "kind": p.kind} for p in listed])
        else:
            for pattern in listed:
                print(f"{pattern.text}\t{pattern.kind}")
        if not listed:
            note(f"nothing is excluded ({exclusion_path()} lists no pattern)")
        return
    if not patterns:
        raise UsageError(f"exclude {action}: give a pattern (a folder, owner/name or a glob)")
    if action == "remove":
        for text in patterns:
            if not remove_pattern(text):
                raise UsageError(f"exclude remove: {text!r} is not in {exclusion_path()}")
            note(f"{text} is no longer excluded: its sessions are indexed from the next run")
        return
    added = add_patterns(patterns)
    for pattern in added:
        note(f"excluded {pattern.text} ({pattern.kind}): kept out of the memory and of every push from now on")
    if len(added) < len(dict.fromkeys(patterns)):
        note("the others were already excluded")
    _offer_to_forget(memory, forget or yes)


def _offer_to_forget(memory: str | None, assume_yes: bool) -> None:
    """Forget the sessions the memory already holds that the list now matches (the
    forget machinery: rows, old versions and BM25 words, tombstoned), when told to or
    when a person at a terminal says yes."""
    from funes.embedding import IDENTITY
    from funes.errors import MemoryMissingError
    from funes.exclusion import excluded_in, load_exclusions
    from funes.forgetting import forget
    from funes.memory.location import location_for
    from funes.memory.reader import Memory
    from funes.memory.sql import sql_in
    from funes.memory.writer import MemoryWriter
    from funes.traces.model import split_session_key

    location = location_for(memory)
    try:
        Memory.open(location)
    except MemoryMissingError:
        return  # nothing indexed yet: nothing to forget
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        keys = excluded_in(writer.table, load_exclusions())
        if not keys:
            return
        question = f"the memory already holds {len(keys)} session(s) that match: forget them for good?"
        if not confirm(question, default=True, assume_yes=assume_yes):
            if not interactive():
                note(f"the memory already holds {len(keys)} matching session(s), kept: forget them with"
                     " `funes exclude add PATTERN --forget` (pushes leave them out meanwhile)")
            return
        report = forget(writer, sql_in("session_id", sorted({split_session_key(key)[1] for key in keys})))
    note(f"forgot {report.chunks} chunks of {len(report.sessions)} session(s)")
