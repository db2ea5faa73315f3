"""`funes recall`: the verbatim passages that answer a question."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import Future
from pathlib import Path

import typer

from funes.cli.common import note, print_json, warn_if_damaged
from funes.cli.main import app
from funes.cli.options import READ_MEMORY, filter_options
from funes.errors import FunesError, UsageError, positive_number
from funes.retrieval.bounds import DEFAULT_BUDGET, DEFAULT_K, MAX_BUDGET, MIN_BUDGET
from funes.retrieval.filters import Filters

# The query embedder main() started loading before the command line was parsed.
_preloaded_embedder: Future | None = None


def preload_query_embedder(argv: list[str]) -> None:
    """Start loading the query embedder before ``argv`` is parsed, in a `funes recall`
    process that main() ends with os._exit: nothing waits for a load it did not use.
    Its ~0.4 s (onnxruntime, the tokenizer, a session whose creation holds no GIL)
    then runs beside typer's parsing, the Lance import and the memory's open instead
    of after them.  Not for help, nor when ``--fusion`` or ``FUNES_FUSION`` may turn
    vectors off (the command decides once it has parsed them), nor before the model
    is exported (seconds of torch that a recall refused for its memory must not pay)."""
    global _preloaded_embedder
    from funes.embedding import loading_query_embedder, query_model_cached

    if os.environ.get("FUNES_FUSION") or any(arg in ("-h", "--help") or arg.startswith("--fusion") for arg in argv):
        return
    if query_model_cached():
        _preloaded_embedder = loading_query_embedder()


@app.command("recall")
@filter_options("recall")
def recall_command(
    query: str = typer.Argument(None, help="What to recall, in free text."),
    k: int = typer.Option(DEFAULT_K, "-k", "--k", help="Hits returned (at most: the budget may show fewer)."),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget",
                               help=f"Tokens (characters / 4) the agent format packs its hits into, "
                                    f"{MIN_BUDGET:,}–{MAX_BUDGET:,}; --json and --batch show every hit whole."),
    candidates: int = typer.Option(30, "--candidates", help="Fused pool reranked before the top-k cut."),
    neighbors: int = typer.Option(1, "--neighbors", help="Turns either side (by seq) previewed per hit; 0 for none."),
    half_life: float = typer.Option(None, "--half-life", help="Recency decay in days (default: recency only breaks ties)."),
    filters: Filters = None,  # an option per filter: filter_options
    memory: str = READ_MEMORY,
    as_json: bool = typer.Option(False, "--json", help="A JSON list of hits with provenance and per-stage scores."),
    batch: Path = typer.Option(None, "--batch", help="JSON Lines of {qid, query, k?}; one {qid, hits} line out per query."),
    no_rerank: bool = typer.Option(False, "--no-rerank", help="Skip the rerank stage (late interaction, or the cross-encoder FUNES_RERANKER names)."),
    no_stale: bool = typer.Option(False, "--no-stale",
                                  help="Skip the stale marks (files changed since a hit's turn, another branch)."),
    fusion: str = typer.Option(None, "--fusion", envvar="FUNES_FUSION",
                               help="convex (default: 0.5 BM25 + 0.5 cosine), rrf, lexical (BM25 only) or dense."),
) -> None:
    """Hybrid search (BM25 + vectors) with exact provenance for every hit."""
    from funes.embedding import loading_query_embedder, query_model_cached
    from funes.retrieval.access import open_memory
    from funes.retrieval.bounds import check_counts, checked_query
    from funes.retrieval.format import format_recall, hits_json
    from funes.retrieval.fusion import Fusion
    from funes.retrieval.search import Recaller

    if batch is None and query is None:
        raise UsageError("missing QUERY (or --batch FILE)")
    # Everything is checked before the models load.
    if query is not None and batch is None:
        query = checked_query(query)
    check_counts(flags=True, k=k, candidates=candidates, neighbors=neighbors, budget=budget)
    if half_life is not None:
        positive_number("--half-life", half_life, "days")
    how = Fusion.named(fusion)
    # The query embedder loads while the memory opens, when its model is cached: a
    # first run exports it (seconds of torch), which a recall refused for its memory
    # (none yet, a damaged one) must not wait for at exit; Recaller.open then starts
    # the loading once the memory is known good.
    embedder = None
    if how.uses_dense and query_model_cached():
        embedder = _preloaded_embedder or loading_query_embedder()
    recaller = Recaller.open(open_memory(memory), rerank=not no_rerank, fusion=how, embedder=embedder)
    filters = filters.released(recaller.memory)  # once for a whole batch
    options = dict(candidates=candidates, neighbors=neighbors, filters=filters, half_life=half_life)
    try:
        if batch is not None:
            _run_batch(recaller, batch, k, options)
            return
        result = recaller.recall(query, k=k, **options)
        if not no_stale:
            from funes.retrieval.stale import mark_stale

            mark_stale(result.hits)
        if as_json:
            print_json(hits_json(result))
        else:
            sys.stdout.write(format_recall(result, budget) + "\n")
    finally:
        warn_if_damaged(recaller.memory)


def _run_batch(recaller, path: Path, default_k: int, options: dict) -> None:
    from funes.retrieval.bounds import whole
    from funes.retrieval.format import hits_json

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read --batch {path}: {exc.strerror or exc}") from exc
    bad = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("query"), str):
                raise ValueError("expected an object with a string \"query\"")
            qid = request.get("qid", number)
            k = default_k if request.get("k") is None else whole(request["k"])
            result = recaller.recall(request["query"], k=k, **options)
        except (ValueError, TypeError, OverflowError, FunesError) as exc:
            note(f"funes: {path}:{number}: {exc}")
            bad += 1
            continue
        sys.stdout.write(json.dumps({"qid": qid, "hits": hits_json(result)}, ensure_ascii=False) + "\n")
    if bad:
        raise typer.Exit(2)
