"""What a first run leaves on the user's machine: nothing outside funes's own folders.

A fresh HOME with one Claude session and a Hermes database, nothing cached (the
ONNX export and the secret rules are built under ``$FUNES_HOME`` as on a new
machine), the XDG folders and TMPDIR pointed at empty folders outside HOME, and
none of the opt-outs funes sets for itself (ORT_DISABLE_TELEMETRY,
HF_HUB_DISABLE_TELEMETRY, TORCHINDUCTOR_CACHE_DIR) in the environment.  `funes
index`, `funes recall` and `funes add claude` run as the user runs them, separate
processes, Dagster recording on (in-process, before each command returns); then
every path created or changed is listed.  Only `$FUNES_HOME` and the files `funes add`
says it changed may appear: no telemetry identity (onnxruntime's device id under
~/.cache/Microsoft), no library caches, no SQLite side files beside an agent's
database.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from trace_helpers import REAL, build_hermes_db

OPT_OUTS = ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY", "TORCHINDUCTOR_CACHE_DIR", "FUNES_CACHE_DIR",
            "FUNES_NO_DAGSTER_RECORD", "DO_NOT_TRACK", "DISABLE_TELEMETRY")
XDG = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")


def tree(root: Path) -> dict[Path, int | None]:
    """Every path under ``root``: files with their mtime, folders with None."""
    return {path: None if path.is_dir() and not path.is_symlink() else path.lstat().st_mtime_ns
            for path in root.rglob("*")}


def written(before: dict[Path, int | None], after: dict[Path, int | None]) -> set[Path]:
    return {path for path, stamp in after.items() if path not in before or (stamp is not None and before[path] != stamp)}


@pytest.mark.slow
def test_a_first_run_writes_nothing_about_the_user_outside_funes_home(tmp_path):
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-home-me-proj"
    project.mkdir(parents=True)
    shutil.copyfile(REAL / "as_claude_small.jsonl", project / "as_claude_small.jsonl")
    build_hermes_db(home / ".hermes" / "state.db")
    funes_home = home / ".funes"
    outside = {name: tmp_path / name.lower() for name in (*XDG, "TMPDIR")}
    for folder in outside.values():
        folder.mkdir(mode=0o700)
    env = {name: value for name, value in os.environ.items() if name not in OPT_OUTS and not name.startswith("XDG_")}
    env.update(HOME=str(home), FUNES_HOME=str(funes_home), **{name: str(path) for name, path in outside.items()})
    watched = [home, *outside.values()]
    before = {root: tree(root) for root in watched}

    def funes(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "funes.cli", *args], env=env, capture_output=True, text=True,
                                timeout=600, cwd=home)
        assert result.returncode == 0, result.stderr
        return result.stdout + result.stderr

    funes("index", "--yes")
    assert "flaky" in funes("recall", "flaky test_parse", "--no-rerank")  # from the Hermes database
    added = funes("add", "claude", "--yes")

    changed_by_add = {home / name for name in re.findall(r"(?:created|updated) ~/([^:\s]+)", added)}
    assert changed_by_add, added
    allowed = changed_by_add | {parent for path in changed_by_add for parent in path.parents}
    leftovers = sorted(str(path) for root in watched for path in written(before[root], tree(root))
                       if path not in allowed and funes_home not in (path, *path.parents))
    assert leftovers == [], "\n".join(leftovers)
    assert (funes_home / "cache").is_dir()  # the first run did build its caches, where they belong
