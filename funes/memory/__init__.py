"""The memory: the Lance ``chunks`` table, its BM25 index, the writer lock and coverage state.

One module a job: :mod:`~funes.memory.reader` (:class:`Memory`, for recall),
:mod:`~funes.memory.writer` (:class:`MemoryWriter`, under the writer lock),
:mod:`~funes.memory.upkeep` (the indexes and fragments the writer keeps),
:mod:`~funes.memory.sql` (every value quoted into a Lance filter), the BM25 index
(:mod:`~funes.memory.tokens`, :mod:`~funes.memory.documents`,
:mod:`~funes.memory.segments`, :mod:`~funes.memory.lexical`), and the table's schema,
location, saved counts, coverage and health.
"""
