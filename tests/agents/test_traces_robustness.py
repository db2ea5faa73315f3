"""Bad input never costs more than the bad part: every parser survives garbage, and no
exception but TraceReadError leaves ``parse``."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.errors import TraceReadError
from funes.agents.claude import parser as claude
from funes.agents.codex import parser as codex
from funes.agents.hermes import parser as hermes
from funes.agents.parquet import parser as parquet
from funes.agents.pi import parser as pi
from funes.traces.model import SourceUnit
from trace_helpers import REAL, assert_well_formed, build_hermes_db, fixture_module, parse_file, texts

# (parser, fixture, file name the agent would give it)
JSONL_CASES = [
    (claude, "claude_session.jsonl", "06ec42c3-2184-40c5-b0ee-98c3235b4c4c.jsonl"),
    (claude, "as_claude_small.jsonl", "ses_stage0_small.jsonl"),
    (codex, "codex_session.jsonl", "rollout-2026-06-23T05-37-02-019ef2fb-6574-7f83-bd99-9118713271f2.jsonl"),
    (pi, "pi_session.jsonl", "2026-04-13T09-28-54-581Z_7028acdd-e85a-4fa0-88a5-71f4103333a0.jsonl"),
    (pi, "as_pi_small.jsonl", "2026-05-12T01-02-27-657Z_019e19b4-eb48-746a-aa6b-8dfcfa37954b.jsonl"),
]
CASE_IDS = [f"{module.HARNESS}:{fixture}" for module, fixture, _ in JSONL_CASES]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["type", "uuid", "id", "parentId", "parentUuid", "timestamp", "message", "payload", "content", "role",
          "cwd", "version", "ordinal", "sessionId", "isMeta", "arguments", "output", "summary", "text"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])


def _mutate(record, path: list[str], value):
    """``record`` with the field at ``path`` (walking into nested objects as far as
    they go) replaced by ``value``."""
    if not isinstance(record, dict):
        return value
    copy = dict(record)
    key = path[0]
    inner = copy.get(key)
    copy[key] = _mutate(inner, path[1:], value) if len(path) > 1 and isinstance(inner, dict) else value
    return copy


@st.composite
def garbage_lines(draw, records: list[dict]) -> bytes:
    kind = draw(st.sampled_from(["bytes", "truncated", "mutated", "not-object", "huge-int", "deep"]))
    if kind == "bytes":
        return draw(st.binary(max_size=120))
    record = draw(st.sampled_from(records))
    line = json.dumps(record, ensure_ascii=False).encode()
    if kind == "truncated":
        return line[: draw(st.integers(0, max(0, len(line) - 1)))]
    if kind == "mutated":
        path = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3))
        mutated = _mutate(record, path, draw(json_values))
        return json.dumps(mutated, ensure_ascii=draw(st.booleans())).encode()
    if kind == "not-object":
        return json.dumps(draw(json_values)).encode()
    if kind == "huge-int":
        return b'{"type":"user","timestamp":' + b"9" * 5000 + b"}"
    return b"[" * 50_000 + b"]" * 50_000  # nesting deeper than the decoder's recursion limit


def _lines(fixture: str) -> list[bytes]:
    return (REAL / fixture).read_bytes().splitlines()


@pytest.mark.parametrize(("module", "fixture", "name"), JSONL_CASES, ids=CASE_IDS)
@SETTINGS
@given(data=st.data())
def test_garbage_between_valid_lines(tmp_path, module, fixture, name, data):
    lines = _lines(fixture)
    records = [json.loads(line) for line in lines]
    clean = parse_file(module, REAL / fixture)
    insertions = data.draw(st.lists(st.tuples(st.integers(0, len(lines)), garbage_lines(records)), max_size=8))
    mixed = list(lines)
    for position, garbage in sorted(insertions, key=lambda item: -item[0]):  # from the end: positions stay valid
        mixed.insert(position, garbage)
    path = tmp_path / name
    path.write_bytes(b"\n".join(mixed))
    session = parse_file(module, path)  # raises nothing
    assert_well_formed(session)
    missing = Counter(texts(clean)) - Counter(texts(session))
    assert not missing, "a valid line next to garbage was lost"


@pytest.mark.parametrize("module", [claude, codex, pi], ids=lambda m: m.HARNESS)
@SETTINGS
@given(content=st.binary(max_size=2000))
def test_random_bytes(tmp_path, module, content):
    path = tmp_path / "rollout-x.jsonl"
    path.write_bytes(content)
    assert_well_formed(module.parse(SourceUnit(module.HARNESS, path, "x", "0:0")))


def assert_vanished_file_and_folder_are_read_errors(tmp_path, module) -> None:
    """A unit whose file is gone, or is a folder, cannot be read: TraceReadError."""
    with pytest.raises(TraceReadError, match="cannot read"):
        module.parse(SourceUnit(module.HARNESS, tmp_path / "gone.jsonl", "gone", "1:1"))
    folder = tmp_path / "a-folder.jsonl"
    folder.mkdir()
    with pytest.raises(TraceReadError, match="cannot read"):
        module.parse(SourceUnit(module.HARNESS, folder, "a-folder", "1:1"))


@pytest.mark.parametrize("module", [claude, codex, pi], ids=lambda m: m.HARNESS)
def test_vanished_or_unreadable_file_is_a_read_error(tmp_path, module):
    assert_vanished_file_and_folder_are_read_errors(tmp_path, module)
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.jsonl"
        locked.write_text("{}\n")
        locked.chmod(0)
        with pytest.raises(TraceReadError, match="cannot read"):
            module.parse(SourceUnit(module.HARNESS, locked, "locked", "1:1"))


def test_corrupt_zstd_is_a_read_error(tmp_path):
    path = tmp_path / "rollout-2026-01-01T00-00-00-00000000-0000-4000-8000-000000000000.jsonl.zst"
    # A frame header no decoder accepts: random bytes after the magic decode cleanly about
    # once in a thousand (an empty or raw block), which made this test flaky.
    path.write_bytes(b"\x28\xb5\x2f\xfd" + b"\xff" * 200)
    with pytest.raises(TraceReadError):
        codex.parse(SourceUnit("codex", path, "x", "1:1"))


def test_bad_lines_are_counted_with_file_and_line(tmp_path):
    path = tmp_path / "s.jsonl"
    good = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "caf\u00e9 \ud83d"}}
    path.write_bytes(b"\n".join([
        b"not json",
        json.dumps(good).encode(),  # ensure_ascii: the lone surrogate arrives escaped
        b"[1, 2]",
        b'{"type": "user", "uuid": "u2", "message": {"role": "user", "content": "bad \xff byte"}}',
        b'{"type": "user", "uuid": "u3", "message": "not an object"}',
        b'{"type": "user", "uuid": "u4", "message": {"role": "user", "content": "partial',
    ]))
    session = parse_file(claude, path)
    assert [(t.turn_uuid, t.blocks[0].text) for t in session.turns] == [("u1", "caf\u00e9 \ufffd"), ("u2", "bad \ufffd byte")]
    assert [(w.line, w.message) for w in session.warnings] == [
        (1, "not JSON"),
        (3, "not a JSON object (list)"),
        (6, "partial last line (still being written?)"),
    ]
    assert str(session.warnings[0]) == f"{path}:1: not JSON"


def test_shape_errors_cost_one_record(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"user","uuid":"u1","message":{"role":"user","content":"a"}}\n'
                    '{"type":"user","uuid":"u2","message":{"role":"user","content":"b"}}\n')
    real_blocks = claude._blocks
    monkeypatch.setattr(claude, "_blocks", lambda content: real_blocks(content) if content != "a" else 1 / 0)
    with pytest.raises(ZeroDivisionError):  # only shape errors are absorbed; bugs still surface
        parse_file(claude, path)
    monkeypatch.setattr(claude, "_blocks", lambda content: real_blocks(content) if content != "a" else {}["k"])
    session = parse_file(claude, path)
    assert [t.turn_uuid for t in session.turns] == ["u2"]
    assert session.warnings[0].line == 1 and "KeyError" in session.warnings[0].message


def test_fifty_megabyte_line(tmp_path):
    path = tmp_path / "s.jsonl"
    huge = {"type": "user", "uuid": "big", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "x" * 50_000_000}]}}
    with open(path, "w") as handle:
        handle.write(json.dumps(huge) + "\n")
        handle.write('{"type":"assistant","uuid":"after","message":{"role":"assistant","content":"ok"}}\n')
    session = parse_file(claude, path)
    assert [t.turn_uuid for t in session.turns] == ["big", "after"]
    assert len(session.turns[0].blocks[0].text) == 50_000_000


# --- Hermes and Parquet: bad rows, not bad lines ---------------------------------------

@pytest.fixture(scope="module")
def hermes_template(tmp_path_factory):
    return build_hermes_db(tmp_path_factory.mktemp("hermes-template") / "state.db")


def assert_discovered_sessions_parse_or_refuse(module, path: Path) -> None:
    """Every session ``module`` discovers in ``path`` parses well-formed, unless
    reading the store fails as a whole with TraceReadError (then it is retried later)."""
    try:
        for unit in module.discover(path):
            assert_well_formed(module.parse(unit))
    except TraceReadError:
        pass


def assert_odd_rows_parse(tmp_path_factory, template: Path, module, write) -> None:
    """Copy an agent's template database, let ``write(conn)`` add odd rows to it in one
    transaction, and check every session discovered in the copy parses well-formed."""
    db = tmp_path_factory.mktemp(module.HARNESS) / template.name
    shutil.copyfile(template, db)
    conn = sqlite3.connect(db)
    with conn:
        write(conn)
    conn.close()
    for unit in module.discover(db):
        assert_well_formed(module.parse(unit))


def insert_rows(conn: sqlite3.Connection, table: str, session_id: str, rows: list[dict]) -> None:
    """Each row (column -> value) into ``table`` under ``session_id``."""
    for row in rows:
        names = ", ".join(["session_id", *row])
        conn.execute(f"INSERT INTO {table} ({names}) VALUES (?{', ?' * len(row)})", (session_id, *row.values()))


sql_values = st.none() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=30) | st.binary(max_size=30)
json_texts = json_values.map(json.dumps) | st.text(max_size=30)


@SETTINGS
@given(rows=st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool", "system", "", "USER"]) | st.text(max_size=5),
    "content": sql_values | json_texts.map(lambda text: hermes.MULTIMODAL_PREFIX + text),
    "tool_calls": sql_values | json_texts,
    "tool_call_id": sql_values,
    "reasoning": sql_values,
    "timestamp": sql_values.filter(lambda v: v is not None),
    "display_kind": sql_values,
    "_compressed_summary": st.integers(0, 1) | st.text(max_size=3),
}), max_size=8))
def test_hermes_odd_rows(tmp_path_factory, hermes_template, rows):
    assert_odd_rows_parse(tmp_path_factory, hermes_template, hermes,
                          lambda conn: insert_rows(conn, "messages", "s_main", rows))


@SETTINGS
@given(messages=st.lists(json_texts | json_values.map(lambda v: json.dumps({"role": "assistant", "tool_calls": v})),
                         max_size=6))
def test_parquet_odd_messages(tmp_path_factory, messages):
    path = tmp_path_factory.mktemp("parquet") / "t.parquet"
    pq.write_table(pa.table({"session_id": ["s"], "messages": pa.array([messages], pa.list_(pa.string()))}), path)
    for unit in parquet.discover(path):
        assert_well_formed(parquet.parse(unit))


@pytest.mark.parametrize("module", [hermes, parquet], ids=lambda m: m.HARNESS)
@SETTINGS
@given(content=st.binary(max_size=3000))
def test_random_bytes_database_or_parquet(tmp_path_factory, module, content):
    path: Path = tmp_path_factory.mktemp("random") / ("state.db" if module is hermes else "t.parquet")
    path.write_bytes(content)
    try:
        assert_well_formed(module.parse(SourceUnit(module.HARNESS, path, "s", "1:1")))
    except TraceReadError:
        pass


# --- the agents ported onto the contract --------------------------------------------------

from funes.agents.copilot import parser as copilot  # noqa: E402
from funes.agents.gemini import parser as gemini  # noqa: E402
from funes.agents.kimi import parser as kimi  # noqa: E402
from funes.agents.kiro import parser as kiro  # noqa: E402
from funes.agents.qwen import parser as qwen  # noqa: E402
from funes.agents.vibe import parser as vibe  # noqa: E402
from trace_helpers import FIXTURES  # noqa: E402

AGENTS = FIXTURES / "agents"
MORE_JSONL_CASES = [
    (gemini, AGENTS / "gemini_cli/tmp/notes/chats/session-2026-12-01T10-22-54614887.jsonl"),
    (qwen, AGENTS / "qwen_code/projects/-home-dev-notes/chats/f402a6ae-a31c-4946-8d72-df92cbdc035d.jsonl"),
    (copilot, AGENTS / "copilot_cli/session-state/4f1d2e93-8f48-4961-abc9-53f422e9159f/events.jsonl"),
    (kiro, AGENTS / "kiro_cli/sessions/cli/3c2b1a00-7777-4888-9999-aaaabbbbcccc.jsonl"),
    (kimi, AGENTS / "kimi_cli/sessions/c72527a0c7cc5b564daf6847cc85bea7/3f1c9a52-7b1e-4c0d-9a8e-51d2c4b7e610/"
                    "context.jsonl"),
    (vibe, AGENTS / "mistral_vibe/logs/session/session_20251205_101500_7c0e5a11/messages.jsonl"),
]
MORE_IDS = [module.HARNESS for module, _ in MORE_JSONL_CASES]
MORE_MODULES = [gemini, qwen, copilot, kiro, kimi, vibe]


def _without_shared_ids(line: bytes, n: int) -> bytes:
    """A Gemini record that names an existing message or tool call replaces it (that is the
    format: the last version of an id wins), so garbage gets ids of its own."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return line
    if isinstance(record, dict):
        if isinstance(record.get("id"), str):
            record["id"] = f"garbage-{n}"
        record.pop("toolCalls", None)
        record.pop("$set", None)
        return json.dumps(record).encode()
    return line


@pytest.mark.parametrize(("module", "fixture"), MORE_JSONL_CASES, ids=MORE_IDS)
@SETTINGS
@given(data=st.data())
def test_more_agents_garbage_between_valid_lines(tmp_path, module, fixture, data):
    lines = fixture.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    path = tmp_path / fixture.parent.name / fixture.name
    path.parent.mkdir(parents=True, exist_ok=True)
    for sidecar in fixture.parent.glob(fixture.stem + ".json"):
        shutil.copyfile(sidecar, path.parent / sidecar.name)
    unit = SourceUnit(module.HARNESS, path, fixture.stem, "1:1")
    path.write_bytes(b"\n".join(lines) + b"\n")
    clean = module.parse(unit)
    insertions = data.draw(st.lists(st.tuples(st.integers(1, len(lines)), garbage_lines(records)), max_size=8))
    mixed = list(lines)
    for n, (position, garbage) in enumerate(sorted(insertions, key=lambda item: -item[0])):
        mixed.insert(position, _without_shared_ids(garbage, n) if module is gemini else garbage)
    path.write_bytes(b"\n".join(mixed))
    session = module.parse(unit)  # raises nothing
    assert_well_formed(session)
    missing = Counter(texts(clean)) - Counter(texts(session))
    assert not missing, "a valid line next to garbage was lost"


@pytest.mark.parametrize("module", MORE_MODULES, ids=lambda m: m.HARNESS)
@SETTINGS
@given(content=st.binary(max_size=2000), suffix=st.sampled_from([".jsonl", ".json"]))
def test_more_agents_random_bytes(tmp_path, module, content, suffix):
    path = tmp_path / f"session-x{suffix}"
    path.write_bytes(content)
    assert_well_formed(module.parse(SourceUnit(module.HARNESS, path, "x", "0:0")))


@pytest.mark.parametrize("module", MORE_MODULES, ids=lambda m: m.HARNESS)
def test_more_agents_vanished_or_unreadable_file_is_a_read_error(tmp_path, module):
    assert_vanished_file_and_folder_are_read_errors(tmp_path, module)


@pytest.fixture(scope="module")
def kiro_template(tmp_path_factory):
    return fixture_module("make_kiro_db.py").build(tmp_path_factory.mktemp("kiro-template") / "data.sqlite3")


@SETTINGS
@given(values=st.lists(json_texts | json_values.map(lambda v: json.dumps({"history": v})) | st.binary(max_size=40),
                       max_size=6))
def test_kiro_odd_conversation_rows(tmp_path_factory, kiro_template, values):
    def write(conn):
        for n, value in enumerate(values):
            conn.execute("INSERT INTO conversations_v2 VALUES (?, ?, ?, 1, 1)", (f"/odd/{n}", f"odd-{n}", value))
            conn.execute("INSERT OR REPLACE INTO conversations VALUES (?, ?)", (f"/odd/{n}", value))

    assert_odd_rows_parse(tmp_path_factory, kiro_template, kiro, write)


@SETTINGS
@given(content=st.binary(max_size=3000))
def test_kiro_random_bytes_database(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("random") / "data.sqlite3"
    path.write_bytes(content)
    assert_discovered_sessions_parse_or_refuse(kiro, path)


# --- Whole-file JSON agents ------------------------------------------------------------------
# These rewrite one JSON document per session: garbage arrives as odd items of its message
# array, or as a document cut off mid-write, never as a bad line.

from funes.agents.aider import parser as aider  # noqa: E402
from funes.agents.amp import parser as amp  # noqa: E402
from funes.agents.auggie import parser as auggie  # noqa: E402
from funes.agents.cline import parser as cline  # noqa: E402
from funes.agents.roo import parser as roo  # noqa: E402
# (parser, fixture tree, the session file inside it, the key of its message array or None for a bare array)
WHOLE_FILE_CASES = [
    (cline, "cline", "sdk/sessions/1784300000000_k7q2m/1784300000000_k7q2m.messages.json", "messages"),
    (cline, "cline", "classic/data/tasks/1767225600000/api_conversation_history.json", None),
    (roo, "roo_code", "globalStorage/rooveterinaryinc.roo-cline/tasks/3f6c1a2e-8b4d-4e0a-9c7b-5d2e1f0a9b8c/"
                      "api_conversation_history.json", None),
    (amp, "amp", "threads/T-019d2a41-7c3e-7b10-9f2a-4e5d6c7b8a90.json", "messages"),
    (auggie, "auggie", "sessions/5b7d2e90-4c1a-4f3b-9e8d-0a1b2c3d4e5f.json", "chatHistory"),
]
WHOLE_FILE_IDS = [f"{module.HARNESS}:{relative.split('/')[-1]}" for module, _, relative, _ in WHOLE_FILE_CASES]
MESSAGE_FIELDS = ["role", "content", "type", "text", "id", "ts", "name", "input", "tool_use_id", "toolUseID", "run",
                  "result", "messageId", "meta", "thinking", "isSummary", "reasoning_content"]


@st.composite
def garbage_messages(draw, messages: list):
    kind = draw(st.sampled_from(["value", "mutated", "mutated-part"]))
    if kind == "value" or not messages:
        return draw(json_values)
    message = draw(st.sampled_from(messages))
    if kind == "mutated":
        return _mutate(message, draw(st.lists(st.sampled_from(MESSAGE_FIELDS), min_size=1, max_size=3)),
                       draw(json_values))
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or not content:
        return draw(json_values)
    parts = list(content)
    index = draw(st.integers(0, len(parts) - 1))
    parts[index] = _mutate(parts[index], draw(st.lists(st.sampled_from(MESSAGE_FIELDS), min_size=1, max_size=2)),
                           draw(json_values))
    return {**message, "content": parts}


def _copy_agent(tmp_path_factory, tree: str) -> Path:
    folder = tmp_path_factory.mktemp(tree) / tree
    shutil.copytree(AGENTS / tree, folder)
    return folder


def _only_session(module, path: Path):
    units = [u for u in module.discover(path)]
    assert len(units) == 1, units
    return module.parse(units[0])


@pytest.mark.parametrize(("module", "tree", "relative", "key"), WHOLE_FILE_CASES, ids=WHOLE_FILE_IDS)
@SETTINGS
@given(data=st.data())
def test_garbage_between_valid_messages(tmp_path_factory, module, tree, relative, key, data):
    path = _copy_agent(tmp_path_factory, tree) / relative
    document = json.loads(path.read_text())
    messages = document[key] if key else document
    clean = _only_session(module, path)
    insertions = data.draw(st.lists(st.tuples(st.integers(0, len(messages)), garbage_messages(messages)), max_size=6))
    mixed = list(messages)
    for position, garbage in sorted(insertions, key=lambda item: -item[0]):
        mixed.insert(position, garbage)
    path.write_text(json.dumps({**document, key: mixed} if key else mixed, ensure_ascii=data.draw(st.booleans())))
    session = _only_session(module, path)
    assert_well_formed(session)
    missing = Counter(texts(clean)) - Counter(texts(session))
    assert not missing, "a valid message next to garbage was lost"


@pytest.mark.parametrize(("module", "tree", "relative", "key"), WHOLE_FILE_CASES, ids=WHOLE_FILE_IDS)
@SETTINGS
@given(data=st.data())
def test_document_cut_or_replaced(tmp_path_factory, module, tree, relative, key, data):
    path = _copy_agent(tmp_path_factory, tree) / relative
    raw = path.read_bytes()
    kind = data.draw(st.sampled_from(["cut", "bytes", "value", "deep"]))
    if kind == "cut":
        path.write_bytes(raw[: data.draw(st.integers(0, len(raw)))])
    elif kind == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=2000)))
    elif kind == "value":
        path.write_text(json.dumps(data.draw(json_values)))
    else:
        path.write_bytes(b"[" * 50_000 + b"]" * 50_000)
    assert_well_formed(module.parse(SourceUnit(module.HARNESS, path, "s", "1:1")))


@SETTINGS
@given(data=st.data())
def test_aider_log_with_garbage_lines(tmp_path_factory, data):
    folder = _copy_agent(tmp_path_factory, "aider")
    path = folder / "projects" / "todo" / ".aider.chat.history.md"
    lines = path.read_bytes().split(b"\n")
    for _ in range(data.draw(st.integers(0, 6))):
        garbage = data.draw(st.sampled_from([b"#### ", b"> ", b"# aider chat started at ", b""])) + data.draw(
            st.binary(max_size=80))
        lines.insert(data.draw(st.integers(0, len(lines))), garbage)
    path.write_bytes(b"\n".join(lines))
    for unit in aider.discover(path):
        assert_well_formed(aider.parse(unit))


# --- OpenCode, Goose, Crush, Cursor: odd rows in their SQLite stores --------------------

from funes.agents.crush import parser as crush  # noqa: E402
from funes.agents.cursor import parser as cursor  # noqa: E402
from funes.agents.goose import parser as goose  # noqa: E402
from funes.agents.opencode import parser as opencode  # noqa: E402
from trace_helpers import AGENT_FIXTURES  # noqa: E402

# (parser, fixture under tests/fixtures/agents, file name the agent would give it)
AGENT_JSONL_CASES = [
    (cursor, "cursor/projects/home-dev-notes/agent-transcripts/5b2f7c1e-9a0d-4c3b-8e21-6f4a1d2c3b10/"
             "5b2f7c1e-9a0d-4c3b-8e21-6f4a1d2c3b10.jsonl", "agent-transcripts/s1/s1.jsonl"),
    (goose, "goose/20250219_1.jsonl", "sessions/20250219_1.jsonl"),
]


@pytest.mark.parametrize(("module", "fixture", "name"), AGENT_JSONL_CASES, ids=[m.HARNESS for m, _, _ in AGENT_JSONL_CASES])
@SETTINGS
@given(data=st.data())
def test_agent_transcripts_survive_garbage_between_valid_lines(tmp_path, module, fixture, name, data):
    lines = (AGENT_FIXTURES / fixture).read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    clean = parse_file(module, AGENT_FIXTURES / fixture)
    insertions = data.draw(st.lists(st.tuples(st.integers(1, len(lines)), garbage_lines(records)), max_size=8))
    mixed = list(lines)
    for position, garbage in sorted(insertions, key=lambda item: -item[0]):
        mixed.insert(position, garbage)
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(mixed))
    session = parse_file(module, path)
    assert_well_formed(session)
    assert not Counter(texts(clean)) - Counter(texts(session)), "a valid line next to garbage was lost"


bubble_values = json_texts | st.binary(max_size=30) | st.fixed_dictionaries({
    "type": st.sampled_from([1, 2, 3]) | json_values, "text": json_values, "thinking": json_values,
    "createdAt": json_values, "toolFormerData": json_values | st.fixed_dictionaries({
        "name": json_values, "rawArgs": json_values | json_texts, "result": json_values, "toolCallId": json_values}),
}).map(json.dumps)


@pytest.fixture(scope="module")
def cursor_template(tmp_path_factory):
    return fixture_module("agents/cursor/make_cursor_vscdb.py").build(tmp_path_factory.mktemp("cursor-template") / "User")


@SETTINGS
@given(values=st.lists(st.tuples(st.sampled_from(["b1", "b3", "b5", "b-missing"]), bubble_values), max_size=5),
       composer=st.none() | json_texts | st.fixed_dictionaries({"fullConversationHeadersOnly": json_values,
                                                                "conversation": json_values}).map(json.dumps))
def test_cursor_odd_values(tmp_path_factory, cursor_template, values, composer):
    user = tmp_path_factory.mktemp("cursor") / "User"
    shutil.copytree(cursor_template, user)
    db = user / "globalStorage" / "state.vscdb"
    conn = sqlite3.connect(db)
    with conn:
        for bubble_id, value in values:
            conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:c0ffee00-0000-4000-8000-0000000modern:"
                                                                   f"{bubble_id}", value))
        if composer is not None:
            conn.execute("INSERT INTO cursorDiskKV VALUES ('composerData:c0ffee00-0000-4000-8000-0000000legacy', ?)",
                         (composer,))
    conn.close()
    for unit in cursor.discover(user):
        assert_well_formed(cursor.parse(unit))


part_shapes = st.fixed_dictionaries({
    "type": st.sampled_from(["text", "reasoning", "tool", "file", "step-start"]) | st.text(max_size=5),
    "text": json_values,
    "tool": json_values,
    "callID": json_values,
    "state": json_values | st.fixed_dictionaries({"status": st.sampled_from(["running", "completed", "error"]),
                                                 "input": json_values, "output": json_values,
                                                 "metadata": json_values, "time": json_values}),
    "time": json_values,
    "synthetic": json_values,
})
message_shapes = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]) | json_values,
                                        "time": json_values, "summary": json_values, "parentID": json_values})
row_data = json_texts | part_shapes.map(json.dumps) | st.binary(max_size=40)


@pytest.fixture(scope="module")
def opencode_template(tmp_path_factory):
    return fixture_module("agents/opencode/make_opencode_db.py").build(tmp_path_factory.mktemp("oc-template") / "opencode.db")


@SETTINGS
@given(messages=st.lists(st.tuples(json_texts | message_shapes.map(json.dumps), st.lists(row_data, max_size=4)),
                         max_size=5),
       updates=st.lists(st.tuples(st.sampled_from(["msg_a02", "msg_a03", "prt_a02_04", "prt_a03_02"]), row_data),
                        max_size=3))
def test_opencode_odd_rows(tmp_path_factory, opencode_template, messages, updates):
    def write(conn):
        for index, (message, parts) in enumerate(messages):
            conn.execute("INSERT INTO message VALUES (?, 'ses_0main', 1, 1, ?)", (f"msg_z{index}", message))
            for number, part in enumerate(parts):
                conn.execute("INSERT INTO part VALUES (?, ?, 'ses_0main', 1, 1, ?)",
                             (f"prt_z{index}_{number}", f"msg_z{index}", part))
        for row_id, data in updates:
            table = "message" if row_id.startswith("msg") else "part"
            conn.execute(f"UPDATE {table} SET data = ? WHERE id = ?", (data, row_id))

    assert_odd_rows_parse(tmp_path_factory, opencode_template, opencode, write)


goose_content = st.lists(json_values | st.fixed_dictionaries({
    "type": st.sampled_from(["text", "thinking", "toolRequest", "toolResponse"]) | st.text(max_size=5),
    "text": json_values, "id": json_values, "toolCall": json_values, "toolResult": json_values,
}), max_size=4)


@pytest.fixture(scope="module")
def goose_template(tmp_path_factory):
    return fixture_module("agents/goose/make_goose_db.py").build(tmp_path_factory.mktemp("goose-template") / "sessions.db")


@SETTINGS
@given(rows=st.lists(st.fixed_dictionaries({
    "message_id": sql_values,
    "role": st.sampled_from(["user", "assistant"]) | sql_values.filter(lambda v: v is not None),  # NOT NULL
    "content_json": json_texts | goose_content.map(json.dumps) | st.binary(max_size=30),
    "created_timestamp": sql_values.filter(lambda v: v is not None), "metadata_json": json_texts | sql_values,
}), max_size=6))
def test_goose_odd_rows(tmp_path_factory, goose_template, rows):
    assert_odd_rows_parse(tmp_path_factory, goose_template, goose,
                          lambda conn: insert_rows(conn, "messages", "20260528_1", rows))


crush_parts = st.lists(json_values | st.fixed_dictionaries({
    "type": st.sampled_from(["text", "reasoning", "tool_call", "tool_result", "shell_command", "finish"]),
    "data": json_values | st.fixed_dictionaries({"text": json_values, "input": json_values, "name": json_values,
                                                 "finished": json_values, "exit_code": json_values}),
}), max_size=4)


@pytest.fixture(scope="module")
def crush_template(tmp_path_factory):
    return fixture_module("agents/crush/make_crush_db.py").build(tmp_path_factory.mktemp("crush-template") / "crush.db")


@SETTINGS
@given(rows=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]) | st.text(max_size=4),
                               json_texts | crush_parts.map(json.dumps) | st.binary(max_size=30),
                               sql_values, sql_values), max_size=6))
def test_crush_odd_rows(tmp_path_factory, crush_template, rows):
    def write(conn):
        for index, (role, parts, created, finished) in enumerate(rows):
            conn.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at, finished_at) "
                         "VALUES (?, ?, ?, ?, ?, 0, ?)", (f"z{index}", "call_task1", role, parts,
                                                          0 if created is None else created, finished))

    assert_odd_rows_parse(tmp_path_factory, crush_template, crush, write)


@pytest.mark.parametrize("name", ["opencode.db", "sessions.db", "crush.db", "state.vscdb"])
@SETTINGS
@given(content=st.binary(max_size=3000))
def test_random_bytes_as_an_agent_database(tmp_path_factory, name, content):
    module = {"opencode.db": opencode, "sessions.db": goose, "crush.db": crush, "state.vscdb": cursor}[name]
    path: Path = tmp_path_factory.mktemp("random") / name
    path.write_bytes(content)
    assert_discovered_sessions_parse_or_refuse(module, path)
    try:
        assert_well_formed(module.parse(SourceUnit(module.HARNESS, path, "s", "1:1")))
    except TraceReadError:
        pass


def test_a_zstd_file_of_many_frames_reads_every_record_in_order(tmp_path):
    """Frames of uneven sizes, the file far larger than one read of compressed bytes, so
    frames end and start inside a read: every record, in order, and no warning."""
    import random

    import zstandard

    from funes.traces.jsonl import read_records

    rng = random.Random(7)
    records = [{"n": n, "text": "".join(rng.choice("abcdefghij ") for _ in range(rng.randrange(20, 400)))}
               for n in range(5000)]
    lines = [json.dumps(r).encode() + b"\n" for r in records]
    cuts = sorted(rng.sample(range(1, len(lines)), 6))
    frames = [b"".join(lines[a:b]) for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True)]
    path = tmp_path / "many.jsonl.zst"
    path.write_bytes(b"".join(zstandard.ZstdCompressor().compress(frame) for frame in frames))
    assert path.stat().st_size > 4 * (1 << 14)
    warnings = []
    assert [record for _, record in read_records(path, warnings)] == records
    assert warnings == []
