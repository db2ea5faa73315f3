"""Stale marks on recalled hits: which files a hit's turn touched have commits after
it, or are gone, in the checkout the query runs in, and whether the turn ran on
another branch; through the CLI (agent format and --json) and the MCP server, on
real git checkouts (commits after the session, a second worktree)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from agent_helpers import funes
from checkouts import claude_session, commit_files, git, new_checkout
from mcp import ClientSession, StdioServerParameters, stdio_client

SESSION = "5e55a0a0-1111-4222-8333-444455556666"
SAID = "The cache evicts too early: raise the watermark in the cache module and drop the legacy shim."


@pytest.fixture
def moved_on(isolated_env, tmp_path, monkeypatch):
    """A checkout where a session on feat/cache edited three files, one of them then
    changed by two commits and one removed; the session indexed."""
    top = new_checkout(tmp_path / "proj", {"src/cache.py": "a\n", "src/shim.py": "a\n", "README.md": "a\n"})
    claude_session(isolated_env, SESSION, top, SAID,
                   [str(top / "src" / "cache.py"), str(top / "src" / "shim.py"), str(top / "README.md")],
                   branch="feat/cache")
    commit_files(top, {"README.md": "b\n"}, "before", "2026-04-20T09:00:00Z")  # before the session: not counted
    commit_files(top, {"src/cache.py": "b\n"}, "tune", "2026-05-02T09:00:00Z")
    commit_files(top, {"src/cache.py": "c\n", "src/shim.py": None}, "drop the shim", "2026-05-03T09:00:00Z")
    indexed = funes("index", "--yes")
    assert indexed.code == 0, indexed.err
    return top


def recalled(*args: str) -> tuple[str, list[dict]]:
    text = funes("recall", "watermark legacy shim", "--no-rerank", *args)
    listed = funes("recall", "watermark legacy shim", "--no-rerank", "--json", *args)
    assert text.code == 0 and listed.code == 0, text.err + listed.err
    return text.out, json.loads(listed.out)


def edit_hit(hits: list[dict]) -> dict:
    return next(hit for hit in hits if hit["files"])


def test_a_hit_says_which_files_moved_on_and_that_it_ran_on_another_branch(moved_on, monkeypatch):
    monkeypatch.chdir(moved_on / "src")
    text, hits = recalled()
    assert edit_hit(hits)["stale"] == {"changed": [{"path": "src/cache.py", "commits": 2}], "gone": ["src/shim.py"],
                                       "other_branch": "feat/cache", "checkout_branch": "main"}
    marks = [line for line in text.splitlines() if line.startswith("  ! ")]
    assert "  ! since: src/cache.py +2 commits, src/shim.py gone; ran on feat/cache, checkout on main" in marks
    # Turns that touched no file still say they ran on another branch.
    assert all(hit["stale"]["other_branch"] == "feat/cache" for hit in hits)

    # Off on request, and silent outside the checkout.
    text, hits = recalled("--no-stale")
    assert "  ! " not in text and all(hit["stale"] is None for hit in hits)
    monkeypatch.chdir(moved_on.parent)
    text, hits = recalled()
    assert "  ! " not in text and all(hit["stale"] is None for hit in hits)


def test_a_second_worktree_reads_its_own_branch(moved_on, monkeypatch):
    git(moved_on, "worktree", "add", "-q", "-b", "feat/cache", str(moved_on.parent / "wt"))
    monkeypatch.chdir(moved_on.parent / "wt")
    _, hits = recalled()
    assert edit_hit(hits)["stale"]["other_branch"] is None  # the session's branch is checked out here
    assert edit_hit(hits)["stale"]["changed"] == [{"path": "src/cache.py", "commits": 2}]


def test_nothing_is_claimed_when_git_cannot_answer(moved_on, monkeypatch):
    monkeypatch.chdir(moved_on)
    monkeypatch.setenv("PATH", str(moved_on / "no-git-here"))
    _, hits = recalled()
    assert all(hit["stale"] is None for hit in hits)


async def _mcp_recall(cwd: Path) -> str:
    server = StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=dict(os.environ),
                                   cwd=str(cwd))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("recall", {"query": "watermark legacy shim"})
            assert not result.is_error
            return "\n".join(part.text for part in result.content if part.type == "text")


@pytest.mark.slow  # an MCP server of its own (test_projects.py runs one in the default suite)
def test_the_mcp_recall_marks_hits_against_the_servers_checkout(moved_on):
    text = anyio.run(_mcp_recall, moved_on)
    assert "  ! since: src/cache.py +2 commits, src/shim.py gone; ran on feat/cache, checkout on main" in text
