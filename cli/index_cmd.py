"""`funes index`: agent transcripts → the memory, lexical first, then vectors."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from funes.cli.common import ProgressBars, confirm, interactive, note, require_positive
from funes.cli.main import app
from funes.errors import UsageError

# Interactive first index: vectors are filled for about this long, then the rest is offered.
INTERACTIVE_BUDGET_S = 60.0


@app.command("index")
def index_command(
    path: Path = typer.Argument(None, help="A transcript, a folder of them, a Hermes state.db or a .parquet file."),
    harness: str = typer.Option(None, "--harness", help="Only this agent's home (claude, codex, pi, hermes)."),
    limit: int = typer.Option(None, "--limit", help="Index at most N new or grown sessions."),
    no_thinking: bool = typer.Option(False, "--no-thinking", help="Leave thinking blocks out."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do everything without asking (scripts, hooks)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Re-embed every stored chunk from its own text (after a model change)."),
    memory: str = typer.Option(None, "--memory", help="Memory to write: local (default), a folder, or s3://…"),
) -> None:
    """Index new and grown sessions; with no target on a terminal, sweep every agent home."""
    require_positive("--limit", limit)
    if path is None and harness is None and not yes and not interactive():
        raise UsageError("an unattended index must name a target: a PATH, --harness NAME, or --yes to sweep every agent home")

    from funes import indexing
    from funes.embedding import IDENTITY, load_embedder
    from funes.memory.location import location_for
    from funes.memory.store import MemoryWriter
    from funes.pipelines.recording import record_in_background
    from funes.traces import discover

    location = location_for(memory)
    started = time.monotonic()
    bars = ProgressBars()
    discovery_errors: list[str] = []
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim, allow_other_model=rebuild) as writer:
        if rebuild:
            moved = writer.rebuild_for_new_model(IDENTITY.to_metadata(), IDENTITY.dim)
            note(f"kept {moved} chunks; their vectors will be recomputed with {IDENTITY.model_id}")
            units = []
        else:
            units = discover(path.expanduser() if path else None, harness, errors=discovery_errors)
            if limit is not None:
                units = writer.coverage.changed(units)[:limit]
        with bars.shown():
            report = indexing.index_units(writer, units, include_thinking=not no_thinking, progress=bars)
            pending = writer.pending_count()
            embedder = load_embedder() if pending else None
            explicit = yes or path is not None or harness is not None or rebuild
            budget = None if explicit else INTERACTIVE_BUDGET_S
            if embedder is not None:
                report.embedded += indexing.embed_backlog(writer, embedder, budget_s=budget, progress=bars)
        pending = writer.pending_count()
        if pending and not explicit:
            eta_min = max(1, round(pending / 40 / 60))
            if confirm(f"{pending} chunks are searchable by keyword but not yet by meaning; embed them now (~{eta_min} min)?",
                       default=True, assume_yes=False):
                with bars.shown():
                    report.embedded += indexing.embed_backlog(writer, embedder or load_embedder(), progress=bars)
                pending = writer.pending_count()
        report.pending = pending
        report.errors[:0] = discovery_errors
    for warning in report.warnings[:20]:
        note(f"warning: {warning}")
    if len(report.warnings) > 20:
        note(f"warning: … and {len(report.warnings) - 20} more")
    for error in report.errors:
        note(f"error: {error} (will be retried)")
    elapsed = time.monotonic() - started
    note(
        f"indexed {report.changed} of {report.units} session(s): {report.turns} turns, "
        f"{report.chunks_added} chunks added, {report.chunks_skipped} already stored, "
        f"{report.embedded} embedded, {report.pending} awaiting vectors, "
        f"{len(report.warnings)} warning(s), {len(report.errors)} error(s), "
        f"{report.dropped_blocks} block(s) dropped for unlocatable secrets in {elapsed:.1f}s"
    )
    if report.pending:
        note("run `funes index --yes` to embed the rest (recall already finds them by keyword)")
    record_in_background(location, [u.key for u in units], origin="cli")
    if report.errors:
        raise typer.Exit(1)
