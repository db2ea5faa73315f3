"""funes: verbatim recall over coding-agent transcripts.

The domain layer (this package, without its mapped sub-packages ``funes.assets``,
``funes.pipelines``, ``funes.retrieval`` and ``funes.cli``) imports neither Dagster nor
the CLI, so the hook worker, the Dagster assets and the tests all call the same
functions.  Where a new function goes: it names an agent's file format →
``funes.traces``; it names Lance or the BM25 index → ``funes.memory``; it names the
Hub → ``funes.hub``; it ranks passages → ``funes.retrieval``; it decides what to do
for a user → ``funes.cli``; it schedules or records work → ``funes.assets`` /
``funes.pipelines``.
"""

__version__ = "0.1.0"
