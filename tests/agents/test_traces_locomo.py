"""The LoCoMo evaluation corpus (shared/eval) parses into exactly the turns its qrels
name: every gold turn's text in the right session, under the qrels' turn id for
Claude Code and pi (Codex ids are positional by design; its gold carries ``seq``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import funes.discovery as discovery
import funes.traces as traces
from paths import ROOT

# The kit lives beside the repository (../shared/eval); FUNES_EVAL_DIR points elsewhere.
EVAL_DIR = Path(os.environ.get("FUNES_EVAL_DIR") or ROOT.parent / "shared" / "eval")

pytestmark = [
    pytest.mark.eval,
    pytest.mark.skipif(not (EVAL_DIR / "build_corpus.py").is_file(), reason=f"no LoCoMo kit at {EVAL_DIR}"),
]

HOME_ROOTS = {"claude_code": ".claude/projects", "codex": ".codex/sessions", "pi": ".pi/agent/sessions"}
FORMAT_HARNESS = {"claude": "claude_code", "codex": "codex", "pi": "pi"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("locomo") / "corpus"
    subprocess.run([sys.executable, str(EVAL_DIR / "build_corpus.py"), "--out", str(out), "--split", "dev"],
                   check=True, capture_output=True)
    sessions = {}
    for harness, root in HOME_ROOTS.items():
        for unit in discovery.discover(out / "home" / root, harness=harness):
            session = discovery.parse_unit(unit)
            assert session.key == unit.key and not session.warnings
            sessions[session.key] = session
    qrels = [json.loads(line) for line in (out / "qrels.jsonl").read_text().splitlines()]
    manifest = json.loads((out / "manifest.json").read_text())
    return sessions, qrels, manifest


def test_every_session_and_turn_is_read(corpus):
    sessions, _, manifest = corpus
    for fmt, harness in FORMAT_HARNESS.items():
        found = [s for s in sessions.values() if s.harness == harness]
        assert len(found) == manifest["sessions_by_format"][fmt]
        assert sum(len(s.turns) for s in found) == manifest["turns_by_format"][fmt]
    for session in sessions.values():
        assert session.cwd.startswith("/eval/locomo/conv-")
        assert session.workdir == session.cwd.replace("/", "-")
        assert all(len(t.blocks) == 1 and t.blocks[0].block_type == "text" for t in session.turns)
        assert all(t.ts for t in session.turns)


def test_gold_turns_are_found(corpus):
    sessions, qrels, manifest = corpus
    gold = [entry for question in qrels for entry in question["gold"]]
    assert len(gold) == manifest["gold_turns"]
    for entry in gold:
        session = sessions[traces.session_key(FORMAT_HARNESS[entry["format"]], entry["session_id"])]
        if entry["format"] == "codex":
            found = session.turns[entry["seq"]]  # every record is retained, so seq lines up
        else:
            [found] = [t for t in session.turns if t.turn_uuid == entry["turn_uuid"]]
        assert found.blocks[0].text == entry["text"], entry
