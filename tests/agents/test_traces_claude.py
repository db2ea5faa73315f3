"""Claude Code transcripts (funes.agents.claude.parser) on the real fixtures."""

from __future__ import annotations

import json

from funes.agents.claude import parser as claude
from trace_helpers import REAL, assert_well_formed, copy_fixture, parse_file, shape, texts, turn

EPISODIC = REAL / "episodic_memory"


def test_windows_session_with_queue_operation_first(tmp_path):
    # Laid out as Claude Code stores it, so the file stem is the real session id.
    sid = "06ec42c3-2184-40c5-b0ee-98c3235b4c4c"
    path = copy_fixture("claude_session.jsonl", tmp_path / ".claude" / "projects" / "D--physics-earth", f"{sid}.jsonl")
    session = parse_file(claude, path)
    assert_well_formed(session)
    assert (session.harness, session.session_id, session.key) == ("claude_code", sid, f"claude_code--{sid}")
    assert session.cwd == "D:\\physics\\earth"
    assert session.workdir == "D--physics-earth"
    assert session.branch is None  # "HEAD" is detached, not a branch
    assert not session.is_subagent and session.parent_session_id is None
    assert session.repo is None
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("tool_use", "PowerShell")]),
        ("tool", [("tool_result", "PowerShell")]),  # name back-filled from the tool_use
    ]
    first, call, result = session.turns
    assert first.turn_uuid == "d753fba5-0c26-437f-82df-ba98aa773943" and first.parent_uuid is None
    assert first.ts == "2026-06-12T21:21:57.939Z"
    assert first.blocks[0].text == "Build me a photo-realistic, highly interactive 3D digital twin of Earth."
    assert call.turn_uuid == "5dfb47d4-4f91-43fa-92e5-9abbd97f44d1"
    assert call.parent_uuid == "658eef08-5d02-48dc-a82a-712fc08a3e7c"
    assert call.ts == "2026-06-12T21:22:24.190Z"
    assert call.blocks[0].tool_use_id == "toolu_01Btocnn4TwfUjkFfby8AdEu"
    assert json.loads(call.blocks[0].text) == {
        "command": "Get-ChildItem -Force D:\\physics\\earth | Select-Object Name, Length",
        "description": "List files in working directory",
    }
    assert call.blocks[0].text.startswith('{"command":"Get-ChildItem')  # compact, source key order
    assert result.blocks[0].text == "(PowerShell completed with no output)"
    assert result.blocks[0].tool_use_id == "toolu_01Btocnn4TwfUjkFfby8AdEu"
    assert result.parent_uuid == call.turn_uuid
    assert session.warnings == []


def test_drift_fixture_skips_noise_records():
    session = parse_file(claude, REAL / "as_claude_small.jsonl")
    assert_well_formed(session)
    assert session.session_id == "as_claude_small"
    assert (session.cwd, session.workdir, session.branch) == ("/tmp", "-tmp", "main")
    assert len(session.turns) == 18
    by_uuid = {t.turn_uuid: t for t in session.turns}
    assert shape(by_uuid["u1"]) == ("user", [("text", None)])
    assert by_uuid["u1"].ts == "2025-12-16T00:00:01.000Z"
    assert shape(by_uuid["a1"]) == ("assistant", [("thinking", None), ("text", None), ("tool_use", "bash")])
    assert by_uuid["a1"].blocks[0].text == "Reasoning goes here."
    assert by_uuid["a1"].blocks[2].tool_use_id is None  # this tool_use has no id
    # isMeta records that carry tool output keep it (role tool), even a rejection
    assert shape(by_uuid["u2"]) == ("tool", [("tool_result", None)])
    assert by_uuid["u2b"].blocks[0].text == "The user doesn't want to proceed with this tool use."
    # the compaction summary is synthetic
    assert "u3" not in by_uuid and "Summary of prior context." not in texts(session)
    # system, attachment, progress, summary, title… records never become turns
    assert {t.role for t in session.turns} <= {"user", "assistant", "tool"}
    nested = by_uuid["u-nested-1"]
    assert shape(nested) == ("tool", [("tool_result", "Bash")])
    assert nested.blocks[0].text == "a.txt\nb.txt\n" and nested.parent_uuid == "a-nested-1"
    assert shape(by_uuid["a-nested-1"]) == ("assistant", [("thinking", None), ("text", None), ("tool_use", "Bash")])


def test_repeated_uuid_gets_a_positional_id():
    # The drift fixture trims many uuids to the same placeholder; ids must stay unique.
    session = parse_file(claude, REAL / "as_claude_small.jsonl")
    placeholder = [t for t in session.turns if t.turn_uuid == "[trimmed for fixture]"]
    positional = [t.turn_uuid for t in session.turns if t.turn_uuid.startswith("as_claude_small:L")]
    assert len(placeholder) == 1
    # the first holder (line index 46) keeps it; later user/assistant records get their line
    assert positional == [f"as_claude_small:L{i}" for i in (48, 54, 59, 61, 62, 64, 76, 77, 86)]


def test_record_without_uuid_gets_line_id(tmp_path):
    path = tmp_path / ".claude" / "projects" / "-home-u-llama-cpp" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        {"type": "user", "message": {"role": "user", "content": "first"}, "timestamp": "2026-01-02T03:04:05Z"},
        {"type": "assistant", "uuid": "", "message": {"role": "assistant", "content": [{"type": "text", "text": "second"}]}},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    session = parse_file(claude, path)
    assert [t.turn_uuid for t in session.turns] == ["s1:L0", "s1:L1"]
    assert session.turns[0].ts == "2026-01-02T03:04:05.000Z"
    assert session.workdir == "-home-u-llama-cpp"  # no cwd recorded: the project folder's name


def test_subagent_layout_links_parent():
    parent = parse_file(claude, REAL / "as_claude_subagent" / "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl")
    assert parent.session_id == "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f" and not parent.is_subagent
    assert [shape(t) for t in parent.turns] == [("user", [("text", None)]), ("assistant", [("text", None), ("tool_use", "Task")])]

    sub_path = REAL / "as_claude_subagent" / "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f" / "subagents" / "agent-a0ad4f44468bdf20d.jsonl"
    sub = parse_file(claude, sub_path)
    assert sub.session_id == "agent-a0ad4f44468bdf20d" and sub.is_subagent
    # the fixture's records name the agent itself, so the folder layout names the parent
    assert sub.parent_session_id == "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
    assert [t.turn_uuid for t in sub.turns] == ["cu1", "ca1", "cu2"]
    assert shape(sub.turns[2]) == ("tool", [("tool_result", None)])  # its tool_use has no id to match
    assert sub.turns[2].blocks[0].text == "a.txt:1: TODO fix"


def test_flat_subagent_takes_parent_from_records(tmp_path):
    # Older layout: projects/<slug>/agent-<id>.jsonl whose records carry the parent's sessionId.
    record = {"type": "user", "uuid": "x1", "sessionId": "parent-session", "isSidechain": True, "cwd": "/w",
              "message": {"role": "user", "content": "find TODOs"}}
    path = tmp_path / "projects" / "-w" / "agent-abc.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record) + "\n")
    session = parse_file(claude, path)
    assert session.is_subagent and session.parent_session_id == "parent-session"


def test_tiny_real_session():
    session = parse_file(claude, EPISODIC / "67a8478e-78dc-44ab-82ea-f65c8ead85f6.jsonl")
    assert_well_formed(session)
    assert session.cwd == "/Users/testuser/Documents/GitHub/projects/example-project/.worktrees/streaming"
    assert session.workdir == "-Users-testuser-Documents-GitHub-projects-example-project--worktrees-streaming"
    assert session.branch == "feature-branch"
    assert [shape(t)[0] for t in session.turns] == ["user", "assistant", "user", "assistant", "assistant", "tool", "assistant"]
    call = turn(session, "036f35fc-8457-4186-8993-910aa3655ef5")
    assert shape(call) == ("assistant", [("tool_use", "mcp__private-journal__process_thoughts")])
    assert call.ts == "2025-09-19T17:36:23.218Z"
    result = turn(session, "c8e57c3b-833c-4eda-a054-f6388d391cce")
    assert result.blocks[0].text == "Thoughts recorded successfully."
    assert result.blocks[0].tool_name == "mcp__private-journal__process_thoughts"


def test_summary_record_first_then_long_prompt():
    session = parse_file(claude, EPISODIC / "982581eb-41b9-46da-86c1-ac34168117a8.jsonl")
    assert [t.turn_uuid for t in session.turns] == [
        "ac0fb9cf-a3e6-44ec-86fc-34d558713781", "adaebf86-70f8-448e-8e27-8f2636608fc5"]
    assert len(session.turns[0].blocks[0].text) > 20_000
    assert session.turns[1].blocks[0].text.startswith("<summary>")


def test_large_worktree_session_drops_interruptions_and_local_command_output():
    session = parse_file(claude, EPISODIC / "0fae0449-64d3-4788-8622-d3a47d82c14b.jsonl")
    assert_well_formed(session)
    assert len(session.turns) == 442
    uuids = {t.turn_uuid for t in session.turns}
    # "[Request interrupted by user]" / "… for tool use" text records
    assert not uuids & {"a09c0d68-dd44-4979-adc9-f767a9515172", "b6701fd9-cf0c-44b8-af77-57a443b19fff",
                        "a40f3f51-1360-42f8-8931-1059573f2233", "56f427b3-9316-40c5-acde-9224008f2deb"}
    assert "f12bf36b-100d-453e-ac54-91e67b9509ea" not in uuids  # isMeta caveat
    assert "7ea953db-6057-40c3-8dfd-b985946249d4" not in uuids  # <local-command-stdout> of /context
    command = turn(session, "f29b649c-e7b0-4321-bd8c-f7688756da5a")  # what the user invoked stays
    assert command.blocks[0].text.startswith("<command-name>/context</command-name>")
    rejected = turn(session, "3ca52eb9-890f-4f2c-9108-f6e3d3d8f8a1")
    assert shape(rejected) == ("tool", [("tool_result", "Edit")])
    assert rejected.blocks[0].text.startswith("The user doesn't want to proceed with this tool use.")
    assert turn(session, "7957ec47-3b8d-49bc-8132-68d61ffbba6d").ts == "2025-09-20T04:34:59.561Z"


def test_long_research_session_tools():
    session = parse_file(claude, EPISODIC / "9a9eadc8-c1f1-493e-a0f1-884aa996b05b.jsonl")
    assert_well_formed(session)
    assert len(session.turns) == 248
    assert session.cwd == "/Users/testuser/Documents/GitHub/example-org/example-project"
    assert session.branch == "main"  # the first records have an empty gitBranch
    tools = {b.tool_name for t in session.turns for b in t.blocks if b.block_type == "tool_use"}
    assert {"Bash", "Glob", "Read", "TodoWrite", "WebSearch", "WebFetch", "Write", "Edit"} <= tools
    # every tool_result found the name of its tool_use
    results = [b for t in session.turns for b in t.blocks if b.block_type == "tool_result"]
    assert results and all(b.tool_name for b in results)
    assert max(len(b.text) for b in results) > 30_000
    thinking = [b for t in session.turns for b in t.blocks if b.block_type == "thinking"]
    assert len(thinking) == 12
    assert shape(turn(session, "4c701b84-33b5-4db6-9c7a-851bd6a0ee5d")) == ("assistant", [("tool_use", "Glob")])
    assert turn(session, "4c701b84-33b5-4db6-9c7a-851bd6a0ee5d").blocks[0].text == '{"pattern":"research/**/*"}'


def test_discover_skips_sidecars_and_tool_results(tmp_path):
    projects = tmp_path / "projects" / "-w"
    (projects / "s1" / "tool-results").mkdir(parents=True)
    (projects / "s1" / "subagents").mkdir()
    for name in ("s1.jsonl", "s1/tool-results/t.jsonl", "s1/subagents/agent-1.jsonl", "s1/subagents/agent-1.meta.json",
                 "journal.jsonl", "notes.txt"):
        (projects / name).write_text("{}\n")
    found = sorted(u.session_id for u in claude.discover(tmp_path))
    assert found == ["agent-1", "s1"]
    assert all(u.signature.count(":") == 1 for u in claude.discover(tmp_path))


def test_an_inline_subagent_thread_is_marked_as_the_subagents(tmp_path):
    """Claude Code 1.0.x wrote a Task subagent's records into the parent's transcript
    (``isSidechain``): its first user record is the prompt the parent agent wrote, not
    the user's words, and its rows say so while keeping the parent's session."""
    from funes.chunking import chunk_session

    def record(uuid, kind, content, sidechain=False):
        return {"type": kind, "uuid": uuid, "sessionId": "s1", "isSidechain": sidechain, "cwd": "/w",
                "message": {"role": kind, "content": content}}

    lines = [
        record("u1", "user", "Build the todo app with subagents"),
        record("a1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Task",
                                    "input": {"prompt": "Create the main page layout"}}]),
        record("p1", "user", "Create the main page layout", sidechain=True),
        record("s1", "assistant", [{"type": "text", "text": "I'll create the page."}], sidechain=True),
        record("r1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "Page created."}]),
    ]
    path = tmp_path / "projects" / "-w" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    session = parse_file(claude, path)
    assert not session.is_subagent and session.session_id == "s1"
    assert [(t.turn_uuid, t.role, t.is_subagent) for t in session.turns] == [
        ("u1", "user", False), ("a1", "assistant", False), ("p1", "user", True), ("s1", "assistant", True),
        ("r1", "tool", False)]
    marked = {chunk.turn_uuid: chunk.is_subagent for chunk in chunk_session(session)}
    assert marked == {"u1": False, "a1": False, "p1": True, "s1": True, "r1": False}
