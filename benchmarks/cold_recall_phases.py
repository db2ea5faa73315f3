"""One cold `funes recall QUERY` in this process, each step of its path timed.

    FUNES_HOME=... python benchmarks/cold_recall_phases.py QUERY

Prints one JSON line: [[step, wall ms, CPU ms], ...] (CPU: this process, every
thread).  Imports nothing before the CLI does, so the first step is the import cost
a new `funes recall` pays.  benchmarks/recall_latency.py --memory-home runs it and
tabulates the steps ("Cold recall on the day-zero memory" in BENCHMARKS.md).
"""

import time

def main(query: str) -> None:
    """The embedder loads in a thread meanwhile, so "waiting for the embedder thread"
    is the part of its load that nothing hid."""
    import contextlib
    import functools
    import io
    import json

    timings: list[list] = []

    def clock():
        return time.perf_counter(), time.process_time()

    def record(name: str, since: tuple[float, float]) -> None:
        wall, cpu = clock()
        timings.append([name, round((wall - since[0]) * 1000, 1), round((cpu - since[1]) * 1000, 1)])

    started = clock()
    from funes.cli.main import _register, run
    from funes.cli.recall_cmd import preload_query_embedder

    _register("recall")
    record("import the CLI and the recall command", started)
    preload_query_embedder(["recall", query])  # as main() does, before parsing
    from funes.memory.reader import Memory
    from funes.retrieval import access, search

    def timed(owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            since = clock()
            try:
                return original(*args, **kwargs)
            finally:
                record(label, since)

        setattr(owner, name, wrapper)

    timed(access, "open_memory", "open the memory (lance import, dataset open)")
    timed(search.Recaller, "open", "Recaller.open (checks, reranker lookup)")
    timed(Memory, "lexical", "BM25 index open (+ transient BM25 of uncovered rows)")
    timed(Memory, "vector_search", "vector search (Lance)")
    timed(Memory, "rows", "rows by id: the fused pool's ranking columns, the passages' splits (Lance)")
    timed(Memory, "rows_at", "whole rows of the finalists, by row id (Lance)")
    timed(Memory, "block_splits", "the passages' splits, by id (Lance)")
    timed(Memory, "turn_rows", "neighbours (Lance)")
    embedder = search.Recaller.embedder

    def waited(recaller):
        since = clock()
        try:
            return embedder.fget(recaller)
        finally:
            if not any(row[0] == "waiting for the embedder thread" for row in timings):
                record("waiting for the embedder thread", since)

    search.Recaller.embedder = property(waited)
    from funes.cli.main import app

    (command,) = [info for info in app.registered_commands if info.name == "recall"]
    callback = command.callback

    @functools.wraps(callback)
    def parsed(**kwargs):
        record("typer: parse the arguments", parsing)
        return callback(**kwargs)

    command.callback = parsed
    parsing = clock()
    with contextlib.redirect_stdout(io.StringIO()):
        run(["recall", query])
    record("total", started)
    print(json.dumps(timings))


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)  # no argparse: nothing imported before the CLI's own imports
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    main(sys.argv[1])
