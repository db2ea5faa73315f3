"""The agent contract: the registry, the rule that only an agent's own folder names
it, `funes status` / `funes add` listing the agents on this machine, and a
third-party agent shipped as its own package (built and pip-installed here) that
funes indexes, recalls and wires like a built-in one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import funes.discovery as discovery
from agent_helpers import funes, snapshot, write
from funes.agents import agent_named, all_agents, canonical_harness, find_agent
from funes.agents.registry import is_builtin
from funes.errors import UsageError
from funes.wiring import hook_script
from trace_helpers import copy_fixture
from paths import ROOT

BUILTIN = {
    "aider": "aider",
    "amp": "amp",
    "auggie": "auggie",
    "claude": "claude_code",
    "cline": "cline",
    "codebuff": "codebuff",
    "codex": "codex",
    "continuedev": "continue_dev",
    "copilot": "copilot_cli",
    "crush": "crush",
    "cursor": "cursor",
    "droid": "factory_droid",
    "forge": "forge",
    "gemini": "gemini_cli",
    "goose": "goose",
    "grok": "grok_cli",
    "hermes": "hermes",
    "kilo": "kilo_code",
    "kimi": "kimi_cli",
    "kiro": "kiro_cli",
    "openclaw": "openclaw",
    "opencode": "opencode",
    "openhands": "openhands",
    "parquet": "parquet",
    "pi": "pi",
    "qwen": "qwen_code",
    "roo": "roo_code",
    "vibe": "mistral_vibe",
    "zed": "zed",
}
READ_BY_PATH_ONLY = {"parquet"}  # not swept by a bare `funes index`, not wired
READ_ONLY = {"aider", "codebuff"}  # swept, not wired
SWEPT = [name for name in BUILTIN if name not in READ_BY_PATH_ONLY]  # in folder order
WIRED = [name for name in SWEPT if name not in READ_ONLY]


def test_the_registry_holds_the_builtin_agents_by_folder():
    agents = all_agents()
    assert {agent.name: agent.harness for agent in agents if is_builtin(agent)} == BUILTIN
    folders = {path.parent.name for path in (ROOT / "funes" / "agents").glob("*/__init__.py")}
    assert folders == set(BUILTIN)
    for agent in agents:
        assert find_agent(agent.name) is find_agent(agent.harness) is agent
    assert find_agent("Claude-Code") is find_agent("CLAUDE") is agent_named("claude_code")
    assert canonical_harness("claude") == "claude_code" and canonical_harness("vim") is None
    with pytest.raises(UsageError, match=f"unknown agent 'vim': expected one of {', '.join(BUILTIN)}$"):
        agent_named("vim")
    assert [agent.name for agent in agents if agent.swept] == SWEPT
    assert {agent.name for agent in agents if agent.wiring() is not None} == set(WIRED)
    assert {agent.name for agent in agents if agent.ask_command} == {"claude", "codex", "pi"}


def test_only_an_agents_own_folder_names_it():
    """Adding an agent touches one place: no module outside funes/agents/<name>/
    mentions a built-in agent by name, stored harness, label, alias or home variable."""
    words = set()
    for agent in all_agents():
        if is_builtin(agent):
            words.update({agent.name, agent.harness, *agent.aliases, *([agent.home_env] if agent.home_env else [])})
            if " " not in agent.label:
                words.add(agent.label)
    # An attribute or keyword argument of the same name is someone else's (Dagster's sensor cursor).
    pattern = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(sorted(map(re.escape, words))) + r")(?![A-Za-z0-9_]|=(?!=))",
                         re.IGNORECASE)
    own = {ROOT / "funes" / "agents" / name for name in BUILTIN}
    offenders = []
    for folder in ("funes", "cli", "retrieval", "assets", "pipelines"):
        for path in (ROOT / folder).rglob("*.py"):
            if any(path.is_relative_to(mine) for mine in own):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_a_path_no_agent_recognises_is_a_usage_error(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a transcript\n")
    with pytest.raises(UsageError, match="cannot tell which agent wrote .*notes.txt: name it with --harness"):
        discovery.discover(notes)
    result = funes("index", str(notes))
    assert result.code == 2 and result.err.startswith("funes: cannot tell which agent wrote")


# ---------------------------------------------------------------------------------------- agents on this machine
@pytest.mark.slow
def test_status_lists_agents_found_wired_or_not_and_add_lists_what_can_be_added(memory_home):
    # The built memory holds Claude, Codex, pi and Hermes sessions; one more Claude session
    # lands on disk unindexed, and only Codex is wired.
    copy_fixture("as_claude_subagent/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl", memory_home / ".claude" /
                 "projects" / "-new")
    assert funes("add", "codex", "--yes").code == 0
    result = funes("status", "--json")
    assert result.code == 0, result.err
    agents = {agent["name"]: agent for agent in json.loads(result.out)["agents"]}
    assert set(agents) == set(SWEPT)
    claude = agents["claude"]
    assert (claude["found"], claude["sessions_on_disk"], claude["indexed_sessions"], claude["wired"]) == \
        (True, 5, 4, False)
    assert claude["roots"] == [str(memory_home / ".claude" / "projects")] and claude["label"] == "Claude Code"
    assert (agents["codex"]["sessions_on_disk"], agents["codex"]["wired"]) == (2, True)
    assert (agents["hermes"]["sessions_on_disk"], agents["hermes"]["indexed_sessions"]) == (5, 5)
    human = funes("status").out
    assert "agent       Claude Code (claude): 5 session(s) on disk, 4 indexed, not wired (funes add claude)" in human
    assert "agent       Codex (codex): 2 session(s) on disk, 2 indexed, wired" in human

    listing = funes("add")
    assert listing.code == 0, listing.err
    lines = listing.out.splitlines()
    assert lines[0].startswith("Agents funes can add")
    # One column of names as wide as the longest, so spacing is not asserted.
    assert len({line.index(line.split()[1]) for line in lines[1:]}) == 1
    words = [" ".join(line.split()) for line in lines]
    assert "claude Claude Code: 5 session(s) on this machine, not wired" in words
    assert "codex Codex: 2 session(s) on this machine, wired" in words
    assert not any("parquet" in line for line in lines)
    refused = funes("add", "parquet")
    assert refused.code == 2 and "funes cannot wire agent-traces Parquet" in refused.err
    unknown = funes("remove", "vim")
    assert unknown.code == 2
    assert unknown.err == f"funes: unknown agent 'vim': expected one of {', '.join(WIRED)}\n"


def test_an_agent_not_on_this_machine_is_listed_as_not_found(isolated_env):
    listing = funes("add")
    assert "hermes Hermes: not found on this machine, not wired" in [" ".join(line.split())
                                                                      for line in listing.out.splitlines()]


# ---------------------------------------------------------------------------------------- a third-party agent
TOY = '''
    """A toy agent for funes's plugin test: JSON Lines chats under $TOY_HOME/chats."""

    from __future__ import annotations

    from funes.agents import Agent
    from funes.traces.common import (TurnCollector, file_unit, finish_session, normalize_ts, record_call,
                                     tool_input_text, walk_files, workdir_facet)
    from funes.traces.jsonl import each_record
    from funes.traces.model import Block, Session
    from funes.wiring import SERVER_NAME, Wiring
    from funes.wiring.changes import document_change, read_text
    from funes.wiring.json_text import JsonText

    SUFFIX = ".chat.jsonl"


    class Toy(Agent):
        name = "toy"
        harness = "toy_agent"
        label = "Toy Agent"
        aliases = ("toy-agent",)
        home_env = "TOY_HOME"
        home_default = ".toy"

        def roots(self, env=None):
            return [self.home(env) / "chats"]

        def discover(self, root):
            for path in walk_files(root, lambda name: name.endswith(SUFFIX)):
                unit = file_unit(self.harness, path, path.name.removesuffix(SUFFIX))
                if unit is not None:
                    yield unit

        def parse(self, unit):
            session = Session(self.harness, unit.session_id, str(unit.path), "", "")
            turns = TurnCollector(session)

            def handle(index, record):
                if record.get("kind") == "meta":
                    session.cwd = record["cwd"]
                    return
                blocks = [Block("text", record.get("text", ""))]
                if "run" in record:
                    arguments = {"command": record["run"]}
                    blocks.append(record_call(Block("tool_use", tool_input_text(arguments), "sh"), arguments,
                                              shell=True))
                turn_id = turns.claim(record.get("id"), f"{unit.session_id}:{index}")
                turns.add(turn_id, turns.last_uuid, record.get("role", "user"), normalize_ts(record.get("at")), blocks)

            each_record(unit.path, session.warnings, handle)
            session.workdir = workdir_facet(session.cwd, "toy")
            return finish_session(session)

        def claims_location(self, path):
            return 3 if path.name.endswith(SUFFIX) else super().claims_location(path)

        def wiring(self):
            return ToyWiring(self)


    class ToyWiring(Wiring):
        def _settings(self):
            path = self.agent.home() / "settings.json"
            return JsonText(path, read_text(path))

        def plan_add(self, binding):
            settings = self._settings()
            settings.set(("mcp", SERVER_NAME), {"command": binding.mcp_command(),
                                                "after_turn": binding.hook_command(self.agent.name)})
            return [document_change(settings, f"MCP server {SERVER_NAME} and its turn hook")]

        def plan_remove(self):
            settings = self._settings()
            settings.delete(("mcp", SERVER_NAME))
            return [document_change(settings, f"MCP server {SERVER_NAME}")]


    AGENT = Toy()
'''

PROJECT = '''
    [build-system]
    requires = ["setuptools"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "{name}"
    version = "0.1.0"

    [project.entry-points."funes.agents"]
    {entry} = "{module}:AGENT"

    [tool.setuptools]
    py-modules = ["{module}"]
'''


def build_package(folder: Path, name: str, entry: str, module: str, source: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(textwrap.dedent(PROJECT.format(name=name, entry=entry, module=module)))
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    return folder


def install_packages(site: Path, packages: list[Path], monkeypatch) -> Iterator[Path]:
    """``packages`` pip-installed into ``site``, a folder on sys.path (and on the
    path of the processes this test starts) for one test; the registry is reloaded
    around it."""
    for package in packages:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(site), str(package)], check=True, capture_output=True)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    all_agents.cache_clear()
    yield site
    all_agents.cache_clear()
    modules = {path.stem for path in site.glob("*.py")}
    for module in [name for name in sys.modules if name.split(".")[0] in modules]:
        del sys.modules[module]


@pytest.fixture
def installed_plugins(tmp_path, monkeypatch):
    """The toy agent and a broken one."""
    yield from install_packages(tmp_path / "site", [
        build_package(tmp_path / "toy", "funes-agent-toy", "toy", "funes_agent_toy", TOY),
        build_package(tmp_path / "broken", "funes-agent-broken", "broken", "funes_agent_broken",
                      'raise ImportError("needs libtoy, which is not installed")\n')], monkeypatch)


@pytest.mark.slow
def test_a_third_party_agent_package_is_indexed_recalled_and_wired(installed_plugins, isolated_env, monkeypatch):
    home = isolated_env / "toy-home"
    monkeypatch.setenv("TOY_HOME", str(home))
    chat = write(home / "chats" / "c1.chat.jsonl", "".join(json.dumps(record) + "\n" for record in [
        {"kind": "meta", "cwd": "/work/toy"},
        {"id": "t1", "role": "user", "at": "2026-03-01T10:00:00Z", "text": "why does the zebrafish cache miss?"},
        {"id": "t2", "role": "assistant", "at": "2026-03-01T10:00:05Z",
         "text": "The zebrafish cache key drops the locale.", "run": "pytest -k zebrafish"},
    ]))

    indexed = funes("index", "--yes")
    assert indexed.code == 0, indexed.err
    warnings = [line for line in indexed.err.splitlines() if line.startswith("funes: warning: agent plugin")]
    assert warnings == ["funes: warning: agent plugin 'broken' (funes_agent_broken:AGENT) could not be loaded: "
                        "ImportError: needs libtoy, which is not installed"]
    assert "indexed 1 of 1 session(s): 2 turns" in indexed.err

    found = funes("recall", "zebrafish cache key", "--harness", "toy-agent", "--no-rerank", "--json")
    assert found.code == 0, found.err
    hits = json.loads(found.out)
    assert hits and {(hit["harness"], hit["session_id"], hit["workdir"]) for hit in hits} == \
        {("toy_agent", "c1", "-work-toy")}
    assert "The zebrafish cache key drops the locale." in {hit["text"] for hit in hits}
    assert discovery.parse_unit(discovery.discover(chat)[0]).turns[1].blocks[1].command == "pytest -k zebrafish"

    status = json.loads(funes("status", "--json").out)
    [toy] = [agent for agent in status["agents"] if agent["name"] == "toy"]
    assert (toy["label"], toy["found"], toy["sessions_on_disk"], toy["indexed_sessions"], toy["wired"]) == \
        ("Toy Agent", True, 1, 1, False)
    assert status["harnesses"]["toy_agent"]["sessions"] == 1
    assert "toy Toy Agent: 1 session(s) on this machine, not wired" in [" ".join(line.split())
                                                                       for line in funes("add").out.splitlines()]

    before = snapshot(isolated_env)
    added = funes("add", "toy", "--yes")
    assert added.code == 0, added.err
    settings = json.loads((home / "settings.json").read_text())
    assert settings["mcp"]["funes"]["after_turn"] == [sys.executable, "-I", "-S", hook_script(), "toy"]
    assert funes("add", "toy", "--yes").out.splitlines()[1] == "  nothing to change: funes is already set up in Toy Agent"
    assert [a for a in json.loads(funes("status", "--json").out)["agents"] if a["name"] == "toy"][0]["wired"] is True
    removed = funes("remove", "toy")
    assert removed.code == 0, removed.err
    assert snapshot(isolated_env) == before

    # The hook worker asks the agent which units a payload names (the default: its transcript_path).
    from funes.cli.hook_worker import Request, units_for

    request = Request(Path("x.json"), "toy", None, None, {"transcript_path": str(chat)}, {}, 0.0)
    assert [unit.key for unit in units_for(request)] == ["toy_agent--c1"]


@pytest.mark.slow
def test_a_plugin_that_fails_at_run_time_costs_only_its_own_sessions(installed_plugins, isolated_env, monkeypatch):
    import funes_agent_toy

    home = isolated_env / "toy-home"
    monkeypatch.setenv("TOY_HOME", str(home))
    write(home / "chats" / "c1.chat.jsonl", json.dumps({"id": "t1", "text": "hello"}) + "\n")
    copy_fixture("claude_session.jsonl", isolated_env / ".claude" / "projects" / "p")

    def explode(self, unit):
        raise KeyError("the toy parser has a bug")

    monkeypatch.setattr(funes_agent_toy.Toy, "parse", explode)
    result = funes("index", "--yes")
    assert result.code == 1
    assert "error: agent plugin 'toy' failed to parse" in result.err and "KeyError" in result.err
    assert "indexed 2 of 2 session(s): 3 turns" in result.err  # Claude's session is in


# The toy agent again, under another name, whose parser crashes its process (as native
# code in a parser can) on a session named "segfault...".
CRASHY = TOY + '''

    import os
    import signal


    class Crashy(Toy):
        name = "crashy"
        harness = "crashy_agent"
        label = "Crashy Agent"
        aliases = ()
        home_env = "CRASHY_HOME"
        home_default = ".crashy"

        def parse(self, unit):
            if unit.session_id.startswith("segfault"):
                os.kill(os.getpid(), signal.SIGSEGV)
            return super().parse(unit)


    AGENT = Crashy()
'''

# `funes index` with every unit set paying for a pool of workers, as a big history does.
INDEX_IN_WORKERS = "from funes import indexing; indexing.POOL_BYTES_PER_WORKER = 1; " \
                   "from funes.cli.main import main; main()"


@pytest.fixture
def crashing_plugin(tmp_path, monkeypatch):
    yield from install_packages(tmp_path / "site", [
        build_package(tmp_path / "crashy", "funes-agent-crashy", "crashy", "funes_agent_crashy", CRASHY)], monkeypatch)


@pytest.mark.slow
def test_a_parser_that_kills_its_worker_costs_only_its_own_session_and_the_index_ends(crashing_plugin, isolated_env,
                                                                                      monkeypatch):
    chats = isolated_env / "crashy-home" / "chats"
    monkeypatch.setenv("CRASHY_HOME", str(chats.parent))
    monkeypatch.setenv("FUNES_INDEX_WORKERS", "2")
    names = ["a", "b", "segfault-1", "c", "d", "e", "f", "g"]
    for name in names:
        write(chats / f"{name}.chat.jsonl", json.dumps({"id": "t1", "text": f"the {name}-marmot question"}) + "\n")
    copy_fixture("claude_session.jsonl", isolated_env / ".claude" / "projects" / "p")

    def index() -> subprocess.CompletedProcess:
        # In a process of its own: a parse in this one would crash pytest, a hang fails.
        return subprocess.run([sys.executable, "-c", INDEX_IN_WORKERS, "index", "--yes"], capture_output=True,
                              text=True, timeout=300)

    first = index()
    assert first.returncode == 1, first.stderr
    crashed = chats / "segfault-1.chat.jsonl"
    [error] = [line for line in first.stderr.splitlines() if "ended abruptly" in line]
    assert str(crashed) in error, first.stderr
    assert "Traceback" not in first.stderr
    claude_turns = 3
    assert f"indexed {len(names) + 1} of {len(names) + 1} session(s): {len(names) - 1 + claude_turns} turns" \
        in first.stderr, first.stderr
    for name in [name for name in names if name != "segfault-1"]:
        found = funes("recall", f"{name}-marmot", "--harness", "crashy_agent", "--no-rerank", "--json")
        assert found.code == 0, found.err
        assert f"the {name}-marmot question" in {hit["text"] for hit in json.loads(found.out)}

    # The unit that could not be read is tried again beside a new one, the rest are not.
    write(chats / "h.chat.jsonl", json.dumps({"id": "t1", "text": "the h-marmot question"}) + "\n")
    again = index()
    assert again.returncode == 1 and str(crashed) in again.stderr
    assert f"indexed 2 of {len(names) + 2} session(s): 1 turns" in again.stderr, again.stderr


# ---------------------------------------------------------------------------------------- hook payloads
def test_the_hook_keeps_the_short_fields_and_home_variables_any_agent_may_name_a_session_by(isolated_env,
                                                                                           monkeypatch):
    from funes.cli.hook_worker import read_requests
    from funes.hook import request_from, spool, spool_dir

    monkeypatch.setenv("HERMES_HOME", str(isolated_env / ".hermes" / "profiles" / "work"))
    monkeypatch.setenv("SOME_TOKEN", "not a home")
    payload = {"session_id": "s_main", "profile": "work", "turn": 7, "final": True,
               "workspace_roots": ["/w/a", "/w/b"], "transcript": "x" * 5000,
               "extra": {"conversation_history": [{"role": "user", "content": "hi"}]}, "tool_name": None}
    request = request_from(["hermes"], json.dumps(payload).encode())
    assert request["payload"] == {"session_id": "s_main", "profile": "work", "turn": 7, "final": True,
                                  "workspace_roots": ["/w/a", "/w/b"]}
    assert request["env"]["HERMES_HOME"] == str(isolated_env / ".hermes" / "profiles" / "work")
    assert "SOME_TOKEN" not in request["env"] and "HOME" not in request["env"] and "FUNES_HOME" in request["env"]

    # The same Hermes session fired from two profiles is two sessions; a burst from one is one.
    spool(request)
    spool(request_from(["hermes"], json.dumps({**payload, "turn": 8}).encode()))
    monkeypatch.setenv("HERMES_HOME", str(isolated_env / ".hermes"))
    spool(request_from(["hermes"], json.dumps(payload).encode()))
    kept = read_requests(Path(spool_dir()))
    assert [(r.env["HERMES_HOME"], r.payload["turn"]) for r in kept] == [
        (str(isolated_env / ".hermes" / "profiles" / "work"), 8), (str(isolated_env / ".hermes"), 7)]
    assert len(list(Path(spool_dir()).glob("*.json"))) == 2
