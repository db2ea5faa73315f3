"""`funes --help`, each command's `--help` and `funes --version`, as a user's terminal shows them."""

import importlib.metadata
import os
import re
import subprocess
import sys

import pytest
import typer

from funes.cli.main import app, run

FUNES = [sys.executable, "-m", "funes.cli"]


def _commands():
    from funes.cli.main import _register

    _register()
    return typer.main.get_command(app).commands


def _terminal(*args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    result = subprocess.run([*FUNES, *args], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_version_prints_the_installed_version():
    out = _terminal("--version")
    assert out == f"funes {importlib.metadata.version('funes')}\n"


@pytest.mark.parametrize("columns", [80, 120])
def test_every_summary_in_the_command_list_is_one_whole_sentence(columns):
    """The list shows each command's first help paragraph, wrapped by the terminal
    only: joined again, every row reads as the whole sentence."""
    commands = _commands()
    rows: dict[str, list[str]] = {}
    name = None
    for line in _terminal("--help", columns=columns).split("─ Commands ", 1)[-1].splitlines():
        match = re.match(r"^│ (\S+)?\s+(.*?)\s*│$", line)
        if not match:
            continue
        name = match[1] or name
        rows.setdefault(name, []).append(match[2])
    assert set(rows) == set(commands)
    for name, command in commands.items():
        summary = command.help.split("\n\n")[0]
        assert "\n" not in summary and summary.endswith("."), (name, summary)
        assert " ".join(rows[name]) == summary, name


def test_each_command_help_shows_its_paragraphs_unbroken(monkeypatch):
    import io
    from contextlib import redirect_stdout

    monkeypatch.setenv("COLUMNS", "100")
    for name, command in _commands().items():
        out = io.StringIO()
        with redirect_stdout(out):
            run([name, "--help"])  # exit 0: returns
        text = " ".join(line.strip("│ ") for line in out.getvalue().splitlines())
        for paragraph in command.help.split("\n\n"):
            assert paragraph in " ".join(text.split()), (name, paragraph)


def test_each_command_module_defines_the_command_of_its_name():
    """`funes NAME` imports funes.cli.NAME_cmd alone (cli/main.py:_register), so a
    command must live in the module named after it."""
    import pkgutil

    import funes.cli

    _commands()
    defined = {info.name: getattr(info.callback, "__wrapped__", info.callback).__module__
               for info in app.registered_commands}
    modules = {m.name for m in pkgutil.iter_modules(funes.cli.__path__) if m.name.endswith("_cmd")}
    assert defined == {name.removesuffix("_cmd"): f"funes.cli.{name}" for name in modules}


def test_a_named_command_imports_no_other_command_module():
    code = ("import sys\nfrom funes.cli.main import run\n"
            "try:\n    run(['sessions', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('funes.cli.') and m.endswith('_cmd')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "funes sessions" in result.stdout
    assert result.stdout.splitlines()[-1] == "['funes.cli.sessions_cmd']"
