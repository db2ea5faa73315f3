"""Entry point of the `funes` console script: assembles one module per command.

Errors a user can cause print one line, ``funes: <what and where>``, and exit with
the code documented in docs/contract.md; only bugs keep a traceback.
"""

from __future__ import annotations

import inspect
import os
import sys

import typer

# Typer vendors click (typer._click) and has no public name for its usage-error
# base class; its exceptions are not the installed click's.
from typer._click.exceptions import ClickException

from funes.errors import FunesError, UsageError, shown

app = typer.Typer(
    name="funes",
    help="Verbatim recall over your coding agents' transcripts.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _register(command: str | None = None) -> None:
    """Import the ``*_cmd`` modules of this package: each adds its command(s) to
    ``app``.  Module ``<name>_cmd`` defines command ``<name>`` (tests/cli/test_cli_help.py
    holds every module to that), so a command named on the command line imports its
    module alone: importing them all costs a cold `funes recall` 0.3 s.  Any other
    call (``--help``, no command, a wrong one) imports them all, to list them."""
    import importlib
    import importlib.util
    import pkgutil

    import funes.cli

    named = f"funes.cli.{command}_cmd" if command and command.isidentifier() else None
    if named and importlib.util.find_spec(named) is not None:
        importlib.import_module(named)
    else:
        for module in pkgutil.iter_modules(funes.cli.__path__):
            if module.name.endswith("_cmd"):
                importlib.import_module(f"funes.cli.{module.name}")
    for info in app.registered_commands:
        if info.callback is None or getattr(info.callback, "text_checked", False):
            continue
        if info.help is None and info.callback.__doc__:
            info.help = unwrapped(info.callback.__doc__)
        info.callback = _text_checked(info.callback)


def _command_named(argv: list[str]) -> str | None:
    """The command ``argv`` runs: its first word (the app's own options are flags
    that take no value); None when it has none."""
    return next((word for word in argv if not word.startswith("-")), None)


def _text_checked(callback):
    """``callback`` refusing text arguments that are not UTF-8.

    Python decodes argv with surrogateescape, so bytes that are not UTF-8 reach a
    command as lone surrogates, which the tokenizers and Lance's SQL reject with a
    traceback.  A ``Path`` argument may be any bytes (it goes back to the file system
    as it came); every ``str`` one is text."""
    import functools
    import typing

    hints = typing.get_type_hints(callback)
    names = {name: _display_name(name, parameter.default)
             for name, parameter in inspect.signature(callback).parameters.items()
             if hints.get(name) in (str, list[str])}

    @functools.wraps(callback)
    def checked(**kwargs):
        for name, display in names.items():
            value = kwargs.get(name)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and not text.isascii():
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError:
                        raw = text.encode("utf-8", "surrogateescape" if _from_argv(text) else "surrogatepass")
                        raise UsageError(f"{display} is not UTF-8 text: {shown(raw)}") from None
        return callback(**kwargs)

    # A second _register (a test's, or --help after a command) finds it already checked.
    checked.text_checked = True
    return checked


def _from_argv(text: str) -> bool:
    """Whether every surrogate in ``text`` is one surrogateescape makes of a byte."""
    return all(not 0xD800 <= ord(ch) <= 0xDFFF or 0xDC80 <= ord(ch) <= 0xDCFF for ch in text)


def _display_name(name: str, default: object) -> str:
    """``--session`` for an option, ``QUERY`` for an argument."""
    declarations = [d for d in getattr(default, "param_decls", ()) or () if d.startswith("--")]
    return declarations[0] if declarations else name.upper()


def unwrapped(docstring: str) -> str:
    """A docstring as help text: its paragraphs, each on one line.  Typer would keep the
    source's hard wraps, so the command list broke summaries mid-sentence; the terminal
    wraps them instead."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(docstring).split("\n\n"))


def one_line(message: str) -> str:
    """``message`` with every unprintable character (a line break in a path or an id
    it quotes, an escape code) written as its escape, so the error stays one line."""
    if message.isprintable():
        return message
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for ch in message)


def _print_version(value: bool) -> None:
    if value:
        import funes

        print(f"funes {funes.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Verbatim recall over your coding agents' transcripts."""


# Commands that only read, which agents call once per question: their process ends
# with os._exit once its output is flushed.  The interpreter's teardown (Lance's
# dataset and runtime, onnxruntime's session, a thousand modules freed one by one)
# took 0.1-0.15 s of a 0.85 s cold recall and finishes nothing a reader started.
# Every other command, a writer above all, exits the ordinary way.
QUICK_EXIT_COMMANDS = frozenset({"recall", "get"})


def main() -> None:
    """The `funes` program (its console script, `python -m funes.cli`): :func:`run`
    over the command line, then the exit."""
    args = sys.argv[1:]
    command = _command_named(args)
    if command not in QUICK_EXIT_COMMANDS:
        run(args)
        return
    if command == "recall":
        from funes.cli.recall_cmd import preload_query_embedder

        preload_query_embedder(args)
    try:
        run(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that closed the pipe, a closed stream
            pass
    os._exit(code)


def run(argv: list[str] | None = None) -> None:
    args = argv if argv is not None else sys.argv[1:]
    _register(_command_named(args))
    command = typer.main.get_command(app)
    try:
        # Outside standalone mode, click returns an explicit typer.Exit's code instead of raising it.
        code = command.main(args=args, prog_name="funes", standalone_mode=False)
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except typer.Exit as exc:  # --help, or a command's explicit typer.Exit
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        print("funes: aborted", file=sys.stderr)
        raise SystemExit(130) from None
    except ClickException as exc:  # wrong flag, missing argument, bad value
        print(f"funes: {one_line(exc.format_message())}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except FunesError as exc:
        print(f"funes: {one_line(str(exc))}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        print("funes: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except BrokenPipeError:
        raise SystemExit(0) from None
