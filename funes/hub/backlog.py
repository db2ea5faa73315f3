"""What each remote this memory was pushed to from here still lacks, and still holds
of what was removed here: read from the push receipts (:mod:`funes.hub.receipts`),
or asked of the Hub (:func:`funes.hub.push.check_remote`).  Above both, so
receipts, which a push writes, never import the push."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from funes.hub.receipts import Receipt, Removals, receipts_for
from funes.hub.repo import URI_PREFIX, HubRemote

if TYPE_CHECKING:
    from funes.memory.reader import Memory


def push_backlog(memory: Memory, *, check_remotes: bool = False) -> list[dict[str, Any]]:
    """Per remote this memory was pushed to from here: the local chunks and sessions it
    does not hold yet (for a project memory, among that repository's sessions), and what
    it still holds that was forgotten or scrubbed here (:meth:`Removals.left_on`; asked of
    the Hub instead with ``check_remotes``, :func:`funes.hub.push.check_remote`)."""
    from funes.hub.curation import SESSION_COLUMNS, Curation, ProjectSessions

    receipts = receipts_for(memory.location)
    if not receipts:
        return []
    removals = Removals.of(memory.location)
    rows = memory.scan(SESSION_COLUMNS)
    session_of = dict(zip(rows.column("id").to_pylist(), rows.column("session_id").to_pylist(), strict=True))
    backlog = []
    for receipt in receipts:
        remote = HubRemote(receipt.remote.removeprefix(URI_PREFIX), receipt.endpoint)
        project = Curation.load(remote).project
        eligible: Iterable[str] = session_of
        if project:
            eligible = [chunk for ids in ProjectSessions.from_rows(rows, project).chunks.values() for chunk in ids]
        missing = [chunk for chunk in eligible if chunk not in receipt.ids]
        backlog.append({"remote": receipt.remote, "endpoint": receipt.endpoint, "project": project,
                        "commit": receipt.commit, "pushed_at": receipt.pushed_at,
                        "unpushed_chunks": len(missing),
                        "unpushed_sessions": len({session_of[chunk] for chunk in missing}),
                        **(_asked(receipt, memory) if check_remotes else removals.left_on(receipt))})
    return backlog


def _asked(receipt: Receipt, memory: Memory) -> dict[str, Any]:
    from funes.hub.push import check_remote

    return check_remote(receipt, memory.location)
