"""Every command's arguments driven with hostile values: non-UTF-8 bytes (as Python
decodes them from argv), huge, NaN and infinities, empty, negative, quotes and SQL.
Each run is either a valid answer or one line `funes: …` with an exit code that
docs/contract.md documents; never a traceback.

In-process (fast: models and libraries stay loaded), plus a few real subprocesses
whose argv carries raw bytes."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funes.cli.main import run
from paths import REAL, ROOT

CONTRACT = ROOT / "docs" / "contract.md"
DOCUMENTED = {int(code) for code in re.findall(r"^\| (\d+) \|", CONTRACT.read_text(encoding="utf-8"), flags=re.M)}

FIXED = [
    "", " ", "\t", "-", "0", "-1", "-0", "nan", "NaN", "inf", "-inf", "1e30", "1.5", "99999999999999999999",
    "-99999999999999999999", "18446744073709551617", "'", '"', "%", "_", "\\", "' OR '1'='1", "'; DROP TABLE x; --",
    "../../../../etc/passwd", "~", ".", "hf://", "hf://datasets/", "a/b/c", "\n", "\r\n---\n[x] y", "\udcff",
    "\udcff streaming", "\ud800", "é\udce9", "x" * 100_000, "7" * 5_000, "claude_s", "d753fba5",
]
# What a shell can pass: no NUL (argv strings end at one), and no absolute path, so a
# writer given one as --memory cannot touch folders outside the test's own.
HOSTILE = st.one_of(
    st.sampled_from(FIXED),
    st.binary(min_size=1, max_size=10).map(os.fsdecode),
    st.text(max_size=20),
).filter(lambda value: "\x00" not in value and not value.startswith("/"))

# command: (positional slots with a safe value, or None when always hostile), option flags.
SAFE_QUERY = "digital twin of Earth"
COMMANDS = {
    "recall": ([SAFE_QUERY], ["-k", "--candidates", "--neighbors", "--half-life", "--harness", "--type", "--workdir",
                              "--repo", "--branch", "--session", "--since", "--until", "--file", "--command",
                              "--memory", "--fusion", "--batch"]),
    "get": (["claude_session", "d753fba5-0c26-437f-82df-ba98aa773943"], ["--window", "--format", "--highlight",
                                                                         "--memory"]),
    "get ": (["claude_session"], ["--from", "--to", "--format", "--memory"]),  # the range form
    "status": ([], ["--memory"]),
    "sessions": ([], ["--harness", "--workdir", "--repo", "--branch", "--session", "--since", "--until", "--file",
                      "--command", "--memory"]),
    "scan": (["twin"], ["--context", "--limit", "--harness", "--type", "--session", "--since", "--file", "--memory"]),
    "history": (["package.json"], ["--limit", "--harness", "--session", "--since", "--command", "--memory"]),
    "index": (["{empty}"], ["--harness", "--limit", "--memory"]),
    "parse": (["{transcript}"], ["--harness"]),
    "add": ([None], []),
    "remove": ([None], []),
    "ask": (["claude", "why did the test depend on dictionary order"], ["--memory"]),
    "push": ([None], ["--memory"]),
    "curate": ([None, "acme/app"], ["--include", "--exclude"]),
    "forget": ([], ["--session", "--workdir", "--repo", "--harness", "--before", "--memory"]),
    "scrub": ([], ["--memory!"]),
    "maintain": ([], ["--memory", "--keep-versions"]),
    "quickstart": ([SAFE_QUERY], ["-k"]),
    "ui": ([], ["--port!"]),
}
# `funes mcp` serves stdin: driven in tests/cli/test_mcp.py and below in a subprocess.


@st.composite
def invocations(draw):
    name = draw(st.sampled_from(sorted(COMMANDS)))
    positionals, flags = COMMANDS[name]
    slots = [("arg", i) for i in range(len(positionals))] + [("opt", flag) for flag in flags]
    forced = [slot for slot in slots if (slot[0] == "arg" and positionals[slot[1]] is None)
              or (slot[0] == "opt" and slot[1].endswith("!"))]
    chosen = set(forced) | set(draw(st.lists(st.sampled_from(slots), min_size=0 if forced else 1, max_size=2)))
    values = {slot: draw(HOSTILE if slot != ("opt", "--port!") else st.sampled_from(FIXED)) for slot in chosen}
    args = [name.strip()]
    for index, safe in enumerate(positionals):
        args.append(values.get(("arg", index), safe))
    for flag in flags:
        if ("opt", flag) in values:
            args += [flag.rstrip("!"), values[("opt", flag)]]
    return args


def invoke(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            run(args)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def assert_answered(code: int, err: str, args) -> None:
    assert code in DOCUMENTED, (code, err[-500:], args)
    assert "Traceback" not in err, err[-2000:]
    if code:
        lines = err.rstrip("\n").split("\n")
        assert lines[-1].startswith("funes: "), (err[-500:], args)


@pytest.fixture
def world(memory_home, tmp_path, monkeypatch):
    """The fixture memory, an empty folder and a transcript to name, a working folder
    of the test's own (relative --memory values land there), and no agent CLI on PATH."""
    (tmp_path / "empty").mkdir()
    shutil.copyfile(REAL / "as_claude_small.jsonl", tmp_path / "t.jsonl")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    # `funes ask claude …` must find no agent CLI to run, whatever this machine has.
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    return {"{empty}": str(tmp_path / "empty"), "{transcript}": str(tmp_path / "t.jsonl")}


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
@pytest.mark.slow
@given(args=invocations())
def test_hostile_arguments_get_an_answer_or_one_line_error(world, args):
    args = [world.get(arg, arg) for arg in args]
    code, _, err = invoke(args)
    assert_answered(code, err, args)


# Real argv bytes, through the console entry point: what a shell passes.
RAW_ARGV = [
    ([b"recall", b"\xff streaming"], 2, "funes: QUERY is not UTF-8 text: b'\\xff streaming'"),
    ([b"get", b"\xff", b"x"], 2, "funes: SESSION_ID is not UTF-8 text: b'\\xff'"),
    ([b"recall", b"x", b"--session", b"\xc3\x28"], 2, "funes: --session is not UTF-8 text: b'\\xc3('"),
    ([b"recall", b"x", b"-k", b"99999999999999999999"], 2,
     "funes: -k must be an integer from 1 to 1,000, got 99999999999999999999"),
    ([b"recall", b"x", b"--half-life", b"nan"], 2, "funes: --half-life must be a positive number of days, got nan"),
    ([b"recall", b"x", b"--harness", b""], 2, "funes: --harness '': give a value, or leave --harness out"),
    ([b"mcp", b"\xfe"], 2, "funes: MEMORY is not UTF-8 text: b'\\xfe'"),
    ([b"index", b"/nonexistent/\xff", b"--yes"], 2, "funes: no such file or folder: /nonexistent/\\udcff"),
]


@pytest.mark.parametrize("argv, code, message", RAW_ARGV, ids=[repr(b" ".join(a[0][:2])) for a in RAW_ARGV])
def test_raw_argv_bytes_get_one_line_errors(memory_home, argv, code, message):
    result = subprocess.run([os.fsencode(sys.executable), b"-m", b"funes.cli", *argv], capture_output=True,
                            stdin=subprocess.DEVNULL, timeout=120)
    err = result.stderr.decode("utf-8", "backslashreplace")
    assert result.returncode == code, err
    assert err == message + "\n"
