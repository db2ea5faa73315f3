"""Files and commands as stored provenance: `history PATH`, the `--file`/`--command`
filters of recall, sessions and scan, their MCP tools, the path rule on a real git
checkout, and a memory written before the columns existed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from memory_helpers import LONG_SESSION
from trace_helpers import REAL

from funes.agents.claude import parser as claude
from funes.traces.model import FILE_ACTIONS, SourceUnit

LONG_TRANSCRIPT = REAL / "episodic_memory" / f"{LONG_SESSION}.jsonl"


def funes(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "funes.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def ok(*args: str, cwd: Path | None = None) -> str:
    result = funes(*args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


def parsed(path: Path):
    return claude.parse(SourceUnit("claude_code", path, path.stem, "x"))


def touched_turns(session, root: str) -> dict[str, dict[str, set[str]]]:
    """turn_uuid → {path relative to ``root``: actions}, read off the parsed transcript."""
    found: dict[str, dict[str, set[str]]] = {}
    for turn in session.turns:
        for block in turn.blocks:
            for touch in block.files:
                path = touch.path.removeprefix(root.rstrip("/") + "/")
                found.setdefault(turn.turn_uuid, {}).setdefault(path, set()).add(touch.action)
    return found


def explanation(session, seq: int) -> tuple[str, int | None]:
    """What history should give as the explanation of turn ``seq``, read off the transcript."""
    by_seq = {turn.seq: turn for turn in session.turns}
    for earlier in range(seq, seq - 21, -1):
        turn = by_seq.get(earlier)
        texts = [b.text.strip() for b in turn.blocks if b.block_type == "text"] if turn else []
        if turn and turn.role == "assistant" and any(texts):
            said = "\n\n".join(t for t in texts if t)
            return said[:600].rstrip() + ("…" if len(said) > 600 else ""), earlier
        if turn and turn.role == "user" and any(texts):
            break
    return "", None


# ---------------------------------------------------------------- history
def test_history_lists_every_turn_that_touched_a_file_newest_first_with_its_explanation(memory_home):
    session = parsed(LONG_TRANSCRIPT)
    expected = touched_turns(session, session.cwd)
    # The folder touched by most turns of the long session, asked for as a prefix.
    folders: dict[str, set[str]] = {}
    for uuid, files in expected.items():
        for path in files:
            if "/" in path:
                folders.setdefault(path.split("/")[0] + "/", set()).add(uuid)
    folder, uuids = max(folders.items(), key=lambda item: len(item[1]))
    assert len(uuids) >= 2, "the fixture has a folder several turns touched"

    report = json.loads(ok("history", folder, "--json"))
    entries = report["entries"]
    assert {e["turn_uuid"] for e in entries} == uuids and report["turns"] == len(uuids)
    assert report["sessions"] == 1 and not report["truncated"]
    assert [e["ts"] for e in entries] == sorted((e["ts"] for e in entries), reverse=True)
    for entry in entries:
        assert entry["session_id"] == LONG_SESSION and entry["harness"] == "claude_code"
        wanted = {path: actions for path, actions in expected[entry["turn_uuid"]].items() if path.startswith(folder)}
        assert {t["path"]: set(t["actions"]) for t in entry["touches"]} == wanted
        # The explanation is the nearest assistant text at or before the call, never past the user's.
        assert (entry["explanation"], entry["explanation_seq"]) == explanation(session, entry["seq"])

    text = ok("history", folder, "--limit", "1")
    lines = text.splitlines()
    newest = entries[0]
    assert lines[0].startswith(f"[{newest['ts']}] claude_code ") and f"seq{newest['seq']}  " in lines[0]
    assert lines[1] == f"  → get {LONG_SESSION} {newest['turn_uuid']}"  # the default memory: no --memory
    assert lines[-1] == (f"{len(uuids)} turn(s) in 1 session(s) touched {folder}; listed the newest 1: "
                         "narrow with filters or raise --limit")
    assert all(line.startswith(("[", "  → get ", ">", "---")) for line in lines[:-1])
    # The → get line opens the turn that touched the file.
    opened = ok("get", LONG_SESSION, newest["turn_uuid"], "--window", "0", "--format", "agent")
    assert newest["touches"][0]["path"].split("/")[-1] in opened


def test_history_of_a_file_no_turn_touched_is_a_one_line_error(memory_home):
    missing = funes("history", "no/such/file.py")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == "funes: no turn touched no/such/file.py in memory at local\n"
    narrowed = funes("history", "package.json", "--harness", "codex")
    assert narrowed.returncode == 1 and "(with these filters)" in narrowed.stderr
    assert funes("history", "").returncode == 2
    assert funes("history", "x", "--limit", "0").returncode == 2
    assert funes("history").returncode == 2


# ---------------------------------------------------------------- filters
def test_file_and_command_filters_keep_only_hits_whose_turn_touched_or_ran_them(memory_home):
    session = parsed(LONG_TRANSCRIPT)
    expected = touched_turns(session, session.cwd)
    ran = {t.turn_uuid: [b.command for b in t.blocks if b.command] for t in session.turns}
    path = next(p for files in expected.values() for p in files if p.endswith(".json"))
    hits = json.loads(ok("recall", "project setup", "--file", path, "--json", "--no-rerank"))
    assert hits and all(path in expected.get(h["turn_uuid"], {}) for h in hits)
    assert all({"path": path, "actions": [a for a in FILE_ACTIONS if a in expected[h["turn_uuid"]][path]]} in h["files"] for h in hits)
    unfiltered = json.loads(ok("recall", "project setup", "--json", "--no-rerank"))
    assert any(path not in expected.get(h["turn_uuid"], {}) for h in unfiltered)

    command = next(c for commands in ran.values() for c in commands)
    needle = command.split()[0][-12:]
    hits = json.loads(ok("recall", "search skills", "--command", needle, "--json", "--no-rerank"))
    assert hits and all(any(needle in c for c in ran.get(h["turn_uuid"], [])) for h in hits)

    listed = ok("sessions", "--command", needle).splitlines()
    assert len(listed) == 2 and f"session={LONG_SESSION}" in listed[0]
    assert ok("sessions", "--command", "zq-no-such-command-4471") == "no sessions\n"
    scanned = json.loads(ok("scan", path.split("/")[-1], "--file", path, "--json"))
    assert scanned["matches"] and all(path in expected[m["turn_uuid"]] for m in scanned["matches"])


# ---------------------------------------------------------------- the path rule, on a real checkout
def _claude_session(folder: Path, cwd: Path, edited: Path) -> Path:
    records = [
        {"type": "user", "uuid": "u1", "cwd": str(cwd), "timestamp": "2026-05-01T10:00:00.000Z",
         "message": {"role": "user", "content": "the parser drops tabs, fix it"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "cwd": str(cwd),
         "timestamp": "2026-05-01T10:00:01.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": "Tabs were stripped by the tokenizer: keep them in split_fields."}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1", "cwd": str(cwd),
         "timestamp": "2026-05-01T10:00:02.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Edit",
              "input": {"file_path": str(edited), "old_string": "strip()", "new_string": "rstrip('\\n')"}},
             {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "python -m pytest -q tests"}}]}},
        {"type": "user", "uuid": "r1", "parentUuid": "a2", "cwd": str(cwd), "timestamp": "2026-05-01T10:00:03.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "content": "The file has been updated."},
             {"type": "tool_result", "tool_use_id": "t2", "content": "Exit code 1\n1 failed", "is_error": True}]}},
    ]
    path = folder / "5e55a0a0-1111-4222-8333-444455556666.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_paths_are_stored_relative_to_the_checkout_and_found_by_local_paths(isolated_env, tmp_path):
    checkout = tmp_path / "work" / "tool"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (checkout / "src").mkdir()
    source = checkout / "src" / "fields.py"
    source.write_text("def split_fields(line):\n    return line.strip()\n")
    # The agent ran in a subfolder; the file is stored relative to the checkout's top.
    transcript = _claude_session(isolated_env / ".claude" / "projects" / "-work-tool", checkout / "src", source)
    ok("index", str(transcript), "--yes")
    from funes.memory.location import local_memory
    from funes.memory.reader import Memory

    rows = Memory.open(local_memory()).scan(["turn_uuid", "block_type", "files", "commands", "exit_code"])
    by_turn = {}
    for row in rows.to_pylist():
        by_turn.setdefault(row["turn_uuid"], []).append(row)
    assert {r["files"] for r in by_turn["a2"]} == {"\nsrc/fields.py\tedit\n"}
    assert {r["commands"] for r in by_turn["a2"]} == {"python -m pytest -q tests"}
    assert all(r["files"] is None and r["commands"] is None for r in by_turn["a1"] + by_turn["u1"])
    assert sorted(r["exit_code"] for r in by_turn["r1"] if r["exit_code"] is not None) == [1]

    for asked, cwd in (("src/fields.py", tmp_path), (str(source), tmp_path), ("./fields.py", checkout / "src"),
                       ("../src/", checkout / "src")):
        report = json.loads(ok("history", asked, "--json", cwd=cwd))
        assert [(e["turn_uuid"], e["touches"]) for e in report["entries"]] == \
            [("a2", [{"path": "src/fields.py", "actions": ["edit"]}])], asked
        assert report["entries"][0]["explanation"] == \
            "Tabs were stripped by the tokenizer: keep them in split_fields."
        assert report["entries"][0]["commands"] == ["python -m pytest -q tests"]
    # Outside the checkout, an absolute path names only files stored absolute.
    assert funes("history", str(tmp_path / "elsewhere" / "src" / "fields.py"), cwd=tmp_path).returncode == 1


# ---------------------------------------------------------------- an older memory
@pytest.mark.slow  # among the longest tests (20–35 s on 2 loaded cores): the default suite stays under ten minutes
def test_a_memory_written_before_the_provenance_columns_opens_and_is_migrated(memory_home):
    import lance
    import pyarrow as pa

    from funes.memory.location import local_memory
    from funes.memory.schema import PROVENANCE_COLUMNS
    from funes.memory.reader import Memory

    location = local_memory()
    dataset = lance.dataset(location.table_uri)
    current = dataset.to_table()
    # The version-1 shape: the same rows without the three columns, stamped version 1.
    old_fields = [f for f in dataset.schema if f.name not in PROVENANCE_COLUMNS]
    metadata = {**dataset.schema.metadata, b"funes.schema_version": b"1"}
    old = pa.Table.from_arrays([current.column(f.name) for f in old_fields],
                               schema=pa.schema(old_fields, metadata=metadata))
    lance.write_dataset(old, location.table_uri, mode="overwrite")
    assert "files" not in lance.dataset(location.table_uri).schema.names

    # Readers read it: the missing columns as nulls, every other command as before.
    memory = Memory.open(location)
    assert memory.scan(["id", "files", "exit_code"]).column("files").null_count == current.num_rows
    assert f"session={LONG_SESSION}" in ok("sessions")
    assert "total match=package.json" in ok("scan", "package.json")
    hits = json.loads(ok("recall", "package.json", "--json"))  # finalists read by row id
    assert hits and all(hit["files"] == [] and hit["commands"] == [] and hit["exit_code"] is None for hit in hits)
    refused = funes("history", "package.json")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "was written before funes recorded the files and commands" in refused.stderr
    assert "run `funes index` once" in refused.stderr

    # The next writer adds the columns, null-filled, and stamps version 2; no row is lost.
    ok("index", "--yes")
    migrated = lance.dataset(location.table_uri)
    assert set(PROVENANCE_COLUMNS) <= set(migrated.schema.names)
    assert migrated.schema.metadata[b"funes.schema_version"] == b"2"
    assert migrated.count_rows() == current.num_rows
    assert migrated.to_table(columns=["files"]).column("files").null_count == current.num_rows
    assert funes("history", "package.json").stderr.startswith("funes: no turn touched package.json")


# ---------------------------------------------------------------- MCP
def _server():
    return StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=dict(os.environ))


async def _calls(path: str, command: str):
    async with stdio_client(_server()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            history = await session.call_tool("history", {"path": path, "limit": 1})
            missing = await session.call_tool("history", {"path": "no/such/file.py"})
            recalled = await session.call_tool("recall", {"query": "project setup", "file": path, "k": 3})
            listed = await session.call_tool("sessions", {"command": command, "file": ""})
            scanned = await session.call_tool("scan", {"needles": [path], "file": path})
            return tools, history, missing, recalled, listed, scanned


def _text(result):
    return "\n".join(part.text for part in result.content if part.type == "text")


def test_the_mcp_server_answers_history_and_the_file_and_command_filters(memory_home):
    session = parsed(LONG_TRANSCRIPT)
    expected = touched_turns(session, session.cwd)
    path = next(p for files in expected.values() for p in files if p.endswith(".json"))
    command = next(b.command for t in session.turns for b in t.blocks if b.command)
    tools, history, missing, recalled, listed, scanned = anyio.run(_calls, path, command)
    assert {"file", "command"} <= set(tools["recall"].input_schema["properties"])
    assert tools["history"].input_schema["properties"]["limit"]["maximum"] == 10_000
    assert not history.is_error
    assert _text(history) == ok("history", path, "--limit", "1").rstrip("\n")
    assert missing.is_error and "no turn touched no/such/file.py" in _text(missing)
    gets = [line.split()[3] for line in _text(recalled).splitlines() if line.startswith("  → get ")]
    assert not recalled.is_error and gets and all(path in expected[turn] for turn in gets)
    assert not listed.is_error and _text(listed).splitlines()[-1] == "1 session(s)"
    assert not scanned.is_error and "0 block(s)" not in _text(scanned)


def test_a_session_holding_a_subagents_thread_inline_is_listed_as_the_users(memory_home):
    """The fixture Claude session holds subagent turns inline (``isSidechain``): they
    are marked on their rows, and the session is still listed as a main session."""
    import lance

    table = lance.dataset(str(memory_home / ".funes" / "memory" / "chunks.lance")).to_table(
        columns=["session_id", "is_subagent"], filter="session_id = 'as_claude_small'").to_pylist()
    assert {row["is_subagent"] for row in table} == {True, False}
    listed = {s["session_id"]: s for s in json.loads(ok("sessions", "--json"))}
    assert listed["as_claude_small"]["is_subagent"] is False
