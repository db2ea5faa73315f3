"""Forgetting: sessions removed from the memory for good.

The rows go, every table version that still held them goes (Lance keeps old
versions for readers until cleaned up), the BM25 index is rebuilt without their
words, and the sessions are tombstoned in coverage so indexing their transcripts
again does not bring them back.  The tombstones also tell `funes push` to remove the
sessions from a Hub copy's head (and, with ``--purge-history``, from its history):
see :mod:`funes.hub.push`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from funes.memory.sql import sql_in
from funes.memory.writer import MemoryWriter
from funes.traces.model import session_key, split_session_key


@dataclass
class ForgetReport:
    chunks: int
    sessions: list[str]  # partition keys (<harness>--<session_id>)


def sessions_matching(writer: MemoryWriter, where: str) -> tuple[int, list[str]]:
    table = writer.table.search().where(where).select(["harness", "session_id"]).limit(None).to_arrow()
    keys = sorted({session_key(h or "", s) for h, s in zip(table.column("harness").to_pylist(),
                                                         table.column("session_id").to_pylist(), strict=True)})
    return table.num_rows, keys


def forget(writer: MemoryWriter, where: str) -> ForgetReport:
    """Delete every chunk matching ``where`` (a Lance predicate) and the whole of
    each session it touches, then purge old versions and rebuild the BM25 index."""
    _, keys = sessions_matching(writer, where)
    if not keys:
        return ForgetReport(0, [])
    session_ids = sorted({split_session_key(key)[1] for key in keys})
    whole_sessions = sql_in("session_id", session_ids)
    chunks, _ = sessions_matching(writer, whole_sessions)
    writer.table.delete(whole_sessions)
    writer.coverage.forget(keys)
    writer.maintain(keep_versions_for=timedelta(0))  # rebuilds the BM25 index without their words
    writer.purge_history()  # last, so no version made along the way survives
    return ForgetReport(chunks, keys)
