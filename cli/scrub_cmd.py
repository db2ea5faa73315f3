"""`funes scrub`: redact or drop the secrets a memory still holds, so it can be published,
and retract them from the remotes they already reached."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from funes.cli.common import confirm, interactive, note
from funes.cli.main import app

if TYPE_CHECKING:
    from funes.hub.receipts import Receipt
    from funes.memory.location import MemoryLocation


@app.command("scrub")
def scrub_command(
    memory: str = typer.Option(None, "--memory", help="Memory to repair: local (default), a folder or s3://…"),
    push: bool = typer.Option(False, "--push",
                              help="Push to every remote that received scrubbed chunks, replacing them there, without asking."),
    purge_history: bool = typer.Option(False, "--purge-history",
                                       help="With that push, also squash each such remote's history."),
) -> None:
    """Redact or drop the secrets a memory still holds, so that it can be published.

    Rebuild every block, redact what can be located, drop what cannot, re-embed the
    replaced chunks, rebuild the indexes and delete older versions. Transcripts are not
    touched. When scrubbed chunks were pushed before, say where: the next `funes push`
    there replaces them (on a terminal scrub offers to push now; --push does it)."""
    from funes.embedding import IDENTITY, load_embedder
    from funes.hub.receipts import Removals, receipts_for
    from funes.hub.scrub import scrub
    from funes.memory.location import location_for
    from funes.memory.reader import Memory
    from funes.memory.writer import MemoryWriter

    location = location_for(memory)
    Memory.open(location).require_rows()
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        report = scrub(writer, load_embedder())
    note(f"{location.label}: {report.summary()}")
    removals = Removals.of(location)
    for receipt in receipts_for(location):
        exposed = removals.left_on(receipt)["scrubbed_chunks"]
        if not exposed:
            continue
        note(f"warning: {receipt.remote} received {exposed} of the scrubbed chunks (last push from here"
             f" {receipt.pushed_at}): `funes push {receipt.remote}` replaces them there (with --purge-history, in"
             " its history too); revoke those secrets, since copies already downloaded cannot be recalled")
        _offer_push(receipt, location, assume_yes=push, purge_history=purge_history)


def _offer_push(receipt: Receipt, location: MemoryLocation, *, assume_yes: bool, purge_history: bool) -> None:
    """Push the scrubbed memory to ``receipt``'s remote when asked to, or when the user
    at the terminal says so (and ask about its history too)."""
    from funes.hub.push import push
    from funes.hub.repo import hub_endpoint

    if receipt.endpoint != hub_endpoint():
        note(f"  ({receipt.remote} is on {receipt.endpoint}: set HF_ENDPOINT to push there)")
        return
    if not assume_yes:
        if not interactive() or not confirm(f"push to {receipt.remote} now, replacing them there?",
                                            default=False, assume_yes=False):
            return
        purge_history = purge_history or confirm(
            f"also squash the history of {receipt.remote}, so no earlier commit holds them?"
            " (copies already downloaded cannot be recalled)", default=False, assume_yes=False)
    from funes.cli.push_cmd import show_push_report

    show_push_report(push(receipt.remote, location=location, purge_history=purge_history))
