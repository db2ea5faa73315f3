"""Projects by repository identity, and paths as agents write them: worktrees, clones
and moved checkouts of one repository are one project for --here, --workdir, --repo,
sessions and history; a path is found relative to the checkout, absolute here, or
absolute as another checkout recorded it, and never mixes another project's file of
the same name unless asked.  Real git checkouts; the CLI in process and the MCP
server over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from agent_helpers import funes
from checkouts import claude_session, git, new_checkout
from mcp import ClientSession, StdioServerParameters, stdio_client

MAIN, WORKTREE, CLONE, OTHER = (f"{n}0000000-1111-4222-8333-444455556666" for n in "abcd")


@pytest.fixture
def projects(isolated_env, tmp_path):
    """A repository with no remote, its second worktree and a clone at another path,
    a session in each, and a session of another repository; all touching README.md."""
    top = new_checkout(tmp_path / "proj", {"README.md": "a\n", "docs/guide.md": "a\n"})
    git(top, "worktree", "add", "-q", "-b", "feat/wt", str(tmp_path / "proj-wt"))
    git(tmp_path, "clone", "-q", str(top), str(tmp_path / "clone"))
    other = new_checkout(tmp_path / "other", {"README.md": "another project\n"}, date="2026-04-02T09:00:00Z")
    for session, folder, minute in ((MAIN, top, 0), (WORKTREE, tmp_path / "proj-wt", 1),
                                    (CLONE, tmp_path / "clone", 2), (OTHER, other, 3)):
        claude_session(isolated_env, session, folder, f"Readme rewrite {minute}: the install steps moved up.",
                       [str(folder / "README.md")], minute=minute,
                       branch="feat/wt" if session == WORKTREE else "main")
    indexed = funes("index", "--yes")
    assert indexed.code == 0, indexed.err
    return tmp_path


def listed(*args: str) -> set[str]:
    result = funes("sessions", "--json", *args)
    assert result.code == 0, result.err
    return {s["session_id"] for s in json.loads(result.out)}


def history(*args: str) -> dict:
    result = funes("history", "--json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_worktrees_and_clones_are_one_project(projects, monkeypatch):
    ours = {MAIN, WORKTREE, CLONE}
    monkeypatch.chdir(projects / "clone" / "docs")
    assert listed("--here") == listed("-H") == ours
    assert listed() == listed("--anywhere") == ours | {OTHER}
    hits = json.loads(funes("recall", "readme install steps", "--here", "--json", "--no-rerank").out)
    assert hits and {hit["session_id"] for hit in hits} <= ours
    # A checkout's top folder names its repository; another folder is a prefix as before.
    assert listed("--workdir", str(projects / "proj-wt")) == ours
    assert listed("--workdir", str(projects / "other")) == {OTHER}
    assert listed("--workdir", str(projects / "proj")) == ours
    # The repository without a remote is recorded by its root commit, which --repo takes.
    root = git(projects / "proj", "rev-list", "--max-parents=0", "HEAD").strip()
    assert listed("--repo", root[:10]) == ours
    # Outside any checkout, --here is this folder.
    monkeypatch.chdir(projects)
    assert listed("--here") == ours | {OTHER}


def test_turns_indexed_without_a_repository_are_found_by_the_worktrees_folders(projects, monkeypatch):
    import lance

    from funes.memory.location import local_memory

    # As a memory indexed before the root commit was recorded holds them.
    lance.dataset(local_memory().table_uri).update({"repo": "CAST(NULL AS STRING)"})
    monkeypatch.chdir(projects / "proj")
    assert listed("--here") == {MAIN, WORKTREE}
    monkeypatch.chdir(projects / "clone")
    assert listed("--here") == {CLONE}


def test_a_path_asked_inside_a_checkout_keeps_to_its_project(projects, monkeypatch):
    monkeypatch.chdir(projects / "proj-wt")
    ours = {MAIN, WORKTREE, CLONE}
    for asked in ("README.md", "./README.md", str(projects / "proj-wt" / "README.md"),
                  str(projects / "clone" / "README.md")):
        report = history(asked)
        assert {e["session_id"] for e in report["entries"]} == ours, asked
        assert {t["path"] for e in report["entries"] for t in e["touches"]} == {"README.md"}
        assert report["projects"] == []
    assert {e["session_id"] for e in history("README.md", "--anywhere")["entries"]} == ours | {OTHER}
    missing = funes("history", "docs/guide.md")  # touched by no session of this project
    assert missing.code == 1 and "(in this project, " in missing.err and "--anywhere" in missing.err

    # Outside a checkout every project's file is listed, and the answer names the projects.
    monkeypatch.chdir(projects)
    report = history("README.md")
    assert {e["session_id"] for e in report["entries"]} == ours | {OTHER} and len(report["projects"]) == 2
    assert funes("history", "README.md").out.splitlines()[-1].startswith("in 2 projects: ")


def test_a_path_as_another_checkout_recorded_it(projects, monkeypatch):
    # The checkout the main session ran in moves: its recorded paths exist nowhere here.
    recorded = str(projects / "proj" / "README.md")
    git(projects / "proj", "worktree", "remove", "--force", str(projects / "proj-wt"))
    (projects / "proj").rename(projects / "moved")
    monkeypatch.chdir(projects / "clone")
    assert {e["session_id"] for e in history(recorded)["entries"]} == {MAIN, WORKTREE, CLONE}
    # Outside a checkout: the sessions that ran where the path was recorded.
    monkeypatch.chdir(projects)
    assert {e["session_id"] for e in history(recorded)["entries"]} == {MAIN}
    assert funes("history", str(projects / "nowhere" / "README.md")).code == 1


async def _mcp(cwd: Path):
    server = StdioServerParameters(command=sys.executable, args=["-m", "funes.cli", "mcp"], env=dict(os.environ),
                                   cwd=str(cwd))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            here = await session.call_tool("sessions", {"here": True})
            everywhere = await session.call_tool("sessions", {})
            touched = await session.call_tool("history", {"path": "README.md"})
            recalled = await session.call_tool("recall", {"query": "readme install steps", "here": True, "k": 20})
            return tools, here, everywhere, touched, recalled


def _text(result) -> str:
    return "\n".join(part.text for part in result.content if part.type == "text")


def test_the_mcp_tools_take_here_and_keep_a_path_to_the_servers_project(projects):
    tools, here, everywhere, touched, recalled = anyio.run(_mcp, projects / "clone")
    for name in ("recall", "sessions", "history", "scan"):
        assert tools[name].input_schema["properties"]["here"]["anyOf"][0]["type"] == "boolean"
    assert _text(here).splitlines()[-1] == "3 session(s)"
    assert _text(everywhere).splitlines()[-1] == "4 session(s)"  # here is not the default
    assert OTHER[:8] not in _text(touched) and MAIN[:8] in _text(touched)
    # The worktree's session ran on its branch; the clone the server runs in is on main.
    hits = _text(recalled).split("\n---")
    assert any(WORKTREE[:8] in hit and "  ! ran on feat/wt, checkout on main" in hit for hit in hits)
    assert not any(MAIN[:8] in hit and "  ! " in hit for hit in hits)
