"""`funes exclude`: sessions on the list are in no byte of the memory, whichever way they
come (a folder, a repository from a real git checkout, a glob over the transcript path),
also after compaction, and the CLI edits one file a user can read."""

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from hub_helpers import everything_stored, run_cli, write_claude_session

# Each session's unmistakable words: none may reach a byte of the memory once excluded.
KEPT_WORDS = "The kept session settles on lantern-heron-2210 as the queue name."
FOLDER_WORDS = "The client folder session names marmalade-osprey-4471 as its bucket."
REPO_WORDS = "The repository session names quartz-walrus-8812 as its signing host."
GLOB_WORDS = "The private transcript names saffron-badger-3307 as its database."
EXCLUDED_WORDS = (FOLDER_WORDS, REPO_WORDS, GLOB_WORDS)
SESSIONS = {"kept": "11111111-0000-4000-8000-000000000001", "folder": "22222222-0000-4000-8000-000000000002",
            "repo": "33333333-0000-4000-8000-000000000003", "glob": "44444444-0000-4000-8000-000000000004"}


def checkout(folder: Path, remote: str) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    return folder


def write_sessions(root: Path) -> list[Path]:
    """Four Claude Code transcripts: one kept, and one for each kind of pattern."""
    repo = checkout(root / "src" / "sauce", "https://github.com/acme/secret-sauce.git")
    projects = root / "transcripts"
    return [
        write_claude_session(projects / "app" / f"{SESSIONS['kept']}.jsonl", SESSIONS["kept"],
                             ["Which queue?", KEPT_WORDS], cwd=str(root / "app")),
        write_claude_session(projects / "client" / f"{SESSIONS['folder']}.jsonl", SESSIONS["folder"],
                             ["Which bucket?", FOLDER_WORDS], cwd=str(root / "client-x" / "api")),
        write_claude_session(projects / "sauce" / f"{SESSIONS['repo']}.jsonl", SESSIONS["repo"],
                             ["Which host?", REPO_WORDS], cwd=str(repo)),
        write_claude_session(projects / "private-notes" / f"{SESSIONS['glob']}.jsonl", SESSIONS["glob"],
                             ["Which database?", GLOB_WORDS], cwd=str(root / "app")),
    ]


def exclude_all(root: Path) -> None:
    for pattern in (str(root / "client-x"), "ACME/secret-*", "*/private-notes/*"):
        assert run_cli("exclude", "add", pattern) == 0


def index(paths: list[Path]):
    from funes.discovery import discover
    from funes.embedding import IDENTITY
    from funes.indexing import index_units
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        return index_units(writer, [unit for path in paths for unit in discover(path)], workers=1)


def memory_dir() -> Path:
    from funes.config import memory_dir

    return memory_dir()


def assert_in_no_byte(folder: Path, words: tuple[str, ...]) -> None:
    """Not in the raw bytes of any file under ``folder``, nor in any value of its Lance files."""
    stored = everything_stored(folder)
    raw = b"".join(path.read_bytes() for path in folder.rglob("*") if path.is_file())
    for text in words:
        marker = next(word for word in text.split() if "-" in word)  # the one made-up name in it
        assert marker not in stored and marker.encode() not in raw, marker


def test_excluded_sessions_are_in_no_byte_of_the_memory_even_after_compaction(isolated_env, capsys):
    paths = write_sessions(isolated_env / "work")
    exclude_all(isolated_env / "work")
    report = index(paths)
    assert report.excluded == 3 and report.sessions == 1
    stored = everything_stored(memory_dir())
    assert "lantern-heron-2210" in stored
    assert_in_no_byte(memory_dir(), EXCLUDED_WORDS)

    from funes.embedding import IDENTITY
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim) as writer:
        writer.maintain(keep_versions_for=timedelta(0))
    assert_in_no_byte(memory_dir(), EXCLUDED_WORDS)
    assert index(paths).excluded == 3  # not recorded as indexed: looked at again, still kept out

    # Off the list, a session is indexed by the next run.
    capsys.readouterr()
    assert run_cli("exclude", "remove", "*/private-notes/*") == 0
    assert index(paths).sessions == 1
    assert "saffron-badger-3307" in everything_stored(memory_dir())


def test_exclude_add_forgets_what_the_memory_already_holds_when_told(isolated_env, capsys):
    root = isolated_env / "work"
    paths = write_sessions(root)
    index(paths)
    assert "marmalade-osprey-4471" in everything_stored(memory_dir())
    # Unattended without --forget: kept, and the way to forget it is named.
    assert run_cli("exclude", "add", str(root / "client-x")) == 0
    assert "--forget" in capsys.readouterr().err
    assert "marmalade-osprey-4471" in everything_stored(memory_dir())
    assert run_cli("exclude", "add", "acme/secret-sauce", "--forget") == 0
    assert "forgot" in capsys.readouterr().err
    assert_in_no_byte(memory_dir(), (FOLDER_WORDS, REPO_WORDS))
    assert "lantern-heron-2210" in everything_stored(memory_dir())


def test_the_list_is_one_commented_file_and_bad_patterns_are_one_line_errors(isolated_env, capsys, monkeypatch):
    from funes.errors import UsageError
    from funes.exclusion import exclusion_path

    monkeypatch.chdir(isolated_env)
    assert run_cli("exclude", "add", "./secret", "acme/*", "~/clients/*") == 0
    text = exclusion_path().read_text()
    assert text.startswith("#") and f"{isolated_env / 'secret'}\nacme/*\n~/clients/*\n" in text
    capsys.readouterr()
    assert run_cli("exclude", "list", "--json") == 0
    assert json.loads(capsys.readouterr().out) == [
        {"pattern": str(isolated_env / "secret"), "kind": "folder"}, {"pattern": "acme/*", "kind": "repo"},
        {"pattern": "~/clients/*", "kind": "glob"}]
    for args in (["add", "secret"], ["add", ""], ["remove", "never/listed"], ["frob"], ["list", "x"]):
        assert run_cli("exclude", *args) == 2
        err = capsys.readouterr().err
        assert err.startswith("funes: ") and err.count("\n") == 1 and "Traceback" not in err, err
    # A line that is no pattern stops indexing (and pushing) rather than letting everything through.
    exclusion_path().write_text(text + "not a pattern\n")
    assert run_cli("exclude", "list") == 2
    assert f"{exclusion_path()}:7: 'not a pattern'" in capsys.readouterr().err
    with pytest.raises(UsageError):
        index(write_sessions(isolated_env / "work"))


# ---------------------------------------------------------------- every other way in, and out


@pytest.mark.slow
@pytest.mark.usefixtures("hub_env")
def test_a_push_ships_no_byte_of_a_session_excluded_after_it_was_indexed(isolated_env, hub_server, capsys):
    from hub_helpers import everything_published, index_into_local_memory

    root = isolated_env / "work"
    index_into_local_memory(write_sessions(root))  # indexed and embedded before the list names them
    exclude_all(root)  # kept in the memory (not --forget): the push must leave them out
    assert "marmalade-osprey-4471" in everything_stored(memory_dir())
    repo_id = "test-user/exclude-push"
    assert run_cli("push", repo_id, "--yes") == 0, capsys.readouterr().err
    published = everything_published(hub_server, repo_id)
    assert "lantern-heron-2210" in published
    for text in EXCLUDED_WORDS:
        assert next(word for word in text.split() if "-" in word) not in published
    # A list that cannot be read ships nothing (fail-closed).
    from funes.exclusion import exclusion_path

    with exclusion_path().open("a") as out:
        out.write("not a pattern\n")
    assert run_cli("push", "test-user/exclude-push-broken", "--yes") == 2
    assert "not a pattern" in capsys.readouterr().err


@pytest.mark.slow
def test_the_hook_keeps_an_excluded_session_out(isolated_env, monkeypatch, capsys):
    """The per-turn hook as Claude Code runs it (its Stop payload on stdin), its worker detached."""
    import os

    from agent_helpers import wait_for
    from funes.wiring import Binding

    monkeypatch.setenv("FUNES_HOOK_IDLE_S", "0")
    root = isolated_env / "work"
    paths = write_sessions(root)
    exclude_all(root)
    for path in paths:
        payload = {"session_id": path.stem, "transcript_path": str(path), "cwd": str(root),
                   "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False}
        result = subprocess.run(Binding(None).hook_command("claude"), input=json.dumps(payload).encode(),
                                capture_output=True, timeout=30, env=os.environ.copy())
        assert result.returncode == 0 and result.stderr == b""
    log = memory_dir().parent / "logs" / "hooks.log"
    wait_for(lambda: log.exists() and "indexed" in log.read_text() and not any(
        (memory_dir().parent / "spool").glob("*.json")), timeout=120)
    wait_for(lambda: "lantern-heron-2210" in everything_stored(memory_dir()), timeout=60)
    assert_in_no_byte(memory_dir(), EXCLUDED_WORDS)
    # `funes index` over the same transcripts says what the list left out.
    assert run_cli("index", str(root / "transcripts")) == 0
    assert "left out 3 session(s) on the exclusion list" in capsys.readouterr().err
    assert_in_no_byte(memory_dir(), EXCLUDED_WORDS)


@pytest.mark.slow
def test_a_dagster_run_keeps_an_excluded_session_out(isolated_env, tmp_path):
    """The index chain materialised over a trace root, as a Dagster backfill runs it:
    the memory and the chain's own store (under the memory folder) hold none of it."""
    import dagster as dg

    from funes.pipelines.definitions import defs

    root = isolated_env / "work"
    paths = write_sessions(root)
    exclude_all(root)
    memory = tmp_path / "chain-memory"
    keys = sorted(f"claude_code--{path.stem}" for path in paths)
    config = {"resources": {"memory": {"config": {"memory": str(memory)}},
                            "chain_store": {"config": {"memory": str(memory)}},
                            "traces": {"config": {"roots": [str(root / "transcripts")]}}}}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sessions", keys)
        ordered = [key for key in instance.get_dynamic_partitions("sessions") if key in set(keys)]
        result = defs.resolve_job_def("index_sessions").execute_in_process(
            instance=instance, run_config=config, raise_on_error=False,
            tags={"dagster/asset_partition_range_start": ordered[0], "dagster/asset_partition_range_end": ordered[-1]})
    assert result.success
    assert "lantern-heron-2210" in everything_stored(memory)
    assert_in_no_byte(memory, EXCLUDED_WORDS)
