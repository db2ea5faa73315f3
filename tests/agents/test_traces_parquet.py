"""Hugging Face agent-traces Parquet (funes.agents.parquet.parser)."""

from __future__ import annotations

import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from funes.errors import TraceReadError, UsageError
from funes.agents.parquet import parser as parquet
from trace_helpers import assert_well_formed, shape

MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "reasoning_content": "use ls", "content": "Listing.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}},
                    {"type": "function", "function": {"name": "noop"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "assistant", "content": [{"type": "text", "text": "a list is not a string"}]},
]


def _write(path, rows, **kwargs):
    pq.write_table(pa.table(rows), path, **kwargs)
    return path


@pytest.fixture
def traces_file(tmp_path):
    encoded = [json.dumps(m) for m in MESSAGES]
    return _write(tmp_path / "traces.parquet", {
        "session_id": ["s1", "s2", "s1"],
        "messages": [encoded + ["{broken", "[1, 2]"], encoded[1:2], encoded[1:2]],
        "sent_at": ["2026-01-02T03:04:05.123Z", None, None],
        "metadata": [json.dumps({"cwd": "D:\\physics\\earth"}), "not json", None],
        "file_path": ["hf://datasets/u/d/s1.jsonl", None, None],
        "harness": ["claude_code", "codex", "pi"],
    }, row_group_size=2)


def test_rows_are_units(traces_file):
    units = list(parquet.discover(traces_file.parent))
    assert [(u.harness, u.session_id) for u in units] == [("parquet", "s1"), ("parquet", "s2")]  # first s1 row wins
    assert len({u.signature for u in units}) == 1


def test_row_to_session(traces_file):
    units = {u.session_id: u for u in parquet.discover(traces_file)}
    session = parquet.parse(units["s1"])
    assert_well_formed(session)
    assert (session.harness, session.session_id) == ("parquet", "s1")
    assert (session.cwd, session.workdir) == ("D:\\physics\\earth", "D--physics-earth")
    assert session.source_path == "hf://datasets/u/d/s1.jsonl"
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("text", None), ("tool_use", "bash"), ("tool_use", "noop")]),
        ("tool", [("text", None)]),  # no tool_result blocks are derived
    ]
    assert [(t.turn_uuid, t.parent_uuid) for t in session.turns] == [("s1-0", None), ("s1-1", "s1-0"), ("s1-2", "s1-1")]
    assert {t.ts for t in session.turns} == {"2026-01-02T03:04:05.123Z"}
    call, missing = session.turns[1].blocks[2:]
    assert (call.text, call.tool_use_id) == ('{"cmd": "ls"}', None)
    assert missing.text == "{}"
    assert [w.message for w in session.warnings] == [
        "session s1, message 5: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "session s1, message 6: not a JSON object",
    ]

    other = parquet.parse(units["s2"])
    assert (other.workdir, other.source_path) == ("traces", str(traces_file))  # bad metadata: the file stem
    assert [t.ts for t in other.turns] == [""]


def test_not_agent_traces(tmp_path):
    plain = _write(tmp_path / "plain.parquet", {"session_id": ["a"], "text": ["b"]})
    with pytest.raises(UsageError, match="no messages column"):
        list(parquet.discover(plain))
    wrong_type = _write(tmp_path / "wrong.parquet", {"session_id": ["a"], "messages": ["not a list"]})
    with pytest.raises(UsageError, match="list of strings"):
        list(parquet.discover(wrong_type))
    with pytest.raises(TraceReadError):
        parquet.parse(parquet.SourceUnit("parquet", plain, "a", "1:1"))


def test_corrupt_or_changed_file(tmp_path, traces_file):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1" + b"\x00" * 100)
    with pytest.raises(TraceReadError):
        list(parquet.discover(broken))
    with pytest.raises(TraceReadError):
        parquet.parse(parquet.SourceUnit("parquet", broken, "s1", "x"))
    [unit] = [u for u in parquet.discover(traces_file) if u.session_id == "s2"]
    with pytest.raises(TraceReadError, match="no row"):
        parquet.parse(parquet.SourceUnit("parquet", traces_file, "gone", unit.signature))


def test_large_string_columns(tmp_path):
    table = pa.table({
        "session_id": pa.array(["big"], pa.large_string()),
        "messages": pa.array([[json.dumps({"role": "user", "content": "hello"})]], pa.list_(pa.large_string())),
    })
    pq.write_table(table, tmp_path / "large.parquet")
    [unit] = parquet.discover(tmp_path / "large.parquet")
    assert parquet.parse(unit).turns[0].blocks[0].text == "hello"


def test_hub_dataset_convert_branch(hub_server, hub_env, tmp_path, traces_file):
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub_server.endpoint, token=hub_server.token)
    repo = "tester/agent-traces-parquet"
    api.create_repo(repo, repo_type="dataset")
    commit = api.upload_file(path_or_fileobj=str(traces_file), path_in_repo="default/train/0000.parquet",
                             repo_id=repo, repo_type="dataset").oid
    # The Hub's converter publishes refs/convert/parquet; the test hub has no route to create it.
    subprocess.run(["git", "--git-dir", str(hub_server.git_dir(repo, "dataset")), "update-ref",
                    "refs/convert/parquet", commit], check=True)
    units = parquet.download_hub_dataset(repo, tmp_path / "shards", endpoint=hub_server.endpoint, token=hub_server.token)
    assert [(u.session_id, u.signature) for u in units] == [("s1", commit), ("s2", commit)]
    assert units[0].path == tmp_path / "shards" / "default" / "train" / "0000.parquet"
    assert len(parquet.parse(units[0]).turns) == 3

    bare = "tester/not-converted"
    api.create_repo(bare, repo_type="dataset")
    with pytest.raises(UsageError, match="refs/convert/parquet"):  # endpoint and token from HF_ENDPOINT/HF_TOKEN
        parquet.download_hub_dataset(bare, tmp_path / "none")
