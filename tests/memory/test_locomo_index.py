"""`funes index --yes` over the LoCoMo dev corpus (shared/eval) stores every turn,
a second run adds nothing, and `funes status --json` reports the counts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

EVAL_DIR = Path(os.environ.get("FUNES_EVAL_DIR") or ROOT.parent / "shared" / "eval")
FUNES = [sys.executable, "-m", "funes.cli"]

pytestmark = [
    pytest.mark.eval,
    pytest.mark.slow,
    pytest.mark.skipif(not (EVAL_DIR / "build_corpus.py").is_file(), reason=f"no LoCoMo kit at {EVAL_DIR}"),
]


def test_index_stores_every_turn_once(tmp_path):
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(EVAL_DIR / "build_corpus.py"), "--out", str(corpus), "--split", "dev"],
                   check=True, capture_output=True)
    manifest = json.loads((corpus / "manifest.json").read_text())
    env = {**os.environ, "HOME": str(corpus / "home"), "FUNES_HOME": str(tmp_path / "funes")}

    def run(*args):
        result = subprocess.run([*FUNES, *args], capture_output=True, text=True, env=env, timeout=900)
        assert result.returncode == 0, result.stderr
        return result

    first = run("index", "--yes")
    turns = sum(manifest["turns_by_format"].values())
    assert f"{turns} chunks added" in first.stderr
    status = json.loads(run("status", "--json").stdout)
    assert status["chunks"] == turns  # every dialog turn is one short text block: one chunk each
    assert status["sessions"] == sum(manifest["sessions_by_format"].values())
    assert status["embedded"] == turns
    assert set(status["harnesses"]) == {"claude_code", "codex", "pi"}
    second = run("index", "--yes")
    assert "0 chunks added" in second.stderr
    assert json.loads(run("status", "--json").stdout)["chunks"] == turns
