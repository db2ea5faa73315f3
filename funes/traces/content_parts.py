"""Message content parts several agents record alike.

Google GenAI ``Content`` parts (``{role, parts: [{text}, {text, thought: true},
{functionCall}, {functionResponse}]}``) and the ``run_shell_command`` result text, as
both Google's own agent CLI and its fork record them (format facts: their FORMAT.md);
and the Anthropic Messages parts (``{type: "text", text}``, ``{type: "thinking",
thinking}``, ``{type: "tool_use", id, name, input}``) that agents built on that API keep;
and OpenAI chat ``tool_calls`` (``[{id, type: "function", function: {name, arguments}}]``)
that agents logging OpenAI-style messages keep.  Shared here because an agent's folder
names no other agent."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from funes.traces.common import (as_str, call_arguments, command_text, compact_json, opt_str, path_touches,
                                 tool_input_text)
from funes.traces.model import Block, FileTouch

# Searched for without a leading ``^`` and kept when they start a line: a ``^`` makes the
# regex engine try every position of a long tool output instead of jumping to the literal.
_EXIT_CODE = re.compile(r"Exit Code: (-?\d+)\s*$", re.MULTILINE)
_ERROR_OR_SIGNAL = re.compile(r"(?:Error|Signal): ")


def _at_line_start(text: str, start: int) -> bool:
    return start == 0 or text[start - 1] == "\n"


def part_list(content: Any) -> list[Any]:
    """A ``PartListUnion`` (a string, one part, or a list of parts or strings) as a list."""
    if isinstance(content, list):
        return content
    return [] if content is None else [content]


def part_text(part: Any, *, thought: bool = False) -> str:
    """The text of a plain text part (a bare string counts), thoughts or not."""
    if isinstance(part, str):
        return "" if thought else part
    if isinstance(part, dict) and isinstance(part.get("text"), str) and bool(part.get("thought")) == thought:
        return part["text"]
    return ""


def response_text(response: Any) -> str:
    """A ``functionResponse.response``: its ``output`` (or ``error``), else the JSON."""
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            value = response.get(key)
            if isinstance(value, str):
                return value
        return compact_json(response) if response else ""
    return response if isinstance(response, str) else ""


def shell_exit_code(text: str) -> int | None:
    """What a shell tool result says the command exited with: its last ``Exit Code: N``
    line; or 0 for a result of the current shape (``Output: …``) that reports neither
    an exit code, an error nor a signal, since current builds print the code only
    when it is not 0."""
    found = [match.group(1) for match in _EXIT_CODE.finditer(text) if _at_line_start(text, match.start())]
    if found:
        return int(found[-1])
    body = text.removeprefix("<untrusted_context>\n").lstrip()
    if body.startswith("Output:") and not any(_at_line_start(body, match.start())
                                              for match in _ERROR_OR_SIGNAL.finditer(body)):
        return 0
    return None


def call_block(name: str | None, call_id: str | None, arguments: Any) -> Block:
    """A ``functionCall`` as a tool_use block: its ``args`` as compact JSON (``{}``
    when absent), no provenance (each agent's tools name files their own way)."""
    return Block("tool_use", compact_json(arguments if arguments is not None else {}), name, call_id)


def text_part_block(part: dict[str, Any]) -> Block | None:
    """A Messages ``text`` or ``thinking`` part as its text or thinking block (a field
    of the wrong type reads as ""); None for a part of any other type."""
    kind = part.get("type")
    if kind == "text" or kind == "thinking":
        return Block(kind, as_str(part.get(kind)))
    return None


def tool_use_part_block(part: dict[str, Any],
                        provenance: Callable[[str | None, Any], tuple[tuple[FileTouch, ...], str | None]]) -> Block:
    """A Messages ``tool_use`` part as a tool_use block: its ``input`` as the stored text
    (see :func:`~funes.traces.common.tool_input_text`), and the files and command the
    agent's ``provenance(name, input)`` reads from the call."""
    name, arguments = opt_str(part.get("name")), part.get("input")
    files, command = provenance(name, arguments)
    return Block("tool_use", tool_input_text(arguments), name, opt_str(part.get("id")), files=files, command=command)


Provenance = Callable[[str | None, Any], tuple[tuple[FileTouch, ...], str | None]]


def named_tool_provenance(file_tools: dict[str, tuple[tuple[str, ...], str]],
                          shell_tools: frozenset[str]) -> Provenance:
    """The provenance of an agent whose tools are told apart by name: a call of a
    ``file_tools`` tool touches the paths under its argument keys (with its action),
    one of ``shell_tools`` runs its ``command`` argument."""
    def provenance(name: str | None, arguments: Any) -> tuple[tuple[FileTouch, ...], str | None]:
        if name in file_tools:
            keys, action = file_tools[name]
            return path_touches(arguments, keys, action), None
        if name in shell_tools:
            mapping = call_arguments(arguments)
            return (), command_text(mapping.get("command")) if mapping is not None else None
        return (), None

    return provenance


def function_call_blocks(calls: Any, provenance: Provenance) -> list[Block]:
    """An OpenAI chat message's ``tool_calls`` as tool_use blocks: each call's
    ``function.arguments`` (JSON text, usually) as the stored text, and the files and
    command the agent's ``provenance(name, arguments)`` reads from it.  Calls of
    another shape are skipped."""
    blocks = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = opt_str(function.get("name")), function.get("arguments")
            files, command = provenance(name, arguments)
            blocks.append(Block("tool_use", tool_input_text(arguments), name, opt_str(call.get("id")), files=files,
                                command=command))
    return blocks
