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
# `funes index` fills a backlog for minutes to hours: it embeds at this niceness
# ($FUNES_EMBED_NICENESS, 0 to keep the normal priority), so that a recall started
# meanwhile (an agent's, through its MCP server or the CLI) gets the CPU first: at 19
# a cold recall beside a 300k first index took 1.0-1.1 s p50, at 10 1.4-1.6 s
# (BENCHMARKS.md, "Recall latency during a first index").  On an idle machine the
# backlog loses nothing by it.  The hook worker, which embeds one turn at a time,
# keeps its priority.
EMBED_NICENESS = 19


def embed_niceness() -> int:
    try:
        return max(0, min(19, int(os.environ.get("FUNES_EMBED_NICENESS", EMBED_NICENESS))))
    except ValueError:
        return EMBED_NICENESS


def _lower_priority(_report: object) -> None:
    """Called once every chunk is stored, before the backlog is embedded (a process
    cannot raise its priority back).  Linux nice is per thread, and a thread starts
    at its creator's: this thread and those it starts from now on (onnxruntime's)
    take :func:`embed_niceness` from ``os.nice``, and every thread already running
    (Lance's runtime, whose merges, index refreshes and IVF_PQ build would otherwise
    compete with a recall at full priority) is lowered one by one."""
    niceness = embed_niceness()
    if not niceness or not hasattr(os, "nice"):
        return
    lowered = os.nice(niceness)
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:  # not Linux: nice is per process there
        return
    for tid in threads:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < lowered:
                os.setpriority(os.PRIO_PROCESS, tid, lowered)
        except OSError:  # the thread ended meanwhile
            pass


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
    rebuild: bool = typer.Option(False, "--rebuild", help="Re-embed every stored chunk from its stored text (after a model change)."),
    embed_all: bool = typer.Option(False, "--embed-all", help="Give every chunk a vector, tool calls too, from now on (by default tool calls are found by keyword only)."),
    memory: str = typer.Option(None, "--memory", help="Memory to write: local (default), a folder, or s3://…"),
) -> None:
    """Index new and grown sessions; with no target on a terminal, sweep every agent home."""
    from funes.discovery import discover
    from funes.memory.location import location_for

    require_positive("--limit", limit)
    if path is None and harness is None and not yes and not interactive():
        raise UsageError("an unattended index must name a target: a PATH, --harness NAME, or --yes to sweep every agent home")
    errors: list[str] = []
    skipped: list[ParseWarning] = []
    units = [] if rebuild else discover(path.expanduser() if path else None, harness, errors=errors, warnings=skipped)
    explicit = yes or path is not None or harness is not None or rebuild or embed_all
    ok = run_index(location_for(memory), units, limit=limit, include_thinking=not no_thinking,
                   budget_s=None if explicit else interactive_budget_s(), offer_rest=not explicit,
                   rebuild=rebuild, embed_all=embed_all, discovery_errors=errors, discovery_warnings=skipped,
                   lower_priority=True)
    if not ok:
        raise typer.Exit(1)


def run_index(location: MemoryLocation, units: list[SourceUnit], *, limit: int | None = None,
              include_thinking: bool = True, budget_s: float | None = None, offer_rest: bool = False,
              rebuild: bool = False, embed_all: bool = False, discovery_errors: list[str] | None = None,
              discovery_warnings: list[ParseWarning] | None = None, lower_priority: bool = False) -> bool:
    """Index ``units`` into ``location``: every chunk lexically first, then vectors
    (for ``budget_s`` seconds when given, offering the rest on a terminal; at
    :data:`EMBED_NICENESS` with ``lower_priority``); print warnings (discovery's
    first: folders it could not read) and a summary line.  False when some
    transcripts could not be read."""
    from funes.embedding import IDENTITY, load_embedder
    from funes.indexing import IndexReport, index_memory
    from funes.memory.writer import MemoryWriter
    from funes.pipelines.records import recorder
    from funes.retrieval.status import duration_text

    def ask_for_the_rest(writer: MemoryWriter, report: IndexReport) -> bool:
        estimate = ""
        embedded = sum(report.backlog_by_tier.values())
        if embedded:
            # Embedding time follows tokens, not chunks (the backlog's first tier is short
            # text, its last long tool output), so the rate is taken in characters.
            seconds = max(report.embed_seconds, 1e-3)
            chars_per_s = report.backlog_chars / seconds
            pending_chars = sum(writer.stats().pending_chars_by_tier.values())  # saved by the backlog's last page
            estimate = (f" (~{duration_text(pending_chars / max(chars_per_s, 1e-3))}, estimated from the "
                        f"{embedded / seconds:.0f} chunks/s measured on the first {embedded})")
        with bars.paused():
            return confirm(f"{writer.pending_count()} chunks are searchable by keyword but not yet by meaning; "
                           f"embed them now{estimate}?", default=True, assume_yes=False)

    started = time.monotonic()
    bars = ProgressBars()
    with bars.shown():
        report = index_memory(location, units, embedder=load_embedder, include_thinking=include_thinking,
                              backlog_budget_s=budget_s, offer_rest=ask_for_the_rest if offer_rest else None,
                              limit=limit, rebuild=rebuild, embed_all=embed_all, progress=bars,
                              record=recorder("cli"), on_indexed=_lower_priority if lower_priority else None)
    if rebuild:
        note(f"kept {report.kept} chunks; their vectors were recomputed with {IDENTITY.model_id}")
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
    if report.excluded:
        note(f"left out {report.excluded} session(s) on the exclusion list (`funes exclude list`)")
    if report.pending:
        note("run `funes index --yes` to embed the rest (recall already finds them by keyword)")
    return not report.errors
