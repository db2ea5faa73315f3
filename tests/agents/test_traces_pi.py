"""pi sessions (funes.agents.pi.parser) on the real fixtures, every format version."""

from __future__ import annotations

import json
import secrets
from collections import Counter

from funes.agents.pi import parser as pi
from trace_helpers import REAL, assert_well_formed, copy_fixture, parse_file, shape, texts

V1_SID = "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"


def test_v3_session_uses_native_ids():
    session = parse_file(pi, REAL / "pi_session.jsonl")
    assert_well_formed(session)
    assert (session.harness, session.session_id) == ("pi", "7028acdd-e85a-4fa0-88a5-71f4103333a0")
    assert (session.cwd, session.workdir, session.branch) == (
        "/Users/gibbon/Desktop/pi-share-hf", "-Users-gibbon-Desktop-pi-share-hf", None)
    assert [t.turn_uuid for t in session.turns] == ["765a0228", "0ace2c8d", "16c31112"]
    # the first message's parentId names an entry that is not in the file: a root
    assert [t.parent_uuid for t in session.turns] == [None, "765a0228", "0ace2c8d"]
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("assistant", [("thinking", None), ("tool_use", "bash")]),  # the whitespace-only text part is gone
        ("tool", [("tool_result", "bash")]),
    ]
    user, call, result = session.turns
    assert user.blocks[0].text == "how does this project work"
    assert user.ts == "2026-04-13T09:29:18.815Z"  # the entry's ISO time, not the message's epoch ms
    assert call.blocks[1].text == '{"command":"ls -la"}'
    assert call.blocks[1].tool_use_id == result.blocks[0].tool_use_id == "call_e07fd859865444c59e5e771f"
    assert result.blocks[0].text.startswith("total 88\ndrwxr-xr-x@ 13 gibbon")


def test_v3_with_compactions():
    session = parse_file(pi, REAL / "as_pi_small.jsonl")
    assert_well_formed(session)
    assert session.session_id == "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
    assert session.workdir == "-tmp-as-agent-fixture-project"
    assert [(t.turn_uuid, t.parent_uuid, t.role) for t in session.turns] == [
        ("30c6a75f", None, "user"),  # parent is a thinking_level_change: no retained ancestor
        ("22a2720e", "30c6a75f", "assistant"),
        ("ddd2179a", "22a2720e", "user"),  # parent is a compaction entry: its ancestor is used
        ("4a666296", "ddd2179a", "assistant"),
    ]
    assert session.turns[2].blocks[0].text == "Add one concise follow-up sentence."
    assert session.turns[3].ts == "2026-05-12T01:02:45.836Z"


def test_v1_large_session_positional_ids():
    session = parse_file(pi, REAL / "pi_large_session_v1.jsonl")
    assert_well_formed(session)
    assert session.session_id == V1_SID
    assert session.cwd == "/Users/badlogic/workspaces/pi-mono"
    assert len(session.turns) == 900
    assert Counter(t.role for t in session.turns) == {"assistant": 439, "tool": 373, "user": 88}
    first, second, third = session.turns[:3]
    # line 2 is an aborted assistant with empty content: no turn
    assert (first.turn_uuid, first.blocks[0].text, first.ts) == (f"{V1_SID}:1", "/mode", "2025-11-20T23:33:01.550Z")
    assert (second.turn_uuid, second.parent_uuid) == (f"{V1_SID}:4", f"{V1_SID}:1")
    assert shape(third) == ("assistant", [("text", None), ("tool_use", "read"), ("tool_use", "read"), ("tool_use", "bash")])
    assert third.blocks[1].text == '{"path":"packages/coding-agent/docs/theme.md"}'
    assert session.turns[3].blocks[0].tool_name == "read"
    assert session.turns[3].blocks[0].text.startswith("# Pi Coding Agent Themes")


def test_v1_branched_session_with_legacy_compaction():
    session = parse_file(pi, REAL / "pi_before_compaction_head360.jsonl")
    assert_well_formed(session)
    assert session.session_id == "ffae836b-9420-4060-ac13-7745215f90ff"
    assert session.parent_session_id == "d97339c6-6c10-4827-846b-9ff1d9c3dc37"  # from branchedFrom's file name
    assert len(session.turns) == 352
    compaction = json.loads((REAL / "pi_before_compaction_head360.jsonl").read_text().splitlines()[-1])
    assert compaction["type"] == "compaction"
    assert compaction["summary"] not in texts(session)  # a summary, not something said
    assert session.turns[-1].turn_uuid == "ffae836b-9420-4060-ac13-7745215f90ff:358"
    assert session.turns[0].blocks[0].text.startswith("alright, read @packages/coding-agent/src/main.ts")


def _migrate_like_pi(lines: list[str]) -> list[str]:
    """What pi's v1 -> v3 migration writes: version 3 in the (otherwise kept) header,
    a fresh random 8-hex id and a parentId chain on every entry."""
    migrated, previous = [], None
    for line in lines:
        entry = json.loads(line)
        if entry["type"] == "session":
            entry["version"] = 3
        else:
            entry["id"], entry["parentId"] = secrets.token_hex(4), previous
            previous = entry["id"]
        migrated.append(json.dumps(entry))
    return migrated


def test_migration_from_v1_keeps_turn_ids(tmp_path):
    lines = (REAL / "pi_large_session_v1.jsonl").read_text().splitlines()[:80]
    before = tmp_path / "before" / f"2025-11-20T23-33-50-805Z_{V1_SID}.jsonl"
    after = tmp_path / "after" / before.name
    for path, content in ((before, lines), (after, _migrate_like_pi(lines))):
        path.parent.mkdir()
        path.write_text("\n".join(content) + "\n")
    old, new = parse_file(pi, before), parse_file(pi, after)
    assert not pi.uses_native_ids(json.loads(_migrate_like_pi(lines)[0]))
    assert [(t.turn_uuid, t.parent_uuid, t.blocks) for t in new.turns] == [
        (t.turn_uuid, t.parent_uuid, t.blocks) for t in old.turns]


def test_message_roles_and_content_forms(tmp_path):
    header = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    entries = [
        {"role": "user", "content": "plain string prompt", "timestamp": 1767225600123},
        {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
        {"role": "bashExecution", "command": "git status", "output": "clean", "exitCode": 0},
        {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "custom", "customType": "x", "content": "extension note"},
        {"role": "compactionSummary", "summary": "earlier"},
        {"role": "assistant", "content": [{"type": "text", "text": "  "}, {"type": "thinking", "thinking": ""}]},
    ]
    lines = [header] + [
        {"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None, "message": message}
        for i, message in enumerate(entries)
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_file(pi, path)
    assert [(t.turn_uuid, t.parent_uuid) for t in session.turns] == [("e0", None), ("e1", "e0"), ("e2", "e1"), ("e3", "e2")]
    assert [shape(t) for t in session.turns] == [
        ("user", [("text", None)]),
        ("user", [("text", None)]),
        ("user", [("tool_use", "bash"), ("tool_result", "bash")]),
        ("tool", [("tool_result", "read")]),
    ]
    assert session.turns[0].ts == "2026-01-01T00:00:00.123Z"  # no entry timestamp: the message's epoch ms
    assert texts(session) == ["plain string prompt", "see", "git status", "clean", "a\nb"]


def test_discover_reads_header_id(tmp_path):
    sessions = tmp_path / "agent" / "sessions" / "--w--"
    sessions.mkdir(parents=True)
    copy_fixture("pi_session.jsonl", sessions, "2026-04-13T09-28-54-581Z_7028acdd-e85a-4fa0-88a5-71f4103333a0.jsonl")
    (sessions / "2026-01-01T00-00-00-000Z_00000000-0000-4000-8000-000000000009.jsonl").write_text("not json\n")
    found = {u.path.name: u.session_id for u in pi.discover(tmp_path / "agent")}
    assert found == {
        "2026-04-13T09-28-54-581Z_7028acdd-e85a-4fa0-88a5-71f4103333a0.jsonl": "7028acdd-e85a-4fa0-88a5-71f4103333a0",
        "2026-01-01T00-00-00-000Z_00000000-0000-4000-8000-000000000009.jsonl": "00000000-0000-4000-8000-000000000009",
    }
