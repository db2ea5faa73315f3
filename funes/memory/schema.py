"""The `chunks` table: its Arrow schema and the metadata stamped on it.

Columns shared with the Rust funes come first (id, text, session_id, workdir,
turn_uuid, parent_uuid, seq, ts, role, block_type, tool_name, source_path,
block_idx, split_idx, vector, harness, repo) so either tool can read the other's
memory; ours follow.  ``vector`` is null until the chunk is embedded: lexical
search covers every row at once, dense search the rows embedded so far.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

TABLE_NAME = "chunks"
# 2: the provenance columns (files, commands, exit_code); a version-1 table gets them
# null-filled when a writer opens it (:func:`missing_fields`), and readers of one fill
# them with nulls as they read.
SCHEMA_VERSION = "2"
META_PREFIX = "funes."


def chunk_schema(dim: int, metadata: dict[str, str] | None = None) -> pa.Schema:
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("workdir", pa.string()),
        pa.field("turn_uuid", pa.string(), nullable=False),
        pa.field("parent_uuid", pa.string()),
        pa.field("seq", pa.int32()),
        pa.field("ts", pa.string()),
        pa.field("role", pa.string()),
        pa.field("block_type", pa.string()),
        pa.field("tool_name", pa.string()),
        pa.field("source_path", pa.string()),
        pa.field("block_idx", pa.int32()),
        pa.field("split_idx", pa.int32()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field("harness", pa.string()),
        pa.field("repo", pa.string()),
        # funes-python additions
        pa.field("cwd", pa.string()),
        pa.field("branch", pa.string()),
        pa.field("tier", pa.int8()),
        pa.field("char_start", pa.int32()),
        pa.field("parent_session_id", pa.string()),
        pa.field("is_subagent", pa.bool_()),
        pa.field("indexed_at", pa.string()),
        # What the turn's tool calls touched and ran, and a tool_result's exit status
        # (encoding: funes/provenance.py).
        pa.field("files", pa.string()),
        pa.field("commands", pa.string()),
        pa.field("exit_code", pa.int32()),
    ]
    meta = {f"{META_PREFIX}schema_version": SCHEMA_VERSION}
    meta.update(metadata or {})
    return pa.schema(fields, metadata={k.encode(): v.encode() for k, v in meta.items()})


# Every column but the vector: what readers fetch for display and what writers fill.
ROW_COLUMNS: Sequence[str] = tuple(f.name for f in chunk_schema(1) if f.name != "vector")


PROVENANCE_COLUMNS = ("files", "commands", "exit_code")


def missing_fields(schema: pa.Schema) -> list[pa.Field]:
    """The columns of this funes's schema that a stored table lacks (an older
    funes's memory, or the Rust funes's), vector aside."""
    return [f for f in chunk_schema(1) if f.name != "vector" and f.name not in schema.names]


def decode_metadata(schema: pa.Schema) -> dict[str, str]:
    raw = schema.metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items() if k.decode().startswith(META_PREFIX)}
