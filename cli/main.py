"""Entry point of the `funes` console script: assembles one module per command.

Errors a user can cause print one line, ``funes: <what and where>``, and exit with
the code documented in docs/contract.md; only bugs keep a traceback.
"""

from __future__ import annotations

import inspect
import sys

import typer

# Typer vendors click (typer._click) and has no public name for its usage-error
# base class; its exceptions are not the installed click's.
from typer._click.exceptions import ClickException

from funes.errors import FunesError

app = typer.Typer(
    name="funes",
    help="Verbatim recall over your coding agents' transcripts.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _register() -> None:
    """Import every ``*_cmd`` module of this package: each adds its command(s) to
    ``app``.  Command modules import heavy libraries inside their functions, so
    registering them all stays cheap and `funes recall` starts fast."""
    import importlib
    import pkgutil

    import funes.cli

    for module in pkgutil.iter_modules(funes.cli.__path__):
        if module.name.endswith("_cmd"):
            importlib.import_module(f"funes.cli.{module.name}")
    for info in app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = unwrapped(info.callback.__doc__)


def unwrapped(docstring: str) -> str:
    """A docstring as help text: its paragraphs, each on one line.  Typer would keep the
    source's hard wraps, so the command list broke summaries mid-sentence; the terminal
    wraps them instead."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(docstring).split("\n\n"))


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


def run(argv: list[str] | None = None) -> None:
    _register()
    command = typer.main.get_command(app)
    try:
        # Outside standalone mode, click returns an explicit typer.Exit's code instead of raising it.
        code = command.main(args=argv if argv is not None else sys.argv[1:], prog_name="funes", standalone_mode=False)
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except typer.Exit as exc:  # --help, or a command's explicit typer.Exit
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        print("funes: aborted", file=sys.stderr)
        raise SystemExit(130) from None
    except ClickException as exc:  # wrong flag, missing argument, bad value
        print(f"funes: {exc.format_message()}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except FunesError as exc:
        print(f"funes: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        print("funes: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except BrokenPipeError:
        raise SystemExit(0) from None
