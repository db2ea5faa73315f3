"""`funes index`: agent transcripts → the memory, lexical first, then vectors."""

from __future__ import annotations

import os
import time
from pathlib import Path

import typer

from funes.cli.common import ProgressBars, confirm, interactive, note, require_positive
from funes.cli.main import app
from funes.errors import UsageError
from funes.memory.location import MemoryLocation
from funes.traces.model import ParseWarning, SourceUnit

# Interactive first index: vectors are filled for about this long ($FUNES_INDEX_EMBED_S),
# then the rest is offered with an estimate from the rate measured meanwhile.
INTERACTIVE_BUDGET_S = 60.0


def interactive_budget_s() -> float:
    try:
        return max(0.0, float(os.environ.get("FUNES_INDEX_EMBED_S", INTERACTIVE_BUDGET_S)))
    except ValueError:
        return INTERACTIVE_BUDGET_S


@app.command("index")
def index_command(
    path: Path = typer.Argument(None, help="A transcript, a folder of them, or an agent's own store (a database, an export file)."),
    harness: str = typer.Option(None, "--harness", help="Only this agent's homes (funes status names the agents)."),
    limit: int = typer.Option(None, "--limit", help="Index at most N new or grown sessions."),
    no_thinking: bool = typer.Option(False, "--no-thinking", help="Leave thinking blocks out."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do everything without asking (scripts, hooks)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Re-embed every stored chunk from its own text (after a model change)."),
    memory: str = typer.Option(None, "--memory", help="Memory to write: local (default), a folder, or s3://…"),
) -> None:
    """Index new and grown sessions; with no target on a terminal, sweep every agent home."""
    from funes.memory.location import location_for
    from funes.traces import discover

    require_positive("--limit", limit)
    if path is None and harness is None and not yes and not interactive():
        raise UsageError("an unattended index must name a target: a PATH, --harness NAME, or --yes to sweep every agent home")
    errors: list[str] = []
    skipped: list[ParseWarning] = []
    units = [] if rebuild else discover(path.expanduser() if path else None, harness, errors=errors, warnings=skipped)
    explicit = yes or path is not None or harness is not None or rebuild
    ok = run_index(location_for(memory), units, limit=limit, include_thinking=not no_thinking,
                   budget_s=None if explicit else interactive_budget_s(), offer_rest=not explicit,
                   rebuild=rebuild, discovery_errors=errors, discovery_warnings=skipped)
    if not ok:
        raise typer.Exit(1)


def run_index(location: MemoryLocation, units: list[SourceUnit], *, limit: int | None = None,
              include_thinking: bool = True, budget_s: float | None = None, offer_rest: bool = False,
              rebuild: bool = False, discovery_errors: list[str] | None = None,
              discovery_warnings: list[ParseWarning] | None = None) -> bool:
    """Index ``units`` into ``location``: every chunk lexically first, then vectors
    (for ``budget_s`` seconds when given, offering the rest on a terminal); print
    warnings (discovery's first: folders it could not read) and a summary line.
    False when some transcripts could not be read."""
    from funes import indexing
    from funes.embedding import IDENTITY, load_embedder
    from funes.memory.store import MemoryWriter
    from funes.pipelines.recording import record_in_background

    started = time.monotonic()
    bars = ProgressBars()
    with MemoryWriter.open(location, IDENTITY.to_metadata(), dim=IDENTITY.dim, allow_other_model=rebuild) as writer:
        if rebuild:
            kept = writer.rebuild_for_new_model(IDENTITY.to_metadata(), IDENTITY.dim)
            note(f"kept {kept} chunks; their vectors will be recomputed with {IDENTITY.model_id}")
        if limit is not None:
            units = writer.coverage.changed(units)[:limit]
        embedded, embedding_s, chars_before = 0, 0.0, 0
        with bars.shown():
            report = indexing.index_units(writer, units, include_thinking=include_thinking, progress=bars)
            embedder = load_embedder() if writer.pending_count() else None
            if embedder is not None:
                chars_before, embedding_started = writer.pending_chars(), time.monotonic()
                embedded = indexing.embed_backlog(writer, embedder, budget_s=budget_s, progress=bars)
                embedding_s = time.monotonic() - embedding_started
                report.embedded += embedded
        pending = writer.pending_count()
        if pending and offer_rest:
            estimate = ""
            if embedded:
                # Embedding time follows tokens, not chunks (the backlog's first tier is short
                # text, its last long tool output), so the rate is taken in characters.
                chars_left = writer.pending_chars()
                chars_per_s = (chars_before - chars_left) / max(embedding_s, 1e-3)
                estimate = (f" (~{_duration(chars_left / max(chars_per_s, 1e-3))}, estimated from the "
                            f"{embedded / max(embedding_s, 1e-3):.0f} chunks/s measured on the first {embedded})")
            question = (f"{pending} chunks are searchable by keyword but not yet by meaning; "
                        f"embed them now{estimate}?")
            if confirm(question, default=True, assume_yes=False):
                with bars.shown():
                    report.embedded += indexing.embed_backlog(writer, embedder or load_embedder(), progress=bars)
                pending = writer.pending_count()
        report.pending = pending
    report.errors[:0] = discovery_errors or []
    report.warnings[:0] = discovery_warnings or []
    for warning in report.warnings[:20]:
        note(f"warning: {warning}")
    if len(report.warnings) > 20:
        note(f"warning: … and {len(report.warnings) - 20} more")
    for error in report.errors:
        note(f"error: {error} (will be retried)")
    note(
        f"indexed {report.changed} of {report.units} session(s): {report.turns} turns, "
        f"{report.chunks_added} chunks added, {report.chunks_skipped} already stored, "
        f"{report.embedded} embedded, {report.pending} awaiting vectors, "
        f"{len(report.warnings)} warning(s), {len(report.errors)} error(s), "
        f"{report.dropped_blocks} block(s) dropped for unlocatable secrets in {time.monotonic() - started:.1f}s"
    )
    if report.pending:
        note("run `funes index --yes` to embed the rest (recall already finds them by keyword)")
    record_in_background(location, [u.key for u in units], origin="cli")
    return not report.errors


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds))} s" if seconds < 90 else f"{round(seconds / 60)} min"
