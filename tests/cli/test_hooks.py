"""The per-turn hook and its worker, with real payloads, transcripts and memory.

Each agent's hook command is run as its agent runs it (JSON on stdin), against a
copy of the fixture memory; a new turn appended to a transcript must become
recallable once the worker is done."""

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agent_helpers import funes, needs_cli, pi_harness, wait_for



@pytest.fixture(autouse=True)
def workers_exit_when_done(monkeypatch):
    """Workers normally wait minutes for the next turn; here they exit once the spool is empty."""
    monkeypatch.setenv("FUNES_HOOK_IDLE_S", "0")


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def token() -> str:
    return "zq" + uuid.uuid4().hex[:10]


def sentence(word: str) -> str:
    return f"We settled on {word} as the cache key prefix after the benchmark."


# ---------------------------------------------------------------- new turns, as each agent writes them
def claude_turn(home: Path, word: str, name: str = "claude_session.jsonl") -> dict:
    transcript = next((home / ".claude" / "projects").rglob(name))
    last = json.loads(transcript.read_text().splitlines()[-1])
    record = {key: last[key] for key in ("sessionId", "cwd", "version", "gitBranch", "userType") if key in last}
    record.update(type="assistant", uuid=str(uuid.uuid4()), parentUuid=last.get("uuid"), isSidechain=False,
                  timestamp=now(), message={"role": "assistant", "content": [{"type": "text", "text": sentence(word)}]})
    with transcript.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return {"session_id": transcript.stem, "transcript_path": str(transcript), "cwd": record.get("cwd", "/"),
            "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": sentence(word)}


def codex_turn(home: Path, word: str) -> dict:
    rollout = next((home / ".codex" / "sessions").rglob("rollout-*0001.jsonl"))
    item = {"timestamp": now(), "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": sentence(word)}]}}
    with rollout.open("a") as out:
        out.write(json.dumps(item) + "\n")
    return {"session_id": "019a0000-0000-7000-8000-0000000000ff", "turn_id": "turn-7", "transcript_path": str(rollout),
            "cwd": "/home/u/proj", "model": "gpt-5-codex", "permission_mode": "default", "stop_hook_active": False,
            "last_assistant_message": sentence(word), "hook_event_name": "Stop"}


def hermes_turn(home: Path, word: str) -> dict:
    with sqlite3.connect(home / ".hermes" / "state.db") as db:
        db.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                   ("s_main", "assistant", sentence(word), time.time()))
    history = [{"role": "user", "content": "x" * 2000}] * 300  # Hermes sends the whole conversation
    return {"hook_event_name": "post_llm_call", "tool_name": None, "tool_input": None, "session_id": "s_main",
            "cwd": "/home/dev/proj", "profile": "default",
            "extra": {"conversation_history": history, "model": "anthropic/claude-sonnet-4.5"}}


def pi_turn(home: Path, word: str) -> Path:
    session = next((home / ".pi" / "agent" / "sessions").rglob("*_pi-session.jsonl"))
    entry = {"type": "message", "id": uuid.uuid4().hex[:8], "parentId": None, "timestamp": now(),
             "message": {"role": "assistant", "content": [{"type": "text", "text": sentence(word)}],
                         "timestamp": int(time.time() * 1000)}}
    with session.open("a") as out:
        out.write(json.dumps(entry) + "\n")
    return session


def opencode_turn(home: Path, word: str) -> dict:
    from trace_helpers import fixture_module

    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    if not db.exists():
        fixture_module("agents/opencode/make_opencode_db.py").build(db)
    message, created = "msg_z" + uuid.uuid4().hex[:8], int(time.time() * 1000)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO message VALUES (?, 'ses_0main', ?, ?, ?)", (message, created, created, json.dumps(
            {"role": "assistant", "time": {"created": created, "completed": created}, "parentID": "msg_a08"})))
        conn.execute("INSERT INTO part VALUES (?, ?, 'ses_0main', ?, ?, ?)", ("prt" + message[3:], message, created,
                     created, json.dumps({"type": "text", "text": sentence(word)})))
    return {"session_id": "ses_0main", "hook_event_name": "session.idle", "cwd": "/home/dev/widget"}


def goose_turn(home: Path, word: str) -> dict:
    from trace_helpers import fixture_module

    db = home / ".local" / "share" / "goose" / "sessions" / "sessions.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    if not db.exists():
        fixture_module("agents/goose/make_goose_db.py").build(db)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp) "
                     "VALUES (?, '20260528_1', 'assistant', ?, ?)",
                     ("msg_" + uuid.uuid4().hex[:8], json.dumps([{"type": "text", "text": sentence(word)}]),
                      int(time.time())))
    return {"event": "Stop", "session_id": "20260528_1", "working_dir": "/home/dev/api",
            "last_assistant_message": sentence(word)}


def cursor_turn(home: Path, word: str) -> dict:
    """An older Cursor build: the payload names the conversation, not its transcript."""
    import shutil

    from trace_helpers import AGENT_FIXTURES

    projects = home / ".cursor" / "projects"
    if not projects.exists():
        shutil.copytree(AGENT_FIXTURES / "cursor" / "projects", projects)
    conversation = "0c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f"
    with next(projects.rglob(f"{conversation}.jsonl")).open("a") as out:
        out.write(json.dumps({"role": "assistant", "message": {"content": [{"type": "text", "text": sentence(word)}]}})
                  + "\n")
    return {"hook_event_name": "stop", "conversation_id": conversation, "generation_id": uuid.uuid4().hex,
            "status": "completed", "workspace_roots": ["/home/dev/notes"]}


def grok_turn(home: Path, word: str) -> dict:
    """Grok CLI's Stop payload names the session by id; the turn is a row of ~/.grok/grok.db."""
    from trace_helpers import fixture_module

    builder = fixture_module("agents/grok/make_grok_db.py")
    db = home / ".grok" / "grok.db"
    if not db.exists():
        builder.build(db)
    with sqlite3.connect(db) as conn:
        seq = conn.execute("SELECT MAX(seq) + 1 FROM messages WHERE session_id = ?", (builder.MAIN,)).fetchone()[0]
        conn.execute("INSERT INTO messages VALUES (?, ?, 'assistant', ?, ?)", (builder.MAIN, seq, json.dumps(
            {"role": "assistant", "content": [{"type": "text", "text": sentence(word)}]}), builder.at(59)))
    return {"hook_event_name": "Stop", "session_id": builder.MAIN, "cwd": "/home/dev/kiln"}


TURNS = {"claude": claude_turn, "codex": codex_turn, "hermes": hermes_turn, "opencode": opencode_turn,
         "goose": goose_turn, "cursor": cursor_turn, "grok": grok_turn}


# ---------------------------------------------------------------- running hooks
def run_hook(agent: str, payload: object, *options: str, env: dict | None = None,
             cwd: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """The hook exactly as `funes add` installs it."""
    from funes.wiring import Binding

    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.perf_counter()
    result = subprocess.run([*Binding(None).hook_command(agent), *options], input=data, capture_output=True,
                            timeout=30, env=env or os.environ.copy(), cwd=cwd)
    return time.perf_counter() - started, result


def funes_home() -> Path:
    return Path(os.environ["FUNES_HOME"])


def spooled() -> list[Path]:
    return sorted((funes_home() / "spool").glob("*.json"))


def worker_running() -> bool:
    from funes.hook import claim_spool, spool_dir

    lock = claim_spool(spool_dir())
    if lock is not None:
        os.close(lock)
    return lock is None


def settled() -> bool:
    return not spooled() and not worker_running()


def hook_log() -> str:
    path = funes_home() / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


def recalled(word: str) -> bool:
    from funes.retrieval.access import open_memory
    from funes.retrieval.search import Recaller

    result = Recaller.open(open_memory(None), rerank=False).recall(word, k=3, neighbors=0)
    return any(word in hit.text for hit in result.hits)


def stored_ids() -> list[str]:
    import lance

    return lance.dataset(str(funes_home() / "memory" / "chunks.lance")).to_table(columns=["id"]).column("id").to_pylist()


# ---------------------------------------------------------------- tests
@pytest.mark.slow
@pytest.mark.parametrize("agent", sorted(TURNS))
def test_the_hook_returns_at_once_and_the_turn_becomes_recallable(memory_home, agent):
    word = token()
    payload = TURNS[agent](memory_home, word)
    env = {**os.environ, "HERMES_HOME": str(memory_home / ".hermes")} if agent == "hermes" else None
    for _ in range(3):  # a burst of turns of one session: each hook hands over and returns
        _, result = run_hook(agent, payload, env=env)
        assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
        # Returned while the detached worker still holds the spool: the hook never waits
        # for indexing (how fast it returns is measured in benchmarks/hooks.py, not here).
        assert worker_running() or not spooled()
    wait_for(settled, timeout=120)
    assert recalled(word), hook_log()
    assert " ERROR " not in hook_log() and " WARNING " not in hook_log()
    assert len(stored_ids()) == len(set(stored_ids()))


@needs_cli("pi")
def test_the_pi_extension_indexes_each_prompt(memory_home):
    assert funes("add", "pi", "--yes").code == 0
    word = token()
    session = pi_turn(memory_home, word)
    handled = pi_harness({"action": "turn", "session_file": str(session), "session_id": "pi-session"},
                         cwd=memory_home)
    assert handled["handled"] == 1
    wait_for(lambda: bool(spooled()) or "indexed" in hook_log(), timeout=30)
    wait_for(settled, timeout=120)
    assert recalled(word), hook_log()


@needs_cli("pi")
def test_the_pi_extension_bridges_the_recall_tools(memory_home):
    assert funes("add", "pi", "--yes").code == 0
    calls = [{"tool": "recall", "params": {"query": "flaky test_parse", "k": 2, "harness": "hermes"}},
             {"tool": "get", "params": {"session_id": "s_main", "turn_uuid": "2", "window": 1}},
             {"tool": "get", "params": {"session_id": "nope", "turn_uuid": "x"}},
             {"tool": "status"}]
    found, opened, missing, status = pi_harness({"action": "call", "calls": calls}, cwd=memory_home)["results"]
    assert "→ get s_main " in found["text"] and "flaky" in found["text"]
    assert "The test_parse test is flaky, why?" in opened["text"]
    assert "not found" in missing["error"]
    assert "hermes" in status["text"]


@pytest.mark.slow
def test_eight_hooks_at_once_leave_one_consistent_memory(memory_home):
    before = set(stored_ids())
    words = [token() for _ in range(3)]
    payloads = [claude_turn(memory_home, words[0]), codex_turn(memory_home, words[1]),
                claude_turn(memory_home, words[2], name="as_claude_small.jsonl")]
    results = []

    def fire(index: int) -> None:
        results.append(run_hook(["claude", "codex", "claude"][index % 3], payloads[index % 3]))

    threads = [threading.Thread(target=fire, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result.returncode == 0 for _, result in results)
    wait_for(settled, timeout=180)
    ids = stored_ids()
    assert len(ids) == len(set(ids))
    assert before < set(ids)
    assert all(recalled(word) for word in words), hook_log()
    indexed_runs = hook_log().count("indexed ")
    assert 1 <= indexed_runs < 8  # coalesced: the burst did not index eight times
    # Everything is in: another hook finds nothing new.
    run_hook("claude", payloads[0])
    wait_for(settled, timeout=60)
    assert sorted(stored_ids()) == sorted(ids)


@pytest.mark.slow
def test_a_waiting_worker_takes_the_next_turn_warm(memory_home, monkeypatch):
    """The worker that indexed a turn waits, models loaded, and the next turn's hook
    hands it over instead of starting another.  Its idle time outlasts the longest a
    hook may take (run_hook's 30 s bound), so no host is too slow to reach it."""
    monkeypatch.setenv("FUNES_HOOK_IDLE_S", "45")
    first, second = token(), token()
    run_hook("claude", claude_turn(memory_home, first))
    wait_for(lambda: not spooled() and "indexed" in hook_log(), timeout=120)
    assert worker_running()  # done, and waiting for the next turn
    run_hook("claude", claude_turn(memory_home, second))
    wait_for(lambda: not spooled() and hook_log().count("indexed") == 2, timeout=60)
    assert len(set(re.findall(r"worker\[(\d+)\] INFO indexed", hook_log()))) == 1  # the same process
    wait_for(lambda: not worker_running(), timeout=120)  # and it leaves once idle
    assert recalled(first) and recalled(second)


@pytest.mark.slow
def test_a_turn_handed_over_while_another_process_writes_lands_once_it_is_free(memory_home):
    """`funes index` (here: the same writer, held open by the test) has the memory's
    lock: the worker waits for it instead of leaving the turns for a later hook,
    takes the turns spooled meanwhile too, and indexes them once the lock is free."""
    from funes.embedding import IDENTITY
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    first, second = token(), token()
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim):
        run_hook("claude", claude_turn(memory_home, first))
        wait_for(lambda: "waiting for it to finish" in hook_log(), timeout=60)
        run_hook("codex", codex_turn(memory_home, second))  # finds the waiting worker: starts none
        wait_for(lambda: len(spooled()) == 2, timeout=30)
        time.sleep(1)
        assert worker_running() and len(spooled()) == 2 and "indexed" not in hook_log()
    # No further hook: the waiting worker indexes both turns once the writer is done.
    wait_for(lambda: not spooled(), timeout=120)
    for word in (first, second):
        result = funes("recall", word, "--no-rerank", "-k", "3")
        assert result.code == 0 and word in result.out, hook_log()
    wait_for(lambda: not worker_running(), timeout=60)
    log = hook_log()
    assert len(set(re.findall(r"worker\[(\d+)\]", log))) == 1, log  # one worker did it all
    assert "terminate called" not in log and "Traceback" not in log and " ERROR " not in log, log


def test_a_memory_busy_past_the_bound_leaves_its_requests_spooled(memory_home, monkeypatch):
    """Only a writer that holds the lock for WRITER_WAIT_S makes the worker give up:
    the requests stay for the next worker, and nothing was loaded meanwhile."""
    from funes.cli import hook_worker
    from funes.embedding import IDENTITY
    from funes.hook import request_from, spool
    from funes.memory.location import local_memory
    from funes.memory.writer import MemoryWriter

    monkeypatch.setattr(hook_worker, "WRITER_WAIT_S", 1.0)
    spool(request_from(["claude"], json.dumps(claude_turn(memory_home, token())).encode()))
    worker = hook_worker.Worker(funes_home() / "spool")
    with MemoryWriter.open(local_memory(), IDENTITY.to_metadata(), dim=IDENTITY.dim):
        assert worker.drain() is False
    assert len(spooled()) == 1 and worker._embedder is None and worker._warming is None


def test_the_hook_fails_open_and_logs(memory_home, tmp_path):
    for payload in (b"not json at all", b"[1, 2]", b"", json.dumps({"transcript_path": "/nope.jsonl"}).encode()):
        _, result = run_hook("claude", payload)
        assert result.returncode == 0 and result.stdout == b""
    wait_for(settled, timeout=60)
    assert "no transcript at /nope.jsonl" in hook_log() or "names no transcript_path" in hook_log()
    # A FUNES_HOME it cannot write: still exit 0 at once, and, with no log to write
    # either, one line on stderr that says what and where.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    _, result = run_hook("codex", {"transcript_path": "/x"}, env={**os.environ, "FUNES_HOME": str(blocked)})
    assert result.returncode == 0 and result.stdout == b""
    assert result.stderr.decode() == f"funes: cannot spool the turn in {blocked / 'spool'}: Not a directory\n"


def test_a_hook_inside_a_process_a_hook_started_does_nothing(memory_home):
    payload = claude_turn(memory_home, token())
    _, result = run_hook("claude", payload, env={**os.environ, "FUNES_HOOK": "1"})
    assert result.returncode == 0 and not spooled() and not (funes_home() / "logs" / "hooks.log").exists()


def test_the_worker_is_started_detached_holding_the_spool(monkeypatch, isolated_env):
    import funes.hook as hook

    started = {}

    class Recorder:
        def __init__(self, argv, **options):
            started.update(options, argv=argv)

    monkeypatch.setattr(subprocess, "Popen", Recorder)
    os.makedirs(hook.spool_dir())
    lock = hook.claim_spool(hook.spool_dir())
    hook.start_worker(lock)
    assert started["argv"] == [sys.executable, "-m", "funes.cli.hook_worker"]
    assert started["start_new_session"] is True and started["close_fds"] is True
    assert started["stdin"] == subprocess.DEVNULL and started["stdout"] is not subprocess.PIPE
    assert started["env"]["FUNES_HOOK"] == "1"
    assert started["pass_fds"] == (lock,) and started["env"]["FUNES_WORKER_LOCK_FD"] == str(lock)
    assert hook.claim_spool(hook.spool_dir()) is None  # held: the other hooks of a burst start no worker
    os.close(lock)


def test_installed_hook_commands_are_the_hook(isolated_env):
    """What `funes add` writes is exactly this module, with the absolute interpreter."""
    from funes import hook

    assert funes("add", "claude", "--yes").code == 0
    settings = json.loads((isolated_env / ".claude" / "settings.json").read_text())
    argv = shlex.split(settings["hooks"]["Stop"][0]["hooks"][0]["command"])
    assert argv == [sys.executable, "-I", "-S", str(Path(hook.__file__).resolve()), "claude"]
    assert Path(argv[0]).is_absolute()


def test_an_earlier_hook_command_is_replaced_in_place_or_removed(isolated_env):
    """Installs from before the script form (`-m funes.hook`) are upgraded by `funes add`, not doubled,
    and taken out by `funes remove`."""
    from funes.wiring import Binding

    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    earlier = shlex.join([sys.executable, "-m", "funes.hook", "claude"])
    users = {"type": "command", "command": "notify-send done"}
    original = {"hooks": {"Stop": [{"hooks": [users]}, {"hooks": [{"type": "command", "command": earlier, "timeout": 15}]}]}}
    settings.write_text(json.dumps(original, indent=2))
    assert funes("add", "claude", "--yes").code == 0
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert [handler["command"] for group in stop for handler in group["hooks"]] == \
        ["notify-send done", Binding(None).hook_line("claude")]
    settings.write_text(json.dumps(original, indent=2))
    assert funes("remove", "claude").code == 0
    assert json.loads(settings.read_text())["hooks"]["Stop"] == [{"hooks": [users]}]


@pytest.mark.slow
def test_the_hook_imports_nothing_from_the_agents_project(memory_home, tmp_path):
    """Agents run hooks in the user's project: a module there named like one the hook
    imports must not run (`-I`), and the hook needs no site-packages (`-S`)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("json", "_json", "fcntl", "funes"):
        (project / f"{name}.py").write_text("raise SystemExit('imported from the project')\n")
    _, result = run_hook("claude", claude_turn(memory_home, token()), cwd=project)
    assert result.returncode == 0 and result.stderr == b"" and "failed open" not in hook_log()
    wait_for(settled, timeout=120)
    assert "indexed 1 of 1" in hook_log()


def test_the_hook_reads_and_writes_json_as_the_json_module_does_without_importing_it():
    """The hook parses payloads with json's C scanner so that it need not import
    ``json`` (and ``re`` with it): what it reads and writes must be json's."""
    import funes.hook as hook

    payloads = [b'{"session_id": "s", "transcript_path": "/t/\\u00e9.jsonl", "n": 1.5e3, "big": 1e400, "x": NaN,'
                b' "ok": true, "none": null, "list": ["a", 2], "nested": {"rootSessionId": "r"}}',
                b'  \n{"a": "\\ud800"}\r\n', "\ufeff{\"é\": [\"\u2028\"]}".encode(), b"[1, 2]", b'"text"']
    for payload in payloads:
        assert repr(hook._loads(payload)) == repr(json.loads(payload))
    for bad in (b'{"a":', b"nope", b"{} {}", b"\xff\xfe{", b"   "):
        with pytest.raises(ValueError):
            json.loads(bad)
        with pytest.raises(ValueError):
            hook._loads(bad)
    request = hook.request_from(["claude", "--memory", "m"], payloads[0])
    assert hook._dumps(request) == json.dumps(request)
    imported = subprocess.run([sys.executable, "-I", "-S", "-c",
                               f"import sys; sys.path.insert(0, {str(Path(hook.__file__).parent)!r}); import hook; "
                               "print(sorted(m for m in ('json', 're', 'pathlib') if m in sys.modules))"],
                              capture_output=True, text=True, check=True)
    assert imported.stdout == "[]\n"


def test_the_hook_finds_the_same_home_as_the_rest_of_funes(monkeypatch, tmp_path):
    from funes import config, hook

    for value in (None, "~/elsewhere", str(tmp_path / "funes")):
        if value is None:
            monkeypatch.delenv("FUNES_HOME", raising=False)
        else:
            monkeypatch.setenv("FUNES_HOME", value)
        assert hook.funes_home() == str(config.funes_home())
        assert hook.logs_dir() == str(config.logs_dir())


def test_publish_requests_coalesce_and_call_push(isolated_env, monkeypatch):
    from funes.cli import hook_worker
    from funes.hook import request_from, spool

    pushed = []
    fake = type(sys)("funes.hub.push")
    fake.push = lambda remote, **options: pushed.append((remote, options))
    monkeypatch.setitem(sys.modules, "funes.hub.push", fake)
    for event in ("SessionEnd", "SessionStart"):
        spool(request_from(["claude", "--publish", "acme/kb"], json.dumps({"hook_event_name": event}).encode()))
    assert hook_worker.Worker(funes_home() / "spool").drain()
    assert pushed == [("acme/kb", {"assume_yes": True})]
    assert not spooled()


def test_publish_without_a_push_module_says_so(isolated_env, monkeypatch, caplog):
    from funes.cli import hook_worker

    monkeypatch.setitem(sys.modules, "funes.hub.push", None)  # an import of it fails
    with caplog.at_level("WARNING", logger="funes.hook"):
        hook_worker.publish("acme/kb")
    assert "push not available" in caplog.text
