"""What the reading commands (`recall`, `sessions`, `scan`, `history`) and the MCP tools of
the same names take alike: their filters, declared once in funes.retrieval.filters
(FILTER_ARGUMENTS) and turned here into typer options or MCP tool parameters, and the
memory they read."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import typer

from funes.retrieval.filters import FilterArgument, Filters, filter_arguments

READ_MEMORY = typer.Option(None, "--memory", help="local (default), a folder, org/repo, hf://datasets/…, s3://…")


def filtered(command: str, parameter: Callable[[FilterArgument], inspect.Parameter], *,
             blank_is_absent: bool = False, given_as: dict[str, str] | None = None) -> Callable:
    """A decorator: the function's ``filters`` parameter becomes one parameter per filter
    ``command`` takes (``parameter`` declares each), and the function is called with
    them parsed into one :class:`Filters`.  typer and the MCP SDK both read the new
    parameters from ``inspect.signature``.  ``given_as`` names filters the function
    takes as its own parameter (`history`'s PATH is its file); ``blank_is_absent`` takes
    an empty string as left out (agents send "" for an argument they mean to omit)."""
    given_as = given_as or {}
    arguments = [argument for argument in filter_arguments(command) if argument.name not in given_as]

    def decorate(function: Callable) -> Callable:
        signature = inspect.signature(function, eval_str=True)
        parameters = []
        for declared in signature.parameters.values():
            parameters.extend(map(parameter, arguments) if declared.name == "filters" else [declared])

        def call(*args: Any, **kwargs: Any) -> Any:
            given = {argument.name: kwargs.pop(argument.name) for argument in arguments}
            given |= {name: kwargs[own] for name, own in given_as.items()}
            if blank_is_absent:
                given = {name: None if value == "" else value for name, value in given.items()}
            return function(*args, filters=Filters.parse(**given), **kwargs)

        # inspect.signature stops at __signature__, so typer and the MCP SDK read the
        # filters' parameters, not the wrapped function's ``filters``.
        functools.update_wrapper(call, function, updated=())
        call.__signature__ = signature.replace(parameters=parameters)
        # typer resolves annotations through typing.get_type_hints, which reads these.
        call.__annotations__ = {declared.name: declared.annotation for declared in parameters
                                if declared.annotation is not inspect.Parameter.empty}
        if signature.return_annotation is not inspect.Signature.empty:
            call.__annotations__["return"] = signature.return_annotation
        return call

    return decorate


def _typer_option(argument: FilterArgument) -> inspect.Parameter:
    if argument.off_flag:  # a switch: --flag, --off-flag or neither
        flags = [f"{argument.flag}/{argument.off_flag}", *([argument.short] if argument.short else [])]
        return inspect.Parameter(argument.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=bool | None,
                                 default=typer.Option(None, *flags, help=argument.help))
    return inspect.Parameter(argument.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str,
                             default=typer.Option(None, argument.flag, help=argument.help))


def filter_options(command: str, **given_as: str) -> Callable:
    """:func:`filtered` for a typer command: each filter a ``--flag`` option."""
    return filtered(command, _typer_option, given_as=given_as)
