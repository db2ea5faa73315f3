"""The dataset card (README.md) of a published memory.

The first push writes it in the same commit as the data: what the repo is, how to
recall from it and load it, and live stats, tagged ``funes`` so shared memories can be
found on the Hub.  Later pushes rewrite it with fresh stats, but only while it carries
:data:`MARKER`: a card someone wrote (or kept by deleting the marker) is never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from funes.hub.ledger import Release
from funes.hub.repo import HubRemote

MARKER = "<!-- funes:card - written by `funes push`, which refreshes it; delete this line to keep your own -->"


@dataclass(frozen=True)
class CardStats:
    chunks: int
    sessions: int
    chunks_per_agent: dict[str, int] = field(default_factory=dict)
    first_activity: str | None = None
    last_activity: str | None = None
    model: str = ""
    project: str | None = None

    @classmethod
    def of(cls, rows: pa.Table, metadata: dict[str, str]) -> CardStats:
        """From the table's ``session_id``, ``harness`` and ``ts`` columns and its metadata."""
        harness = pc.fill_null(rows.column("harness"), "")
        per_agent = pc.value_counts(harness).to_pylist()
        sessions = pc.count_distinct(pc.binary_join_element_wise(harness, rows.column("session_id"), "\x1f"))
        stamps = pc.drop_null(rows.column("ts"))
        stamps = stamps.filter(pc.not_equal(stamps, "")) if len(stamps) else stamps
        model = metadata.get("funes.embedding.model_id", "")
        if model:
            model += f" (revision {metadata.get('funes.embedding.revision', '')[:12]}, {metadata.get('funes.embedding.dim', '?')}-d)"
        return cls(
            chunks=rows.num_rows,
            sessions=sessions.as_py(),
            chunks_per_agent={item["values"] or "unknown": item["counts"] for item in sorted(per_agent, key=lambda i: -i["counts"])},
            first_activity=pc.min(stamps).as_py() if len(stamps) else None,
            last_activity=pc.max(stamps).as_py() if len(stamps) else None,
            model=model,
            project=metadata.get("funes.project"),
        )


def is_funes_card(text: str) -> bool:
    return MARKER in text


def render_card(remote: HubRemote, stats: CardStats, pushed_at: str, releases: list[Release] = ()) -> str:
    from funes.agents import find_agent

    agents = ", ".join(f"{agent} ({count})" for agent, count in stats.chunks_per_agent.items()) or "none yet"
    sources = ", ".join(known.label if (known := find_agent(harness)) else harness
                        for harness in stats.chunks_per_agent) or "none yet"
    span = f"{stats.first_activity} → {stats.last_activity}" if stats.first_activity else "n/a"
    what = (f"the project memory of `{stats.project}`: the sessions of that repository its contributors chose to share"
            if stats.project else "one person's memory, hosted")
    return f"""---
tags:
- funes
- lance
- agent-traces
pretty_name: funes memory {remote.repo_id}
---
{MARKER}

# funes memory: `{remote.repo_id}`

A [funes](https://github.com/huggingface/funes) memory: verbatim chunks of coding-agent
transcripts ({sources}), redacted of secrets before they were stored
and scanned again before publication, with their provenance and embeddings, in a
[Lance](https://lancedb.github.io/lance/) table at `chunks.lance/`. It is {what}.

## Recall from it

```bash
funes recall "how did we fix the flaky upload test" --memory {remote.repo_id}
funes get <session-id> <turn-uuid> --memory {remote.repo_id}
```

Any machine can recall from it, whether or not it has indexed anything: funes downloads the
table's live files once, pinned to the repo's head commit, and reads them locally.

## Load it

```python
from datasets import load_dataset

chunks = load_dataset("{remote.repo_id}", split="train")
```

## Stats

| | |
| --- | --- |
| chunks | {stats.chunks} |
| sessions | {stats.sessions} |
| chunks per agent | {agents} |
| activity | {span} |
| embedding model | {stats.model or "unknown"} |
| last push | {pushed_at} |
{_releases_section(remote, releases)}"""


def _releases_section(remote: HubRemote, releases: list[Release]) -> str:
    """Each release (a tag of the repo, written by `funes release`), newest first."""
    if not releases:
        return ""
    rows = "\n".join(f"| `{r.tag}` | {r.date} | {r.sessions} ({len(r.added)} new) | {r.chunks} |"
                      f" `funes recall \"…\" --memory {remote.repo_id}@{r.tag}` |" for r in reversed(releases))
    return f"""
## Releases

Each release is a tag of this repo: the memory as that release of the project shipped it.
`load_dataset(snapshot_download("{remote.repo_id}", repo_type="dataset", revision="<tag>"), split="train")`
loads one (`datasets` reads a Lance table from the Hub at `main` only).

| tag | date | sessions | chunks | recall it |
| --- | --- | --- | --- | --- |
{rows}
"""
