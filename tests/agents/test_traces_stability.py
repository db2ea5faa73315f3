"""Turn ids are the chunk-id seed: a transcript that grows (or is caught mid-write)
must reproduce every earlier turn_uuid exactly."""

from __future__ import annotations

import json
import uuid

import pytest

from funes.agents.claude import parser as claude
from funes.agents.codex import parser as codex
from funes.agents.pi import parser as pi
from trace_helpers import REAL, copy_fixture, parse_file


def _fresh_claude(record: dict, index: int) -> dict:
    return {**record, "uuid": str(uuid.UUID(int=index)), "parentUuid": record.get("uuid")}


def _fresh_pi(record: dict, index: int) -> dict:
    return {**record, "id": f"{index:08x}"} if "id" in record else record


def _same(record: dict, index: int) -> dict:
    return record


CASES = [
    (claude, "claude_session.jsonl", "06ec42c3-2184-40c5-b0ee-98c3235b4c4c.jsonl", _fresh_claude),
    (claude, "episodic_memory/67a8478e-78dc-44ab-82ea-f65c8ead85f6.jsonl", "67a8478e-78dc-44ab-82ea-f65c8ead85f6.jsonl", _fresh_claude),
    (codex, "codex_session.jsonl", "rollout-2026-06-23T05-37-02-019ef2fb-6574-7f83-bd99-9118713271f2.jsonl", _same),
    (codex, "as_codex_small.jsonl", "rollout-2026-08-03T10-48-56-019fc8be-3658-7ca3-9e29-000000000000.jsonl", _same),
    (pi, "pi_session.jsonl", "2026-04-13T09-28-54-581Z_7028acdd-e85a-4fa0-88a5-71f4103333a0.jsonl", _fresh_pi),
    (pi, "pi_large_session_v1.jsonl", "2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl", _fresh_pi),
]


def _ids(session):
    return [(t.turn_uuid, t.parent_uuid, t.seq, t.role) for t in session.turns]


@pytest.mark.parametrize(("module", "fixture", "name", "fresh"), CASES, ids=[c[1] for c in CASES])
def test_growing_transcript_keeps_turn_ids(tmp_path, module, fixture, name, fresh):
    path = copy_fixture(fixture, tmp_path, name)
    before = parse_file(module, path)
    assert before.turns
    records = [json.loads(line) for line in (REAL / fixture).read_text().splitlines()][1:40]
    appended = [json.dumps(fresh(record, 10_000 + i)) for i, record in enumerate(records)]

    with open(path, "a") as handle:  # the agent is mid-write: half a line
        handle.write(appended[0][: len(appended[0]) // 2])
    mid_write = parse_file(module, path)
    assert _ids(mid_write) == _ids(before)
    assert [w.message for w in mid_write.warnings][-1] == "partial last line (still being written?)"

    with open(path, "a") as handle:  # the line completes and more follow
        handle.write(appended[0][len(appended[0]) // 2:] + "\n" + "\n".join(appended[1:]) + "\n")
    after = parse_file(module, path)
    assert len(after.turns) > len(before.turns)
    assert _ids(after)[: len(before.turns)] == _ids(before)
    assert after.session_id == before.session_id
    assert len({t.turn_uuid for t in after.turns}) == len(after.turns)
