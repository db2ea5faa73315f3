"""OpenAI Codex CLI rollouts: ``<codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Format facts: FORMAT.md beside this module.  Also ``archived_sessions/`` and rollouts
compressed as ``.jsonl.zst`` (a plain ``.jsonl`` beside one wins).

Session id = ``payload.id`` of the file's first record when that is a
``session_meta``, else the UUID at the end of the file name.  Cwd, repository
(``git.repository_url`` as ``owner/name``), branch and the subagent flag come from
the first ``session_meta`` anywhere (a forked file carries a second, copied one).

Only ``response_item`` lines are conversation (``event_msg`` duplicates them).
Skipped: developer/system messages and the context Codex injects as user messages
(AGENTS.md, environment context, …): they repeat in every rollout and drown recall.

turn_uuid = ``"{session_id}:{line_index}"`` (0-based physical line), or
``"{session_id}:o{ordinal}"`` when the line carries an integer ``ordinal`` not seen
earlier in the file.  Positional ids never change when the file grows or a skip rule
changes; the ``o`` keeps ordinals and line numbers from colliding in a file written
partly by older Codex builds.  Parent = the previous retained turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from funes.agents.codex import AGENT
from funes.traces.common import (
    TurnCollector,
    as_str,
    call_arguments,
    clean_branch,
    compact_json,
    file_unit,
    finish_session,
    joined_text,
    json_exit_code,
    normalize_ts,
    opt_str,
    patch_touches,
    record_call,
    repo_from_remote_url,
    stated_exit_code,
    tool_input_text,
    trailing_uuid,
    walk_files,
    workdir_facet,
)
from funes.traces.jsonl import each_record, first_record
from funes.traces.model import Block, Session, SourceUnit

HARNESS = AGENT.harness

_INJECTED_USER_PREFIXES = (
    "# AGENTS.md instructions for",
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<turn_aborted>",
)
_MESSAGE_TEXT_TYPES = ("input_text", "output_text", "text")
_SUBAGENT_THREAD_SOURCES = frozenset({"subagent", "guardian_review", "memory_consolidation"})
# Calls that run a shell command (argv or string under ``command``/``cmd``), and
# what the others do to the file their ``path`` names.
_SHELL_CALLS = frozenset({"shell", "container.exec", "shell_command", "exec_command"})
_FILE_CALLS = {"view_image": "read"}
_HEADER_LINES = 6  # a command output's header: chunk id, wall time, exit status, token count


def default_roots() -> list[Path]:
    return AGENT.roots()


def _is_rollout(name: str) -> bool:
    return name.startswith("rollout-") and (name.endswith(".jsonl") or name.endswith(".jsonl.zst"))


def _rollouts(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    folders = [root / name for name in ("sessions", "archived_sessions") if (root / name).is_dir()]
    for folder in folders or [root]:
        for path in walk_files(folder, _is_rollout):
            if path.name.endswith(".zst") and path.with_name(path.name.removesuffix(".zst")).exists():
                continue  # the plain rollout is the complete one
            yield path


def _session_id(first: dict[str, Any] | None, path: Path) -> str:
    if first is not None and first.get("type") == "session_meta":
        payload = first.get("payload")
        if isinstance(payload, dict) and opt_str(payload.get("id")):
            return payload["id"]
    return trailing_uuid(path.name) or path.name.removesuffix(".zst").removesuffix(".jsonl")


def discover(root: Path) -> Iterator[SourceUnit]:
    for path in _rollouts(root):
        unit = file_unit(HARNESS, path, _session_id(first_record(path), path))
        if unit is not None:
            yield unit


def _apply_session_meta(session: Session, payload: dict[str, Any]) -> None:
    session.cwd = as_str(payload.get("cwd"))
    git = payload.get("git")
    git = git if isinstance(git, dict) else {}
    session.branch = clean_branch(git.get("branch"))
    url = git.get("repository_url")
    session.repo = repo_from_remote_url(url) if isinstance(url, str) else None
    source = payload.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    session.is_subagent = subagent is not None or payload.get("thread_source") in _SUBAGENT_THREAD_SOURCES
    parent = opt_str(payload.get("parent_thread_id"))
    if parent is None and isinstance(subagent, dict) and isinstance(subagent.get("thread_spawn"), dict):
        parent = opt_str(subagent["thread_spawn"].get("parent_thread_id"))
    session.parent_session_id = parent


Converted = tuple[str, list[Block]] | None


def _message(payload: dict[str, Any]) -> Converted:
    role = payload.get("role")
    if role != "user" and role != "assistant":
        return None  # developer/system: instructions, not conversation
    content = payload.get("content")
    parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts = [joined_text(part, _MESSAGE_TEXT_TYPES) for part in parts]
    if role == "user":
        texts = [text for text in texts if not text.lstrip().startswith(_INJECTED_USER_PREFIXES)]
    return role, [Block("text", text) for text in texts]


def _reasoning(payload: dict[str, Any]) -> Converted:
    # encrypted_content is opaque and never indexed
    summary = joined_text(payload.get("summary"), ("summary_text",))
    content = joined_text(payload.get("content"), ("reasoning_text", "text"))
    return "assistant", [Block("thinking", "\n".join(text for text in (summary, content) if text))]


def _provenance(block: Block, name: str | None, raw: Any) -> Block:
    """The files and command of a call: apply_patch's from its patch headers (the
    patch is the raw input, or the ``input`` argument; older builds ran it as the
    shell command ``["apply_patch", patch]``), the shell tools' from ``command``/``cmd``."""
    arguments = call_arguments(raw)
    if name == "apply_patch":
        block.files = patch_touches(arguments.get("input") if arguments is not None else raw)
        return block
    command = arguments.get("command") if arguments is not None else None
    if name in _SHELL_CALLS and isinstance(command, list) and len(command) == 2 and command[0] == "apply_patch":
        block.files = patch_touches(command[1])
        return block
    return record_call(block, arguments, action=_FILE_CALLS.get(name or ""), shell=name in _SHELL_CALLS)


def _tool_call(payload: dict[str, Any]) -> Converted:
    """function_call (``arguments``, a JSON string) or custom_tool_call (``input``, raw
    text such as an apply_patch body): either is the tool_use text verbatim."""
    raw = payload.get("arguments", payload.get("input"))
    name = opt_str(payload.get("name"))
    block = Block("tool_use", tool_input_text(raw), name, opt_str(payload.get("call_id")))
    return "assistant", [_provenance(block, name, raw)]


def _local_shell_call(payload: dict[str, Any]) -> Converted:
    action = payload.get("action")
    block = Block("tool_use", tool_input_text(action), "local_shell", opt_str(payload.get("call_id")))
    return "assistant", [record_call(block, action, shell=True)]


def _output_text(output: Any) -> str:
    """Tool output in any of its shapes: a string, a list of content items, a single
    item, or the legacy ``{content, success}`` object."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list) or (isinstance(output, dict) and "type" in output):
        return joined_text(output, _MESSAGE_TEXT_TYPES)
    if isinstance(output, dict) and "content" in output:
        return _output_text(output["content"])
    return compact_json(output)


def _envelope_output(mapping: dict[str, Any] | None) -> str | None:
    """The command's output of an older shell tool's result, the JSON object
    ``{"output": "...", "metadata": {"exit_code": N, ...}}`` (``mapping``, the
    result's text decoded): its ``output`` string. None for any other result, and
    for a command that printed nothing, whose result keeps the envelope: a result
    without text is no block, and its exit status is then all it says."""
    if mapping is None or set(mapping) != {"output", "metadata"} or not isinstance(mapping["metadata"], dict):
        return None  # another tool's JSON answer, shown as it came
    output = mapping["output"]
    return output if isinstance(output, str) and output.strip() else None


def _exit_code(text: str, mapping: dict[str, Any] | None) -> int | None:
    """The exit status Codex writes with a command's output: ``metadata.exit_code``
    of a JSON output (older shell tool; ``mapping``, the text decoded), else an
    ``Exit code: N`` / ``Process exited with code N`` line of the header before
    ``Output:``."""
    if text.startswith("{"):
        return json_exit_code(mapping) if mapping is not None else None
    for line in text.split("\n", _HEADER_LINES)[:_HEADER_LINES]:
        if line.startswith("Output:"):
            break
        code = stated_exit_code(line)
        if code is not None:
            return code
    return None


def _tool_output(payload: dict[str, Any]) -> Converted:
    """A tool's output. An older shell tool's JSON envelope is read for its exit
    status and then opened: its escaped ``\\n`` and ``\\"`` would otherwise glue
    every line's first word to an ``n`` for search and cost an agent characters,
    and the output the command printed is what a passage should show."""
    text = _output_text(payload.get("output"))
    mapping = call_arguments(text) if text.startswith("{") else None  # decoded once, for both reads
    output = _envelope_output(mapping)
    block = Block("tool_result", text if output is None else output, None, opt_str(payload.get("call_id")))
    block.exit_code = _exit_code(text, mapping)
    return "tool", [block]


def _agent_message(payload: dict[str, Any]) -> Converted:
    """A message between Codex threads: its plain-text parts."""
    content = payload.get("content")
    parts = content if isinstance(content, list) else []
    return "assistant", [Block("text", joined_text(part, ("input_text",))) for part in parts]


_CONVERTERS: dict[str, Callable[[dict[str, Any]], Converted]] = {
    "message": _message,
    "reasoning": _reasoning,
    "function_call": _tool_call,
    "custom_tool_call": _tool_call,
    "local_shell_call": _local_shell_call,
    "function_call_output": _tool_output,
    "custom_tool_call_output": _tool_output,
    "agent_message": _agent_message,
}


def parse(unit: SourceUnit) -> Session:
    path = unit.path
    session = Session(harness=HARNESS, session_id=_session_id(None, path), source_path=str(path), cwd="", workdir="")
    turns = TurnCollector(session)
    started = meta_seen = False

    def handle(index: int, record: dict[str, Any]) -> None:
        nonlocal started, meta_seen
        if not started:  # the first record names the session, as in discovery
            started = True
            session.session_id = _session_id(record, path)
        kind = record.get("type")
        if kind == "session_meta" and not meta_seen:
            payload = record.get("payload")
            if isinstance(payload, dict):
                meta_seen = True
                _apply_session_meta(session, payload)
            return
        if kind != "response_item":
            return
        ordinal = record.get("ordinal")
        preferred = f"{session.session_id}:o{ordinal}" if type(ordinal) is int else None
        turn_uuid = turns.claim(preferred, f"{session.session_id}:{index}")
        payload = record.get("payload")
        converter = _CONVERTERS.get(payload.get("type")) if isinstance(payload, dict) else None
        converted = converter(payload) if converter else None
        if converted is not None:
            role, blocks = converted
            turns.add(turn_uuid, turns.last_uuid, role, normalize_ts(record.get("timestamp")), blocks)

    each_record(path, session.warnings, handle)
    session.workdir = workdir_facet(session.cwd, path.parent.name)
    return finish_session(session)
