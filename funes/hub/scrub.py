"""``funes scrub``: repair a memory so that what the egress gate holds back can publish.

Index-time redaction can miss a secret (a memory indexed before a rule existed, or by
another tool).  Scrub rebuilds every stored block from its chunks and redacts it whole:

* a secret that can be located is replaced by ``[REDACTED:<rule>]``, the block is split
  again and only its replacement chunks are re-embedded, those of the memory's dense
  tiers (clean blocks keep theirs, but a tool result whose call was redacted is embedded
  again: its vector reads the call);
* a block whose secret cannot be located safely is dropped entirely;
* the files and commands a turn's chunks carry are redacted the same way (cleared
  when a secret cannot be located), their rows otherwise unchanged;
* the replacement is one commit, then fragments that held the old rows are rewritten and
  every older version is deleted, so no file of the memory can give the secret back;
  the BM25 and scalar indexes are rebuilt from the result.

Transcripts are never touched.  The ids of the replaced and dropped chunks, and of those
whose files or commands were redacted, are recorded in coverage, so the next ``funes push``
to a remote that received their old values replaces them there (:mod:`funes.hub.push`);
a credential that reached the Hub must still be revoked, since whoever read it before may
have it.  A scanner that fails stops the scrub before any change.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import timedelta

import numpy as np

from funes.chunking import Chunk, chunk_id, split_text
from funes.hub.gate import block_text
from funes.indexing import TextEmbedder, embedding_input
from funes.memory.documents import call_heads, document_rows
from funes.memory.schema import ROW_COLUMNS
from funes.memory.sql import quote
from funes.memory.writer import MemoryWriter
from funes.redaction import redact_many, rule_label

# Provenance every split of a block shares, copied from its first split.
_BLOCK_FIELDS = tuple(f.name for f in fields(Chunk) if f.name not in ("id", "text", "split_idx", "char_start"))


@dataclass
class ScrubReport:
    blocks: int = 0  # blocks scanned
    redacted_blocks: int = 0
    dropped_blocks: int = 0
    secrets: Counter[str] = field(default_factory=Counter)  # rule label → findings
    chunks_removed: int = 0
    chunks_written: int = 0
    removed_ids: list[str] = field(default_factory=list)  # chunks replaced or dropped
    provenance_redacted: int = 0  # chunks kept whose files or commands were redacted in place
    results_reembedded: int = 0  # clean tool-result chunks embedded again with their call redacted

    def summary(self) -> str:
        found = ", ".join(f"{rule}×{n}" for rule, n in sorted(self.secrets.items())) or "none"
        return (f"scanned {self.blocks} blocks: {self.redacted_blocks} redacted, {self.dropped_blocks} dropped"
                f" (secrets: {found}); {self.chunks_removed} chunks replaced by {self.chunks_written};"
                f" files/commands redacted on {self.provenance_redacted} chunk(s);"
                f" {self.results_reembedded} tool result(s) embedded again with their call redacted;"
                " older versions deleted")


def _redacted_provenance(rows: list[dict], report: ScrubReport) -> dict[tuple[str, str], dict[str, str | None]]:
    """The files and commands to store instead, per turn (session id, turn uuid) whose
    values hold a secret: redacted, or None when it cannot be located safely."""
    stated: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        for column in ("files", "commands"):
            if row.get(column):
                stated.setdefault((row["session_id"], row["turn_uuid"]), {})[column] = row[column]
    items = [(turn, column, text) for turn, values in stated.items() for column, text in values.items()]
    redacted: dict[tuple[str, str], dict[str, str | None]] = {}
    for (turn, column, _), redaction in zip(items, redact_many([text for _, _, text in items]), strict=True):
        if not redaction.findings:
            continue
        for rule, count in redaction.findings.items():
            report.secrets[rule_label(rule)] += count
        redacted.setdefault(turn, {})[column] = redaction.text
    return redacted


def _owed_vectors(chunks: list[Chunk], calls: dict[str, str], writer: MemoryWriter,
                  embedder: TextEmbedder) -> np.ndarray | None:
    """Vectors for ``chunks``, one row each: embedded for the chunks of the memory's
    dense tiers (at the precision it stamps for each; a tool result with the head of
    its call, ``calls``, as indexing embeds it), NaN (stored as no vector) for the
    others, which the tier policy leaves to BM25, as a first index does."""
    owed = [i for i, c in enumerate(chunks) if c.tier in writer.dense_tiers]
    if not owed:
        return None
    embedded = embedder.embed_chunks([embedding_input(chunks[i].text, chunks[i].block_type, chunks[i].tool_name,
                                                      calls.get(chunks[i].id)) for i in owed],
                                     [chunks[i].tier for i in owed], writer.int8_tiers)
    vectors = np.full((len(chunks), embedded.shape[1]), np.nan, dtype=np.float32)
    vectors[owed] = embedded
    return vectors


def scrub(writer: MemoryWriter, embedder: TextEmbedder) -> ScrubReport:
    """Redact or drop every block of ``writer``'s memory holding a secret (see the module)."""
    rows = writer.table.search().select(list(ROW_COLUMNS)).limit(None).to_arrow().to_pylist()
    blocks: dict[tuple[str, str, int], list[dict]] = {}
    for row in rows:
        blocks.setdefault((row["session_id"], row["turn_uuid"], int(row["block_idx"] or 0)), []).append(row)
    keys = list(blocks)
    for key in keys:
        blocks[key].sort(key=lambda row: int(row["split_idx"] or 0))
    texts = [block_text([(row["char_start"], row["text"]) for row in blocks[key]]) for key in keys]

    report = ScrubReport(blocks=len(keys))
    # Redacted first, so a block's replacement chunks carry its turn's redacted values too.
    provenance = _redacted_provenance(rows, report)
    for row in rows:
        row.update(provenance.get((row["session_id"], row["turn_uuid"]), {}))
    removed: list[str] = []
    replacements: list[Chunk] = []
    for key, redaction in zip(keys, redact_many(texts), strict=True):
        if not redaction.findings:
            continue
        for rule, count in redaction.findings.items():
            report.secrets[rule_label(rule)] += count
        old = blocks[key]
        removed += [row["id"] for row in old]
        if redaction.text is None:
            report.dropped_blocks += 1
            continue
        report.redacted_blocks += 1
        shared = {name: old[0][name] for name in _BLOCK_FIELDS}
        for split_idx, (start, piece) in enumerate(split_text(redaction.text)):
            replacements.append(Chunk(id=chunk_id(key[0], key[1], key[2], split_idx), text=piece,
                                      split_idx=split_idx, char_start=start, **shared))
    # A tool result's vector reads the head of its call (funes/indexing.py): a clean
    # result whose call was redacted is written again, embedded from the redacted call,
    # else its vector would still derive from the secret.
    gone = set(removed)
    reads_calls = bool(removed) and writer.results_read_calls  # no call changed: no result to embed again
    before = call_heads(rows, ()) if reads_calls else {}
    after = call_heads([*(row for row in rows if row["id"] not in gone), *document_rows(replacements)], ()) \
        if reads_calls else {}
    stale = [row for row in rows if row["id"] not in gone and row["id"] in before
             and before[row["id"]] != after.get(row["id"])]
    replacements += [Chunk(id=row["id"], text=row["text"], split_idx=int(row["split_idx"] or 0),
                           char_start=int(row["char_start"] or 0), **{name: row[name] for name in _BLOCK_FIELDS})
                     for row in stale]
    report.results_reembedded = len(stale)
    # Every write comes after the record: a scrub cut short must still have the next push
    # look at these (a chunk whose files or commands were redacted in place counts too:
    # a remote that received it holds the old values in those columns).
    reprovenanced = [row["id"] for row in rows if (row["session_id"], row["turn_uuid"]) in provenance]
    if removed or reprovenanced:
        writer.coverage.record_scrubbed([*removed, *reprovenanced, *(row["id"] for row in stale)])
    for (session_id, turn_uuid), values in provenance.items():
        writer.table.update(where=f"session_id = {quote(session_id)} AND turn_uuid = {quote(turn_uuid)}",
                            values=values)
    if removed:
        writer.replace_chunks(removed, replacements, _owed_vectors(replacements, after, writer, embedder))
    report.chunks_removed, report.chunks_written = len(removed), len(replacements) - len(stale)
    report.provenance_redacted = len(set(reprovenanced) - set(removed))
    report.removed_ids = removed
    writer.maintain(keep_versions_for=timedelta(0))
    writer.purge_history()
    return report
