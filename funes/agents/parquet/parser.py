"""Hugging Face agent-traces Parquet files: one row per session.

Format facts: FORMAT.md beside this module.  Required columns ``session_id`` (string) and
``messages`` (list of strings, each a JSON-encoded OpenAI-style chat message);
optional string columns ``sent_at`` (one timestamp for every turn of the row),
``file_path`` (provenance), ``metadata`` (a JSON object whose ``cwd`` gives the
workdir) and ``harness`` (the per-row agent name; the Session model has no field for
it, so it is not kept).  A file lacking a required column is not this format: a
UsageError from discovery, a TraceReadError from parse.

Units are rows.  Per message: ``reasoning_content`` → thinking, string ``content`` →
text, each ``tool_calls[]`` → tool_use (no tool_result blocks are derived; a ``tool``
message's string content is text).  Messages whose role is not user, assistant or
tool are skipped.  turn_uuid = ``"{session_id}-{seq}"``, parent = the previous turn.

A Hub dataset is read from its ``refs/convert/parquet`` branch
(:func:`download_hub_dataset`), its row units signed with that branch's commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from funes.agents.parquet import AGENT
from funes.errors import TraceReadError, UsageError
from funes.traces.common import (
    TurnCollector,
    as_str,
    call_arguments,
    file_signature,
    finish_session,
    normalize_ts,
    opt_str,
    patch_touches,
    record_call,
    tool_input_text,
    walk_files,
    workdir_facet,
)
from funes.traces.jsonl import SHAPE_ERRORS, decode_json
from funes.traces.model import ROLES, Block, ParseWarning, Session, SourceUnit

HARNESS = AGENT.harness

REQUIRED_COLUMNS = ("session_id", "messages")
OPTIONAL_COLUMNS = ("sent_at", "file_path", "metadata")
CONVERT_REF = "refs/convert/parquet"
# Tool names (lower case) of the agents funes knows: what each does to the file its
# arguments name, and which run a shell command.
_FILE_TOOLS = {"read": "read", "read_file": "read", "view_image": "read", "edit": "edit", "multiedit": "edit",
               "notebookedit": "edit", "patch": "edit", "write": "write", "write_file": "write"}
_SHELL_TOOLS = frozenset({"bash", "powershell", "shell", "container.exec", "shell_command", "exec_command", "terminal"})


def _is_parquet(name: str) -> bool:
    return name.endswith(".parquet")


def _string_type(field_type: pa.DataType) -> bool:
    return pa.types.is_string(field_type) or pa.types.is_large_string(field_type)


def _check_schema(path: Path) -> pa.Schema:
    """The file's schema; ValueError when it is not the agent-traces layout."""
    schema = pq.read_schema(path)
    missing = [name for name in REQUIRED_COLUMNS if name not in schema.names]
    if missing:
        raise ValueError(f"not an agent-traces Parquet file (no {', '.join(missing)} column)")
    messages = schema.field("messages").type
    if not _string_type(schema.field("session_id").type) or not (
        (pa.types.is_list(messages) or pa.types.is_large_list(messages)) and _string_type(messages.value_type)
    ):
        raise ValueError("not an agent-traces Parquet file (session_id must be a string, messages a list of strings)")
    return schema


@lru_cache(maxsize=4)
def _row_index(path: Path, signature: str) -> dict[str, tuple[int, int]]:
    """session_id -> (row group, row within it) of an agent-traces file; the first
    row wins a repeated id.  Cached per file version, so parsing every row of a
    file reads its footer and id column once.  ValueError when the file is not the
    agent-traces layout."""
    _check_schema(path)
    index: dict[str, tuple[int, int]] = {}
    parquet = pq.ParquetFile(path)
    for group in range(parquet.num_row_groups):
        ids = parquet.read_row_group(group, columns=["session_id"]).column("session_id").to_pylist()
        for row, session_id in enumerate(ids):
            if session_id is not None:
                index.setdefault(session_id, (group, row))
    return index


@lru_cache(maxsize=4)
def _row_group(path: Path, signature: str, group: int) -> pa.Table:
    parquet = pq.ParquetFile(path)
    present = [name for name in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if name in parquet.schema_arrow.names]
    return parquet.read_row_group(group, columns=present)


def units(path: Path, signature: str | None = None) -> list[SourceUnit]:
    """One unit per row (session) of an agent-traces file; ``signature`` defaults to
    the file's size and mtime."""
    signature = signature or file_signature(path)
    if signature is None:
        return []
    try:
        index = _row_index(path, signature)
    except (OSError, pa.ArrowException) as exc:  # before ValueError: ArrowInvalid is one
        raise TraceReadError(f"cannot read {path}: {exc}") from exc
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from exc
    return [SourceUnit(HARNESS, path, session_id, signature) for session_id in index]


def discover(root: Path) -> Iterator[SourceUnit]:
    for path in walk_files(root, _is_parquet):
        yield from units(path)


def _message_blocks(message: dict[str, Any]) -> list[Block]:
    blocks = [
        Block("thinking", as_str(message.get("reasoning_content"))),
        Block("text", as_str(message.get("content"))),
    ]
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, raw = opt_str(function.get("name")), function.get("arguments")
            blocks.append(_provenance(Block("tool_use", tool_input_text(raw), name), (name or "").lower(), raw))
    return blocks


def _provenance(block: Block, name: str, raw: Any) -> Block:
    """A row may come from any agent: its calls are read by the tool names of the
    agents funes knows (case ignored)."""
    arguments = call_arguments(raw)
    if name == "apply_patch" or (name == "patch" and arguments is not None and arguments.get("mode") == "patch"):
        patch = arguments.get("input", arguments.get("patch")) if arguments is not None else raw
        block.files = patch_touches(patch)
        return block
    return record_call(block, arguments, action=_FILE_TOOLS.get(name), shell=name in _SHELL_TOOLS)


def _metadata_cwd(metadata: Any) -> str:
    try:
        value = decode_json(metadata) if isinstance(metadata, str) else None
    except ValueError:
        return ""
    return as_str(value.get("cwd")) if isinstance(value, dict) else ""


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    try:
        group, row = _row_index(path, unit.signature)[unit.session_id]
        record = _row_group(path, unit.signature, group).slice(row, 1).to_pylist()[0]
    except KeyError as exc:
        raise TraceReadError(f"{path}: no row with session_id {unit.session_id!r} (file changed?)") from exc
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise TraceReadError(f"cannot read {path}: {exc}") from exc
    cwd = _metadata_cwd(record.get("metadata"))
    session = Session(
        harness=HARNESS,
        session_id=unit.session_id,
        source_path=opt_str(record.get("file_path")) or str(path),
        cwd=cwd,
        workdir=workdir_facet(cwd, path.stem),
    )
    ts = normalize_ts(record.get("sent_at"))
    turns = TurnCollector(session)
    for position, element in enumerate(record.get("messages") or []):
        try:
            message = decode_json(element) if isinstance(element, str) else None
            if not isinstance(message, dict):
                raise ValueError("not a JSON object")
            role = message.get("role")
            if role in ROLES:
                turn_uuid = f"{unit.session_id}-{len(session.turns)}"
                turns.add(turn_uuid, turns.last_uuid, role, ts, _message_blocks(message))
        except SHAPE_ERRORS as exc:
            session.warnings.append(ParseWarning(str(path), 0, f"session {unit.session_id}, message {position}: {exc}"))
    return finish_session(session)


def download_hub_dataset(
    repo_id: str, dest: Path, *, endpoint: str | None = None, token: str | bool | None = None
) -> list[SourceUnit]:
    """Download the Parquet shards of Hub dataset ``repo_id`` (its
    ``refs/convert/parquet`` branch) into ``dest`` and return their row units, each
    signed with that branch's commit so an unchanged dataset is never re-parsed.

    ``endpoint`` defaults to ``$HF_ENDPOINT`` (read now, not at import) and then
    the public Hub.
    """
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    refs = api.list_repo_refs(repo_id, repo_type="dataset")
    commit = next((ref.target_commit for ref in refs.converts if ref.ref == CONVERT_REF), None)
    if commit is None:
        raise UsageError(f"dataset {repo_id} has no {CONVERT_REF} branch (not converted to Parquet yet?)")
    shards = [name for name in api.list_repo_files(repo_id, repo_type="dataset", revision=commit) if _is_parquet(name)]
    found: list[SourceUnit] = []
    for shard in sorted(shards):
        local = api.hf_hub_download(repo_id, shard, repo_type="dataset", revision=commit, local_dir=dest)
        found.extend(units(Path(local), signature=commit))
    return found
