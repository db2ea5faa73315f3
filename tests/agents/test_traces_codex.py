"""Codex CLI rollouts (funes.agents.codex.parser) on the real fixtures."""

from __future__ import annotations

import json

import zstandard

from funes.agents.codex import parser as codex
from trace_helpers import REAL, assert_well_formed, copy_fixture, parse_file, shape, texts

SID = "019ef2fb-6574-7f83-bd99-9118713271f2"


def test_exec_rollout():
    session = parse_file(codex, REAL / "codex_session.jsonl")
    assert_well_formed(session)
    assert (session.harness, session.session_id) == ("codex", SID)
    assert (session.cwd, session.workdir, session.branch) == ("/workspace", "-workspace", None)
    assert not session.is_subagent and session.parent_session_id is None
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("text", None)]),
        ("assistant", [("thinking", None)]),
        ("assistant", [("tool_use", "exec_command")]),
        ("tool", [("tool_result", "exec_command")]),
        ("assistant", [("tool_use", "apply_patch")]),
        ("tool", [("tool_result", "apply_patch")]),
    ]
    # positional ids: the physical line, never renumbered
    assert [t.turn_uuid for t in session.turns] == [f"{SID}:{line}" for line in range(1, 8)]
    assert [t.parent_uuid for t in session.turns] == [None] + [f"{SID}:{line}" for line in range(1, 7)]
    user, _, reasoning, call, output, patch, patch_output = session.turns
    assert user.blocks[0].text == "make me a portfolio website, im a graphic designer"
    assert user.ts == "2026-06-23T05:37:06.565Z"
    assert reasoning.blocks[0].text.startswith("**Inspecting workspace state**")
    assert reasoning.ts == "2026-06-23T05:37:17.902Z"  # lines are not in time order; file order is kept
    # function_call arguments are already a JSON string: verbatim
    assert call.blocks[0].text == '{"cmd":"npm --version","workdir":"/workspace","yield_time_ms":10000,"max_output_tokens":12000}'
    assert call.blocks[0].tool_use_id == output.blocks[0].tool_use_id == "call_ZZmLAdguHiivDAu3gBjbTMIa"
    assert output.blocks[0].text.endswith("Output:\n10.9.8\n")
    assert patch.blocks[0].text.startswith("*** Begin Patch\n*** Update File: styles.css")
    assert patch_output.blocks[0].text.startswith("Exit code: 0")


def test_injected_context_is_not_a_user_prompt():
    session = parse_file(codex, REAL / "codex_real_sample.jsonl")
    assert session.session_id == "019b64e5-57fa-7463-b644-fba7e456f905"
    assert session.cwd == "/Users/macmini/Code/homelab-migration"
    assert session.workdir == "-Users-macmini-Code-homelab-migration"
    # AGENTS.md and <environment_context> messages skipped; event_msg/user_message is a duplicate
    assert len(session.turns) == 1
    prompt = session.turns[0]
    assert (prompt.turn_uuid, prompt.role, prompt.ts) == ("019b64e5-57fa-7463-b644-fba7e456f905:3", "user", "2025-12-28T12:21:44.491Z")
    assert prompt.blocks[0].text.startswith("can you analyse the MD files in this directory")
    assert not any("AGENTS.md instructions" in text or "<environment_context>" in text for text in texts(session))


def test_drift_fixture():
    session = parse_file(codex, REAL / "as_codex_small.jsonl")
    assert_well_formed(session)
    sid = "019fc8be-3658-7ca3-9e29-000000000000"
    assert session.session_id == sid  # the first of seven session_meta records
    assert (session.cwd, session.branch, session.is_subagent) == ("/tmp/repo", "main", False)
    assert len(session.turns) == 14
    first = session.turns[:7]
    assert [shape(t) for t in first] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None)]),
        ("assistant", [("tool_use", "shell")]),  # custom_tool_call
        ("assistant", [("tool_use", "shell")]),  # function_call
        ("tool", [("tool_result", "shell")]),  # output as a single content object
        ("tool", [("tool_result", "shell")]),  # output as a list of content items
        ("assistant", [("text", None)]),
    ]
    assert first[0].blocks[0].text == "List the files"  # the input_image part is dropped
    assert first[4].blocks[0].text == "a.txt\n" and first[4].blocks[0].tool_use_id == "call-2"
    assert first[5].blocks[0].text == "a.txt\nb.txt\n" and first[5].blocks[0].tool_use_id == "call-1"
    assert first[6].blocks[0].text == "Found 2 files."
    assert first[0].ts == "2026-08-03T10:48:56.000Z"
    # developer messages, tool_search, web_search, image generation, ghost snapshots: skipped
    assert {t.role for t in session.turns} == {"user", "assistant", "tool"}
    assert not any(block.block_type == "tool_use" and block.tool_name is None for t in session.turns for block in t.blocks)
    # a function_call with "arguments": null
    assert session.turns[11].blocks[0].text == "{}"
    # the inter-agent message's plain text is kept, its encrypted part is not
    assert session.turns[8].turn_uuid == f"{sid}:32" and shape(session.turns[8]) == ("assistant", [("text", None)])


def test_ordinal_ids_fall_back_to_lines_when_repeated():
    # every ordinal in the fixture is 0: the first one names its line, the rest use lines
    session = parse_file(codex, REAL / "as_codex_small.jsonl")
    sid = session.session_id
    assert [t.turn_uuid for t in session.turns[9:11]] == [f"{sid}:102", f"{sid}:104"]


def test_ordinal_ids(tmp_path):
    path = tmp_path / "rollout-2026-01-02T03-04-05-00000000-0000-4000-8000-000000000001.jsonl"
    lines = [
        {"type": "session_meta", "ordinal": 0, "payload": {"id": "t1", "cwd": "/w"}},
        {"type": "response_item", "ordinal": 1, "payload": {"type": "message", "role": "user", "content": "hi"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_file(codex, path)
    assert [t.turn_uuid for t in session.turns] == ["t1:o1", "t1:2"]
    assert [t.parent_uuid for t in session.turns] == [None, "t1:o1"]


def test_subagent_meta_and_other_item_shapes(tmp_path):
    uuid = "019f0000-0000-7000-8000-00000000abcd"
    path = tmp_path / f"rollout-2026-01-02T03-04-05-{uuid}.jsonl"
    meta = {"id": uuid, "cwd": "C:\\Users\\d\\x", "git": {"branch": "feat/x"}, "thread_source": "subagent",
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": "root-thread", "depth": 1}}}}
    items = [
        {"type": "local_shell_call", "call_id": "c1", "status": "completed",
         "action": {"type": "exec", "command": ["ls", "-la"]}},
        {"type": "function_call_output", "call_id": "c1", "output": {"content": "total 0", "success": True}},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}],
         "content": [{"type": "reasoning_text", "text": "details"}], "encrypted_content": "opaque"},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"},
                                                         {"type": "input_text", "text": "real question"}]},
        {"type": "web_search_call", "action": {"query": "q"}},
    ]
    lines = [{"type": "session_meta", "timestamp": "2026-01-02T03:04:05Z", "payload": meta}]
    lines += [{"type": "response_item", "timestamp": "2026-01-02T03:04:06.5Z", "payload": item} for item in items]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_file(codex, path)
    assert session.is_subagent and session.parent_session_id == "root-thread"
    assert (session.workdir, session.branch) == ("C--Users-d-x", "feat/x")
    assert [shape(t) for t in session.turns] == [
        ("assistant", [("tool_use", "local_shell")]),
        ("tool", [("tool_result", "local_shell")]),
        ("assistant", [("thinking", None)]),
        ("user", [("text", None)]),
    ]
    assert session.turns[0].blocks[0].text == '{"type":"exec","command":["ls","-la"]}'
    assert session.turns[1].blocks[0].text == "total 0"
    assert session.turns[2].blocks[0].text == "plan\ndetails"
    assert session.turns[3].blocks[0].text == "real question"
    assert session.turns[0].ts == "2026-01-02T03:04:06.500Z"


def test_zstd_rollouts_and_plain_preference(tmp_path):
    day = tmp_path / ".codex" / "sessions" / "2026" / "06" / "23"
    day.mkdir(parents=True)
    name = f"rollout-2026-06-23T05-37-02-{SID}.jsonl"
    raw = (REAL / "codex_session.jsonl").read_bytes()
    (day / f"{name}.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    [unit] = codex.discover(tmp_path / ".codex")
    assert unit.path.name.endswith(".zst") and unit.session_id == SID
    compressed = codex.parse(unit)
    assert len(compressed.turns) == 7

    copy_fixture("codex_session.jsonl", day, name)  # the plain file wins
    [unit] = codex.discover(tmp_path / ".codex")
    assert unit.path.name == name
    plain = codex.parse(unit)
    assert [(t.turn_uuid, t.blocks) for t in plain.turns] == [(t.turn_uuid, t.blocks) for t in compressed.turns]
    [asked_for] = codex.discover(day / f"{name}.zst")  # named explicitly, it is read anyway
    assert asked_for.path.name.endswith(".zst")


def test_zstd_rollout_of_several_frames_and_one_cut_short(tmp_path):
    path = tmp_path / f"rollout-2026-06-23T05-37-02-{SID}.jsonl.zst"
    lines = (REAL / "codex_session.jsonl").read_bytes().splitlines(keepends=True)
    first, second = (zstandard.ZstdCompressor().compress(b"".join(part)) for part in (lines[:4], lines[4:]))
    path.write_bytes(first + second)  # a writer that appends a frame per flush
    whole = parse_file(codex, path)
    assert len(whole.turns) == 7 and not whole.warnings

    # Cut inside the second frame: the first frame's turns stay, and the cut is said, not
    # passed over as the end of the file.
    path.write_bytes(first + second[: len(second) // 2])
    cut = parse_file(codex, path)
    # turn ids end in the 0-based line: the first frame holds lines 0-3
    in_first_frame = [t.turn_uuid for t in whole.turns if int(t.turn_uuid.rsplit(":", 1)[1]) < 4]
    assert in_first_frame and [t.turn_uuid for t in cut.turns] == in_first_frame
    assert [(w.path, w.line, w.message) for w in cut.warnings] == [
        (str(path), 5, "compressed file cut short (still being written?)")]


def test_discover_archived_and_file_name_fallback(tmp_path):
    home = tmp_path / "codex-home"
    archived = home / "archived_sessions"
    archived.mkdir(parents=True)
    uuid = "019f0000-0000-7000-8000-0000000000aa"
    (archived / f"rollout-2026-01-01T00-00-00-{uuid}.jsonl").write_text(
        '{"type":"response_item","payload":{"type":"message","role":"user","content":"no meta"}}\n')
    (home / "history.jsonl").write_text("{}\n")  # the prompt history, not a rollout
    [unit] = codex.discover(home)
    assert unit.session_id == uuid
    session = codex.parse(unit)
    assert session.session_id == uuid and session.turns[0].turn_uuid == f"{uuid}:0"


def test_an_older_shell_tools_json_envelope_is_opened_to_the_output_it_printed(tmp_path):
    """The command's lines are searchable and shown as printed (no ``\\n`` escapes); the
    exit status stays on the block; a command that printed nothing keeps its envelope
    (its exit status); another tool's JSON answer is left as it came."""
    uuid = "019f0000-0000-7000-8000-00000000beef"
    path = tmp_path / f"rollout-2026-01-02T03-04-05-{uuid}.jsonl"
    printed = 'README.md\napp\nsrc/"quoted".ts\n'
    outputs = [
        json.dumps({"output": printed, "metadata": {"exit_code": 2, "duration_seconds": 0.1}}),
        json.dumps({"output": "", "metadata": {"exit_code": 0, "duration_seconds": 0.0}}),
        json.dumps({"output": "rows", "next_page": 2}),  # an MCP tool's answer, not the envelope
    ]
    items = []
    for n, output in enumerate(outputs):
        items += [{"type": "function_call", "name": "shell", "call_id": f"c{n}",
                   "arguments": json.dumps({"command": ["bash", "-lc", "ls"]})},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": output}]
    lines = [{"type": "session_meta", "payload": {"id": uuid, "cwd": "/w"}}]
    lines += [{"type": "response_item", "timestamp": "2026-01-02T03:04:06Z", "payload": item} for item in items]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = [t.blocks[0] for t in parse_file(codex, path).turns if t.blocks[0].block_type == "tool_result"]
    assert [(r.text, r.exit_code) for r in results] == [(printed, 2), (outputs[1], 0), (outputs[2], None)]
