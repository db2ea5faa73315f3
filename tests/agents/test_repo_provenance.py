"""Which repository and branch a session belongs to, and discovery of project
folders that are symlinked or cannot be read.

Repository and branch come from what each trace records (Codex's
``session_meta.payload.git``, Claude's ``gitBranch``, Hermes' ``git_branch`` and
``git_repo_root``), then from the git checkout at the session's cwd.  The
end-to-end test indexes every agent's real fixture through `funes index` and
finds each one again with `funes recall --repo` / `--branch`."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import funes.discovery as discovery
from funes.traces.common import checkout_identity, repo_from_remote_url
from agent_helpers import funes
from trace_helpers import REAL, build_hermes_db, copy_fixture

FUNES = [sys.executable, "-m", "funes.cli"]


@pytest.mark.parametrize(("url", "expected"), [
    ("https://github.com/acme/rocket.git", "acme/rocket"),
    ("https://github.com/acme/rocket", "acme/rocket"),
    ("https://github.com/acme/rocket/", "acme/rocket"),
    ("http://user:pw@git.example.org:8080/acme/rocket.git", "acme/rocket"),
    ("git@github.com:acme/rocket.git", "acme/rocket"),
    ("github.com:acme/rocket", "acme/rocket"),
    ("ssh://git@github.com/acme/rocket.git", "acme/rocket"),
    ("ssh://git@gitlab.example.org:2222/group/sub/rocket.git", "sub/rocket"),
    ("git://example.org/acme/rocket", "acme/rocket"),
    ("https://example.invalid/repo.git", None),  # one segment: no owner
    ("/srv/git/rocket.git", None),  # a local path
    ("file:///srv/git/acme/rocket.git", None),
    ("", None),
])
def test_remote_urls_become_owner_name(url, expected):
    assert repo_from_remote_url(url) == expected


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull})


def checkout(folder: Path, remote: str, branch: str) -> Path:
    """A git checkout at ``folder`` with ``origin`` = ``remote``, on ``branch``."""
    folder.mkdir(parents=True)
    git("init", "-q", "-b", branch, cwd=folder)
    git("remote", "add", "origin", remote, cwd=folder)
    return folder


def test_a_worktree_reads_its_own_branch_and_the_shared_remote(tmp_path):
    main = checkout(tmp_path / "main", "git@github.com:acme/rocket.git", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x", cwd=main)
    git("worktree", "add", "-q", "-b", "feat/wt", str(tmp_path / "wt"), cwd=main)
    (tmp_path / "wt" / "src").mkdir()
    assert checkout_identity(str(main)) == ("acme/rocket", "main")
    assert checkout_identity(str(tmp_path / "wt" / "src")) == ("acme/rocket", "feat/wt")
    assert checkout_identity(str(tmp_path / "nowhere")) == (None, None)


def rewrite_jsonl(source: Path, target: Path, change) -> Path:
    """``source`` with ``change(record)`` applied to every JSON line, at ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        change(record)
        lines.append(json.dumps(record))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def run(*args: str, env: dict | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, *FUNES, *args], capture_output=True, text=True, timeout=600,
                          env=env or os.environ.copy())


def recalled_harnesses(*filters: str) -> set[str]:
    result = funes("recall", "a", "-k", "50", "--no-rerank", "--json", *filters)
    assert result.code == 0, result.err
    return {hit["harness"] for hit in json.loads(result.out)}


@pytest.mark.slow
def test_repo_and_branch_filters_find_each_agents_sessions(isolated_env, tmp_path):
    home = isolated_env
    repos = tmp_path / "checkouts"

    # Codex records the remote and branch itself; its cwd is no checkout here.
    def codex_git(record):
        if record.get("type") == "session_meta":
            record["payload"]["git"] = {"repository_url": "git@github.com:acme/codex-repo.git",
                                        "branch": "feat/codex", "commit_hash": "0" * 40}
    rewrite_jsonl(REAL / "codex_session.jsonl", home / ".codex" / "sessions" / "2026" / "06" / "23" /
                  "rollout-2026-06-23T05-37-02-019ef2fb-6574-7f83-bd99-9118713271f2.jsonl", codex_git)

    # Claude records a detached "HEAD" branch and no remote: both come from the checkout.
    claude_repo = checkout(repos / "claude", "https://github.com/acme/claude-repo.git", "feat/claude")

    def claude_cwd(record):
        if "cwd" in record:
            record["cwd"] = str(claude_repo)
    rewrite_jsonl(REAL / "claude_session.jsonl", home / ".claude" / "projects" / "p" /
                  "06ec42c3-2184-40c5-b0ee-98c3235b4c4c.jsonl", claude_cwd)

    # pi records neither.
    pi_repo = checkout(repos / "pi", "ssh://git@github.com/acme/pi-repo", "feat/pi")

    def pi_cwd(record):
        if record.get("type") == "session":
            record["cwd"] = str(pi_repo)
    rewrite_jsonl(REAL / "pi_session.jsonl", home / ".pi" / "agent" / "sessions" / "--x--" /
                  "2026-04-13T09-28-54-581Z_7028acdd-e85a-4fa0-88a5-71f4103333a0.jsonl", pi_cwd)

    # Hermes records the branch and the checkout's root, not the remote.
    hermes_repo = checkout(repos / "hermes", "https://github.com/acme/hermes-repo", "unused")
    database = build_hermes_db(home / ".hermes" / "state.db")
    with sqlite3.connect(database) as db:
        db.execute("UPDATE sessions SET git_repo_root = ?, cwd = ? WHERE id = 's_main'",
                   (str(hermes_repo), "/gone"))
        db.execute("DELETE FROM messages WHERE session_id != 's_main'")

    # Parquet: the cwd in each row's metadata.
    parquet_repo = checkout(repos / "parquet", "git@github.com:acme/parquet-repo.git", "feat/parquet")
    messages = [json.dumps({"role": "user", "content": "a parquet question about the cache"}),
                json.dumps({"role": "assistant", "content": "a parquet answer"})]
    export = tmp_path / "export" / "traces.parquet"
    export.parent.mkdir()
    pq.write_table(pa.table({"session_id": ["pq1"], "messages": [messages],
                             "metadata": [json.dumps({"cwd": str(parquet_repo)})]}), export)

    for target in ("--yes", str(export)):
        indexed = funes("index", target)
        assert indexed.code == 0, indexed.err

    assert recalled_harnesses() == {"claude_code", "codex", "pi", "hermes", "parquet"}
    expected = {"codex": ("acme/codex-repo", "feat/codex"), "claude_code": ("acme/claude-repo", "feat/claude"),
                "pi": ("acme/pi-repo", "feat/pi"), "hermes": ("acme/hermes-repo", "main"),
                "parquet": ("acme/parquet-repo", "feat/parquet")}
    for harness, (repo, branch) in expected.items():
        assert recalled_harnesses("--repo", repo) == {harness}, repo
        assert recalled_harnesses("--repo", repo.upper()) == {harness}  # owner/name match ignores case
        assert recalled_harnesses("--branch", branch) == ({harness} if branch != "main" else {"hermes"}), branch
    assert recalled_harnesses("--repo", "acme/none") == set()


# --------------------------------------------------------------------------- discovery of project folders
CLAUDE_SID = "06ec42c3-2184-40c5-b0ee-98c3235b4c4c"


def test_symlinked_project_folders_are_followed_once(isolated_env, tmp_path):
    projects = isolated_env / ".claude" / "projects"
    elsewhere = tmp_path / "synced" / "D--physics-earth"
    copy_fixture("claude_session.jsonl", elsewhere, f"{CLAUDE_SID}.jsonl")
    projects.mkdir(parents=True)
    (projects / "D--physics-earth").symlink_to(elsewhere, target_is_directory=True)
    (projects / "again").symlink_to(elsewhere, target_is_directory=True)  # the same folder twice
    (elsewhere / "loop").symlink_to(projects, target_is_directory=True)  # and a loop back up
    units = discovery.discover(harness="claude")
    assert [unit.key for unit in units] == [f"claude_code--{CLAUDE_SID}"]
    assert discovery.parse_unit(units[0]).turns


def drop_read_override() -> tuple[str, ...]:
    """What makes a folder of mode 000 unreadable for this test's `funes`: root
    reads everything unless its override capabilities are dropped."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no way to make a folder unreadable")
    return ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")


@pytest.mark.slow
def test_an_unreadable_project_folder_is_warned_about_and_counted(isolated_env):
    projects = isolated_env / ".claude" / "projects"
    copy_fixture("claude_session.jsonl", projects / "readable", f"{CLAUDE_SID}.jsonl")
    locked = projects / "locked"
    copy_fixture("as_claude_small.jsonl", locked)
    locked.chmod(0)
    try:
        result = run("index", "--harness", "claude", prefix=drop_read_override())
    finally:
        locked.chmod(0o755)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    warned = [line for line in lines if line.startswith("warning: ") and str(locked) in line]
    assert len(warned) == 1 and "cannot read folder" in warned[0], result.stderr
    summary = next(line for line in lines if line.startswith("indexed "))
    assert summary.startswith("indexed 1 of 1 session(s)") and " 1 warning(s)," in summary, summary
