"""What each tool call did, as every parser reads it: the files it touched, the shell
command it ran, and the command's exit status (Block.files, .command, .exit_code).

On the real fixtures first; small records written here where a fixture lacks a shape
(the agents' documented formats: FORMAT.md beside each parser)."""

from __future__ import annotations

import json
import sqlite3
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from funes.agents.claude import parser as claude
from funes.agents.codex import parser as codex
from funes.agents.hermes import parser as hermes
from funes.agents.parquet import parser as parquet
from funes.agents.pi import parser as pi
from funes.traces.common import command_text, patch_touches, stated_exit_code
from funes.traces.model import FileTouch
from trace_helpers import REAL, build_hermes_db, parse_file

EPISODIC = REAL / "episodic_memory" / "0fae0449-64d3-4788-8622-d3a47d82c14b.jsonl"


def calls(session) -> dict[str, object]:
    """tool_use blocks by their call id."""
    return {b.tool_use_id: b for t in session.turns for b in t.blocks if b.block_type == "tool_use"}


def results(session) -> dict[str, object]:
    return {b.tool_use_id: b for t in session.turns for b in t.blocks if b.block_type == "tool_result"}


def write_jsonl(path, records) -> object:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_common_conventions():
    assert command_text(["bash", "-lc", "make test"]) == "make test"
    assert command_text(["/bin/zsh", "-c", "ls"]) == "ls"
    assert command_text(["rg", "-n", "two words"]) == "rg -n 'two words'"
    assert command_text("git status") == "git status"
    assert command_text([1, 2]) is None and command_text("") is None and command_text(None) is None
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Add File: new/b.py\n+z\n" \
            "*** Delete File: old.txt\n*** Update File: c.py\n*** Move to: d.py\n*** End Patch\n"
    assert patch_touches(patch) == (FileTouch("a.py", "edit"), FileTouch("new/b.py", "write"),
                                    FileTouch("old.txt", "delete"), FileTouch("c.py", "edit"),
                                    FileTouch("d.py", "write"))
    assert [stated_exit_code(line) for line in ("Exit code: 0", "Exit code 2", "Process exited with code 1",
                                                 "Command exited with code 127", "exit code 1", "Exit code: x")] \
        == [0, 2, 1, 127, None, None]


# ---------------------------------------------------------------------------------------- Claude
def test_claude_reads_files_commands_and_exit_status_from_a_real_session():
    session = parse_file(claude, EPISODIC)
    by_id, outcome = calls(session), results(session)
    edit = by_id["toolu_01C4nKkuX6J6thJkdBiKfVbB"]
    assert edit.tool_name == "Edit" and edit.command is None
    assert edit.files == (FileTouch("/Users/testuser/Documents/GitHub/projects/example-project/.worktrees/streaming/"
                                    ".gitignore", "edit"),)
    read = by_id["toolu_01Y4py8sFPkyqG2aicc5ZCwF"]
    assert read.files == (FileTouch("/Users/testuser/Documents/GitHub/projects/example-project/.worktrees/streaming/"
                                    ".lefthook.yml", "read"),)
    status = by_id["toolu_01RfDPvi7Upuaf5UwFBsyDSr"]
    assert (status.tool_name, status.files, status.command) == ("Bash", (), "git status --porcelain")
    assert outcome["toolu_01RfDPvi7Upuaf5UwFBsyDSr"].exit_code == 0
    # A commit the pre-commit hook rejected: an error result with no stated code.
    assert by_id["toolu_014nYnx2kYd3E3vMcLmCAQoo"].command.startswith('git commit -m "fix: allow Prisma')
    assert outcome["toolu_014nYnx2kYd3E3vMcLmCAQoo"].exit_code == 1
    assert outcome["toolu_01C4nKkuX6J6thJkdBiKfVbB"].exit_code is None  # an edit ran no command
    bash_results = [r for r in outcome.values() if r.tool_name == "Bash"]
    assert all(r.exit_code in (0, 1) for r in bash_results) and {0, 1} <= {r.exit_code for r in bash_results}


def test_claude_windows_shell_and_stated_exit_codes(tmp_path):
    session = parse_file(claude, REAL / "claude_session.jsonl")
    [call] = calls(session).values()
    assert call.command == "Get-ChildItem -Force D:\\physics\\earth | Select-Object Name, Length"
    assert [r.exit_code for r in results(session).values()] == [0]

    def use(id_, name, arguments):
        return {"type": "assistant", "uuid": f"a-{id_}", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": id_, "name": name, "input": arguments}]}}

    def result(id_, text, is_error, **extra):
        return {"type": "user", "uuid": f"r-{id_}", **extra, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id_, "content": text, "is_error": is_error}]}}

    path = write_jsonl(tmp_path / "s.jsonl", [
        use("t1", "Bash", {"command": "make test"}), result("t1", "Exit code 2\nmake: *** [test] Error 2", True),
        use("t2", "Bash", {"command": "sleep 100"}),
        result("t2", "[Request interrupted by user for tool use]", True,
               toolUseResult={"stdout": "", "stderr": "", "interrupted": True}),
        use("t3", "Write", {"file_path": "/w/new.py", "content": "x"}), result("t3", "File created", False),
        use("t4", "NotebookEdit", {"notebook_path": "/w/a.ipynb", "new_source": "x"}),
        use("t5", "MultiEdit", {"file_path": "/w/b.py", "edits": []}),
        use("t6", "Grep", {"pattern": "x", "path": "/w"}),  # a folder to search, not a file touched
    ])
    session = parse_file(claude, path)
    by_id, outcome = calls(session), results(session)
    assert outcome["t1"].exit_code == 2
    assert outcome["t2"].exit_code == 130
    assert outcome["t3"].exit_code is None and by_id["t3"].files == (FileTouch("/w/new.py", "write"),)
    assert by_id["t4"].files == (FileTouch("/w/a.ipynb", "edit"),)
    assert by_id["t5"].files == (FileTouch("/w/b.py", "edit"),)
    assert by_id["t6"].files == () and by_id["t6"].command is None


# ---------------------------------------------------------------------------------------- Codex
def test_codex_exec_command_and_apply_patch_from_a_real_rollout():
    session = parse_file(codex, REAL / "codex_session.jsonl")
    by_name = {b.tool_name: b for b in calls(session).values()}
    assert by_name["exec_command"].command == "npm --version" and by_name["exec_command"].files == ()
    assert by_name["apply_patch"].files == (FileTouch("styles.css", "edit"),) and by_name["apply_patch"].command is None
    outcome = {r.tool_name: r for r in results(session).values()}
    assert outcome["exec_command"].exit_code == 0  # "Process exited with code 0" in the header
    assert outcome["apply_patch"].exit_code is None  # its "Exit code: 0" answers no command


def test_codex_shell_shapes_of_older_and_newer_builds(tmp_path):
    def item(payload):
        return {"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item", "payload": payload}

    patch = "*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** Delete File: old.md\n*** End Patch"
    path = write_jsonl(tmp_path / "rollout-2026-01-01T00-00-00-019a0000-0000-7000-8000-000000000009.jsonl", [
        {"type": "session_meta", "payload": {"id": "019a0000-0000-7000-8000-000000000009", "cwd": "/w"}},
        item({"type": "function_call", "name": "shell", "call_id": "c1",
              "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"], "workdir": "/w"})}),
        item({"type": "function_call_output", "call_id": "c1",
              "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}})}),
        item({"type": "function_call", "name": "shell", "call_id": "c2",
              "arguments": json.dumps({"command": ["apply_patch", patch]})}),
        item({"type": "local_shell_call", "call_id": "c3", "status": "completed",
              "action": {"type": "exec", "command": ["git", "diff", "--stat"]}}),
        item({"type": "function_call_output", "call_id": "c3", "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\n"}),
        item({"type": "function_call", "name": "shell_command", "call_id": "c4",
              "arguments": json.dumps({"command": "cargo build"})}),
        item({"type": "function_call_output", "call_id": "c4",
              "output": "Exit code: 101\nWall time: 3 seconds\nOutput:\nExit code: 7\n"}),
        item({"type": "function_call", "name": "view_image", "call_id": "c5", "arguments": json.dumps({"path": "a.png"})}),
    ])
    session = parse_file(codex, path)
    by_id, outcome = calls(session), results(session)
    assert by_id["c1"].command == "pytest -q" and outcome["c1"].exit_code == 1
    assert by_id["c2"].files == (FileTouch("docs/new.md", "write"), FileTouch("old.md", "delete"))
    assert by_id["c2"].command is None
    assert by_id["c3"].command == "git diff --stat" and outcome["c3"].exit_code == 0
    assert by_id["c4"].command == "cargo build" and outcome["c4"].exit_code == 101  # the header, not the output
    assert by_id["c5"].files == (FileTouch("a.png", "read"),)


# ---------------------------------------------------------------------------------------- pi
def test_pi_reads_files_commands_and_stated_exit_codes_from_real_sessions():
    session = parse_file(pi, REAL / "pi_large_session_v1.jsonl")
    uses = [b for t in session.turns for b in t.blocks if b.block_type == "tool_use"]
    first_read = next(b for b in uses if b.tool_name == "read")
    assert first_read.files == (FileTouch("packages/coding-agent/docs/theme.md", "read"),)
    assert all(b.files and b.files[0].action == "edit" for b in uses if b.tool_name == "edit")
    assert all(b.command for b in uses if b.tool_name == "bash")
    bash = [r for t in session.turns for r in t.blocks if r.block_type == "tool_result" and r.tool_name == "bash"]
    codes = [r.exit_code for r in bash]
    assert None not in codes and {0, 1, 2} <= set(codes)
    failed = next(r for r in bash if r.exit_code == 2)
    assert failed.text.rstrip().endswith("Command exited with code 2")
    assert all(r.exit_code is None for t in session.turns for r in t.blocks
               if r.block_type == "tool_result" and r.tool_name != "bash")
    [only] = [b for t in parse_file(pi, REAL / "pi_session.jsonl").turns for b in t.blocks if b.tool_name == "bash"
              and b.block_type == "tool_use"]
    assert only.command == "ls -la"


def test_pi_user_bash_execution_records_its_exit_code(tmp_path):
    path = write_jsonl(tmp_path / "2026-01-01T00-00-00-000Z_7028acdd-e85a-4fa0-88a5-71f4103333a1.jsonl", [
        {"type": "session", "version": 3, "id": "7028acdd-e85a-4fa0-88a5-71f4103333a1", "cwd": "/w"},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "bashExecution", "command": "npm test", "output": "2 failing", "exitCode": 1}},
    ])
    [turn] = parse_file(pi, path).turns
    use, result = turn.blocks
    assert (use.command, result.exit_code) == ("npm test", 1)


# ---------------------------------------------------------------------------------------- Hermes
def test_hermes_terminal_and_file_tools(tmp_path):
    database = build_hermes_db(tmp_path / "state.db")
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch"
    tool_calls = [
        {"id": "h1", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": "README.md"})}},
        {"id": "h2", "type": "function", "function": {"name": "patch",
                                                     "arguments": json.dumps({"mode": "patch", "patch": patch})}},
        {"id": "h3", "type": "function", "function": {"name": "patch", "arguments": json.dumps(
            {"mode": "replace", "path": "setup.cfg", "old_string": "a", "new_string": "b"})}},
        {"id": "h4", "type": "function", "function": {"name": "terminal", "arguments": json.dumps({"command": "make"})}},
    ]
    with sqlite3.connect(database) as db:
        db.execute("INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?, ?, ?, ?, ?)",
                   ("s_main", "assistant", "Reading and fixing.", json.dumps(tool_calls), time.time()))
        db.execute("INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp) "
                   "VALUES (?, ?, ?, ?, ?, ?)", ("s_main", "tool", json.dumps({"output": "make: *** Error 2",
                                                                                "exit_code": 2, "error": None}),
                                                 "h4", "terminal", time.time()))
    [unit] = [u for u in hermes.discover(database) if u.session_id == "s_main"]
    session = hermes.parse(unit)
    by_id, outcome = calls(session), results(session)
    assert by_id["call_1"].command == "pytest -k test_parse --count 5"  # the fixture's own terminal call
    assert outcome["call_1"].exit_code is None  # its result is plain text: no status recorded
    assert by_id["h1"].files == (FileTouch("README.md", "read"),)
    assert by_id["h2"].files == (FileTouch("src/app.py", "edit"),)
    assert by_id["h3"].files == (FileTouch("setup.cfg", "edit"),)
    assert by_id["h4"].command == "make" and outcome["h4"].exit_code == 2


# ---------------------------------------------------------------------------------------- Parquet
def test_parquet_reads_the_tool_names_of_known_agents(tmp_path):
    def call(name, arguments):
        return {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}

    message = {"role": "assistant", "content": "On it.", "tool_calls": [
        call("Read", {"file_path": "/w/a.py"}), call("write_file", {"path": "b.py", "content": ""}),
        call("exec_command", {"cmd": "ls"}), call("Bash", {"command": "make"}),
        call("apply_patch", {"input": "*** Begin Patch\n*** Delete File: c.py\n*** End Patch"}),
        call("web_search", {"query": "x", "path": "not-a-file"})]}
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"session_id": ["p1"], "messages": [[json.dumps(message)]]}), path)
    [unit] = parquet.discover(path)
    [turn] = parquet.parse(unit).turns
    uses = [b for b in turn.blocks if b.block_type == "tool_use"]
    assert [(b.files, b.command) for b in uses] == [
        ((FileTouch("/w/a.py", "read"),), None), ((FileTouch("b.py", "write"),), None), ((), "ls"), ((), "make"),
        ((FileTouch("c.py", "delete"),), None), ((), None)]


@pytest.mark.parametrize("module, fixture", [(claude, "as_claude_small.jsonl"), (codex, "as_codex_small.jsonl"),
                                             (pi, "as_pi_small.jsonl")])
def test_drift_fixtures_leave_unknown_tools_without_provenance(module, fixture):
    session = parse_file(module, REAL / fixture)
    for block in (b for t in session.turns for b in t.blocks):
        assert isinstance(block.files, tuple)
        assert block.command is None or block.block_type == "tool_use"
        assert block.exit_code is None or block.block_type == "tool_result"


def test_funes_parse_prints_what_each_call_touched_ran_and_returned():
    from agent_helpers import funes

    result = funes("parse", str(REAL / "codex_session.jsonl"))
    assert result.code == 0, result.err
    blocks = [block for line in result.out.splitlines() for block in json.loads(line)["blocks"]]
    by_tool = {(b["block_type"], b["tool_name"]): b for b in blocks if b["tool_name"]}
    assert by_tool[("tool_use", "exec_command")]["command"] == "npm --version"
    assert by_tool[("tool_result", "exec_command")]["exit_code"] == 0
    assert by_tool[("tool_use", "apply_patch")]["files"] == [["styles.css", "edit"]]
