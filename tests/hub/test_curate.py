"""`funes curate`: a project memory receives only the sessions of its repository that
this host marked include, and nothing it has not reviewed."""

import json

import pytest

from hub_helpers import chunk, remote_ids, run_cli, write_memory

pytestmark = pytest.mark.usefixtures("hub_env")

REMOTE = "test-user/app-memory"


def session(session_id, turns, repo, **fields):
    return [chunk(session_id, turn, f"{session_id} says thing {turn}", repo=repo, **fields) for turn in range(turns)]


APP_1 = session("app-session-1", 3, "acme/app")
SUBAGENT = session("app-subagent", 1, "acme/app", is_subagent=True, parent_session_id="app-session-1")
APP_2 = session("app-session-2", 2, "acme/app")
OTHER = session("other-session", 2, "acme/other")


def ids(chunks):
    return {c.id for c in chunks}


@pytest.fixture
def repo_id(request):
    return "test-user/" + request.node.name


@pytest.fixture
def project_memory(isolated_env):
    write_memory([*APP_1, *SUBAGENT, *APP_2, *OTHER])


def push(repo_id, *flags, capsys):
    """Exit code, JSON report and stderr of `funes push` (after any earlier output)."""
    capsys.readouterr()
    code = run_cli("push", repo_id, "--json", *flags)
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out else None), captured.err


def test_a_project_memory_ships_only_the_included_sessions_of_its_repository(project_memory, hub_server, repo_id,
                                                                             capsys):
    assert run_cli("curate", repo_id, "acme/app", "--include", "app-session-1", "--exclude", "app-session-2") == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing == ["include  app-session-1  3 chunks", "exclude  app-session-2  2 chunks"]

    code, report, _ = push(repo_id, "--yes", capsys=capsys)
    assert code == 0 and report["pending_review"] == []
    # Sub-agent sessions follow their parent; other repositories never ship.
    assert remote_ids(hub_server, repo_id) == ids(APP_1) | ids(SUBAGENT)

    from huggingface_hub import hf_hub_download

    card = open(hf_hub_download(repo_id, "README.md", repo_type="dataset", endpoint=hub_server.endpoint)).read()
    assert "the project memory of `acme/app`" in card


def test_unreviewed_and_grown_sessions_stay_local(project_memory, hub_server, repo_id, capsys):
    assert run_cli("curate", repo_id, "acme/app") == 0  # off a terminal: a listing, nothing decided
    assert capsys.readouterr().out.splitlines() == ["pending  app-session-1  3 chunks",
                                                    "pending  app-session-2  2 chunks"]
    code, report, err = push(repo_id, "--yes", capsys=capsys)
    assert code == 0 and report["commit"] is None and report["pending_review"] == ["app-session-1", "app-session-2"]
    assert f"warning: 2 session(s) of acme/app await review: `funes curate hf://datasets/{repo_id} acme/app`" in err

    assert run_cli("curate", repo_id, "acme/app", "--include", "app-session-1") == 0
    code, report, _ = push(repo_id, "--yes", capsys=capsys)
    assert report["pushed"] == 4 and report["pending_review"] == ["app-session-2"]

    grown = chunk("app-session-1", 3, "a turn after the review", repo="acme/app")
    write_memory([grown])
    code, report, _ = push(repo_id, capsys=capsys)
    assert report["commit"] is None and report["pending_review"] == ["app-session-1", "app-session-2"]
    assert grown.id not in remote_ids(hub_server, repo_id)

    assert run_cli("curate", repo_id, "acme/app", "--include", "app-session-1") == 0
    code, report, _ = push(repo_id, capsys=capsys)
    assert report["pushed"] == 1 and grown.id in remote_ids(hub_server, repo_id)


def test_the_project_stamp_binds_every_host(project_memory, hub_server, repo_id, monkeypatch, tmp_path, capsys):
    assert run_cli("curate", repo_id, "acme/app", "--include", "app-session-1") == 0
    push(repo_id, "--yes", capsys=capsys)

    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "teammate"))  # no curation file on this host
    write_memory(session("teammate-session", 2, "acme/app"))
    code, report, _ = push(repo_id, "--yes", capsys=capsys)
    assert code == 0 and report["commit"] is None and report["pending_review"] == ["teammate-session"]
    assert remote_ids(hub_server, repo_id) == ids(APP_1) | ids(SUBAGENT)


def test_curate_refuses_unknown_sessions_and_a_second_project(project_memory, capsys):
    assert run_cli("curate", REMOTE, "acme/app", "--include", "no-such-session") == 2
    assert capsys.readouterr().err == "funes: 'no-such-session' names no session of this project in the local memory\n"
    assert run_cli("curate", REMOTE, "acme/app", "--include", "app-session") == 2  # ambiguous prefix
    assert run_cli("curate", REMOTE, "acme/app", "--include", "app-session-2") == 0
    capsys.readouterr()
    assert run_cli("curate", REMOTE, "acme/other") == 2
    assert capsys.readouterr().err == f"funes: hf://datasets/{REMOTE} is the project memory of acme/app, not acme/other\n"
    assert run_cli("curate", REMOTE, "not-a-repo") == 2


def test_a_review_on_a_terminal_asks_about_each_undecided_session(project_memory, monkeypatch, capsys):
    import typer

    from funes.cli import curate_cmd

    answers = iter(["i", "e"])
    monkeypatch.setattr(curate_cmd, "interactive", lambda: True)
    monkeypatch.setattr(typer, "prompt", lambda *args, **kwargs: next(answers))
    assert run_cli("curate", REMOTE, "acme/app") == 0
    out = capsys.readouterr().out
    assert "app-session-1 (claude_code, 3 chunks," in out and "app-session-1 says thing 0" in out
    assert out.splitlines()[-2:] == ["include  app-session-1  3 chunks", "exclude  app-session-2  2 chunks"]
