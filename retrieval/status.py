"""What a memory holds, for `funes status` and the MCP `status` tool."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from funes.memory.coverage import Coverage
from funes.memory.location import MemoryLocation
from funes.memory.stats import MemoryStats
from funes.retrieval.access import open_memory
from funes.traces.model import TIER_NAMES


def memory_status(spec: str | None, *, check_remotes: bool = False) -> dict[str, Any]:
    """``check_remotes``: ask each remote's Hub what it still holds of what was forgotten
    or scrubbed here, instead of answering from this host's push receipts."""
    memory = open_memory(spec)
    stats = memory.stats()
    identity = memory.identity
    lexical = memory.lexical()
    damage = memory.check()
    from funes.hub.backlog import push_backlog
    from funes.retrieval.rerank import reranker_status

    return {
        "memory": memory.location.label,
        "uri": memory.location.uri,
        "chunks": stats.chunks,
        "sessions": stats.sessions,
        "embedded": stats.embedded,
        "dense_coverage": round(stats.embedded / stats.chunks, 4) if stats.chunks else 0.0,
        "pending_by_tier": {TIER_NAMES.get(t, str(t)): n for t, n in stats.pending_by_tier.items()},
        **embedding_backlog(memory.location, stats),
        "harnesses": stats.per_harness,
        "last_indexed": stats.last_indexed,
        "embedding_model": {"model_id": identity["model_id"], "revision": identity["revision"],
                            "dim": int(identity["dim"] or 0),
                            # What CPU writers compute each embedded tier's vectors at.
                            "precision_by_tier": {TIER_NAMES.get(t, str(t)): "int8" if t in memory.int8_tiers else "fp32"
                                                  for t in memory.dense_tiers},
                            # What a tool result's vector reads (funes.embedding.results_read_calls).
                            "tool_result_input": "call and output" if memory.results_read_calls else "output"},
        "reranker": reranker_status(),
        "table_version": stats.version,
        "lexical_segments": len(lexical.segments),
        # What cannot be read (null when nothing): counts above are of what can be.
        "damage": damage.as_json() if damage else None,
        # What this host has not pushed to each remote, from its push receipts (no request),
        # and what each still holds that was removed here (from the receipts, or asked).
        "remotes": push_backlog(memory, check_remotes=check_remotes),
        **_releases(memory.location),
    }


def _releases(location: MemoryLocation) -> dict[str, Any]:
    """A Hub memory's releases (`funes release`) as listed at the commit read."""
    from funes.hub.reader import location_releases

    releases = location_releases(location)
    if releases is None:
        return {}
    return {"releases": [{"tag": r.tag, "date": r.date, "sessions": r.sessions, "chunks": r.chunks,
                          "added": len(r.added), "published_at": r.published_at} for r in releases]}


def _precisions(by_tier: dict[str, str]) -> str:
    """``text fp32, tool_result int8``."""
    return ", ".join(f"{tier} {precision}" for tier, precision in by_tier.items())


def duration_text(seconds: float) -> str:
    """A time left as a person reads it: seconds under a minute and a half, minutes
    under an hour and a half, else hours."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def embedding_backlog(location: MemoryLocation, stats: MemoryStats) -> dict[str, Any]:
    """The rows and characters awaiting vectors by tier, the rate the last backlog
    embedding pass on this host measured (None when none ran: no rate is assumed)
    and the time the backlog takes at that rate (characters/s: embedding time
    follows tokens, and a tool result is many times a reply's length)."""
    rate = None
    if location.is_local and location.coverage_path.exists():  # a memory only read keeps no coverage
        coverage = Coverage(location.coverage_path)
        try:
            rate = coverage.last_embed_rate()
        finally:
            coverage.close()
    backlog = {TIER_NAMES.get(t, str(t)): {"chunks": n, "chars": stats.pending_chars_by_tier.get(t, 0)}
               for t, n in stats.pending_by_tier.items()}
    chars = sum(stats.pending_chars_by_tier.values())
    return {
        "backlog_by_tier": backlog,
        "embed_rate": None if rate is None else {
            "chunks_per_s": round(rate.chunks_per_s, 1), "chars_per_s": round(rate.chars_per_s),
            "measured_at": datetime.fromtimestamp(rate.finished_at, timezone.utc).isoformat(timespec="seconds")},
        "embed_seconds_left": None if rate is None or not rate.chars else round(chars / rate.chars_per_s, 1),
    }


def render_status(status: dict[str, Any]) -> str:
    lines = [
        f"memory      {status['memory']} ({status['uri']})",
        f"chunks      {status['chunks']} in {status['sessions']} sessions",
    ]
    for harness, counts in status["harnesses"].items():
        lines.append(f"  {harness or '?':<12}{counts['chunks']} chunks, {counts['sessions']} sessions")
    lines += [
        f"vectors     {status['embedded']}/{status['chunks']} ({status['dense_coverage']:.0%}); {_backlog_line(status)}",
        f"last index  {status['last_indexed'] or 'never'}",
        f"model       {status['embedding_model']['model_id']} @ {status['embedding_model']['revision'][:12]}"
        f" ({_precisions(status['embedding_model']['precision_by_tier'])})",
    ]
    if status["embedding_model"]["tool_result_input"] == "output":
        lines.append("            tool results embedded from their output alone: `funes index --rebuild`"
                     " embeds them after their call")
    if status.get("damage"):
        lines.append(f"damage      {status['damage']['summary']}: run `funes repair`")
    reranker = status["reranker"]
    lines.append(f"reranker    {reranker['model'] if reranker['available'] else 'off: ' + reranker['reason']}")
    for agent in status.get("agents", []):
        if not agent["found"] and not agent["wired"]:
            continue
        wired = {True: "wired", False: f"not wired (funes add {agent['name']})", None: ""}[agent["wired"]]
        if agent["problem"]:
            wired = f"{wired}; {agent['problem']}" if wired else agent["problem"]
        lines.append(f"agent       {agent['label']} ({agent['name']}): {agent['sessions_on_disk']} session(s) on disk, "
                     f"{agent['indexed_sessions']} indexed" + (f", {wired}" if wired else ""))
    for release in status.get("releases", []):
        lines.append(f"release     {release['tag']} ({release['date']}): {release['sessions']} sessions"
                     f" ({release['added']} new), {release['chunks']} chunks")
    for remote in status.get("remotes", []):
        behind = ("up to date" if not remote["unpushed_chunks"] else
                  f"{remote['unpushed_chunks']} chunks in {remote['unpushed_sessions']} session(s) not pushed")
        lines.append(f"push        {remote['remote']}: {behind} (last push {remote['pushed_at']},"
                     f" commit {remote['commit'][:12]})")
        if remote["holds_removed"]:
            source = "asked of the Hub" if remote["checked"] == "hub" else "from this host's receipts, no request"
            lines.append(f"  removed   {_left_on_remote(remote)} ({source})")
    return "\n".join(lines)


def _backlog_line(status: dict[str, Any]) -> str:
    backlog = status["backlog_by_tier"]
    if not backlog:
        return "backlog: none"
    tiers = ", ".join(f"{tier} {b['chunks']} ({_chars(b['chars'])})" for tier, b in backlog.items())
    rate = status["embed_rate"]
    if rate is None:
        return f"backlog: {tiers}; rate not measured yet (`funes index --yes` measures it)"
    return (f"backlog: {tiers}; ~{duration_text(status['embed_seconds_left'] or 0)} left at "
            f"{rate['chunks_per_s']:.0f} chunks/s ({_chars(rate['chars_per_s'])}/s, measured {rate['measured_at']})")


def _chars(n: int) -> str:
    return f"{n / 1e6:.1f}M chars" if n >= 1e6 else f"{n / 1e3:.0f}k chars" if n >= 1e4 else f"{n} chars"


def _left_on_remote(remote: dict[str, Any]) -> str:
    """What a remote still holds that was forgotten or scrubbed here, and the push that removes it."""
    name = remote["remote"]
    parts = []
    held = [f"{count} {what}" for what, count in (("forgotten session(s)", remote["forgotten_sessions"]),
                                                 ("scrubbed chunk(s)", remote["scrubbed_chunks"])) if count]
    if held:
        parts.append(f"its head still holds {' and '.join(held)}: `funes push {name}` removes them")
    if not remote["history_purged"]:
        parts.append(f"its history holds removed text: `funes push {name} --purge-history` squashes it")
    return "; ".join(parts)
