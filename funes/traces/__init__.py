"""Agent traces: discovery and parsing, one module per agent.

Each agent module (``claude``, ``codex``, ``pi``, ``hermes``, ``parquet``) exposes:

* ``HARNESS``: its stored harness name;
* ``default_roots() -> list[Path]``: where the agent keeps transcripts on this
  machine (environment variables honoured);
* ``discover(root: Path) -> Iterator[SourceUnit]``: the units under a root (an agent
  home, any folder inside it, or a single file);
* ``parse(unit: SourceUnit) -> Session``: the unit's turns, raising
  :class:`funes.errors.TraceReadError` when it cannot be read (so it is retried).

Adding an agent means adding one module here and listing it in ``_MODULES``;
nothing downstream of parsing changes.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from funes.errors import TraceReadError, UsageError
from funes.traces.common import collecting_discovery_warnings
from funes.traces.model import (
    BLOCK_TYPES,
    HARNESSES,
    TIER_OF_BLOCK,
    Block,
    ParseWarning,
    Session,
    SourceUnit,
    Turn,
    canonical_harness,
    session_key,
)

__all__ = [
    "BLOCK_TYPES",
    "HARNESSES",
    "TIER_OF_BLOCK",
    "Block",
    "ParseWarning",
    "Session",
    "SourceUnit",
    "Turn",
    "canonical_harness",
    "detect_harness",
    "discover",
    "harness_module",
    "parse_unit",
    "session_key",
]

_MODULES = {
    "claude_code": "funes.traces.claude",
    "codex": "funes.traces.codex",
    "pi": "funes.traces.pi",
    "hermes": "funes.traces.hermes",
    "parquet": "funes.traces.parquet",
}

# Agents swept by a bare `funes index` (Parquet files are only imported by path).
AGENT_HARNESSES = ("claude_code", "codex", "pi", "hermes")


def harness_module(harness: str) -> ModuleType:
    name = canonical_harness(harness)
    if name is None:
        raise UsageError(f"unknown harness {harness!r}: expected one of claude, codex, pi, hermes, parquet")
    return importlib.import_module(_MODULES[name])


def _sniff_jsonl(path: Path) -> str:
    """Harness of a JSONL file from its first parseable record (line 1 may be a
    summary or queue operation, so keep reading)."""
    try:
        with open(path, "rb") as handle:
            for _ in range(50):
                line = handle.readline()
                if not line:
                    break
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # garbage, or nesting deeper than the decoder goes
                    continue
                if isinstance(record, dict):
                    kind = record.get("type")
                    if kind == "session_meta":
                        return "codex"
                    if kind == "session":
                        return "pi"
                    if kind in ("response_item", "event_msg", "turn_context"):
                        return "codex"
                    return "claude_code"
    except OSError:
        pass
    return "claude_code"


def detect_harness(path: Path) -> str:
    """Which agent wrote ``path`` (a file or folder), by location, then by content."""
    resolved = path.expanduser()
    text = resolved.as_posix().rstrip("/")
    if resolved.suffix == ".parquet":
        return "parquet"
    if resolved.name == "state.db" or resolved.name.endswith(".hermes") or "/.hermes/" in text + "/":
        return "hermes"
    for marker, harness in ((".claude/projects", "claude_code"), (".codex/", "codex"),
                            (".pi/agent", "pi")):
        if marker in text + "/":
            return harness
    if resolved.name.startswith("rollout-") and ".jsonl" in resolved.name:
        return "codex"
    if resolved.is_file():
        return _sniff_jsonl(resolved)
    if resolved.is_dir():
        if (resolved / "state.db").exists():
            return "hermes"
        if (resolved / "sessions").is_dir() and any((resolved / "sessions").glob("*/*/*/rollout-*")):
            return "codex"
        for child in sorted(resolved.rglob("*.jsonl"))[:1]:
            return _sniff_jsonl(child)
        if any(resolved.rglob("*.parquet")):
            return "parquet"
    return "claude_code"


def discover(path: Path | None = None, harness: str | None = None,
             errors: list[str] | None = None, warnings: list[ParseWarning] | None = None) -> list[SourceUnit]:
    """The units to index, newest first, subagent transcripts after main sessions.

    No path: every agent home found on this machine (or only ``harness``'s); a home
    that cannot be read (a locked Hermes database, say) is reported in ``errors``
    and the sweep goes on with the others.  A path: the units under it, parsed as
    ``harness`` or as detected.  Folders that cannot be read are skipped, each
    reported in ``warnings`` when given.
    """
    with collecting_discovery_warnings([] if warnings is None else warnings):
        return _discover(path, harness, errors)


def _discover(path: Path | None, harness: str | None, errors: list[str] | None) -> list[SourceUnit]:
    units: list[SourceUnit] = []
    if path is None:
        names = [canonical_harness(harness)] if harness else list(AGENT_HARNESSES)
        if None in names:
            harness_module(harness or "")  # raises the unknown-harness error
        for name in names:
            module = harness_module(name)
            for root in module.default_roots():
                if not root.exists():
                    continue
                try:
                    units.extend(module.discover(root))
                except TraceReadError as exc:
                    if errors is None:
                        raise
                    errors.append(str(exc))
    else:
        path = path.expanduser().absolute()
        try:
            path.stat()
        except FileNotFoundError:
            raise UsageError(f"no such file or folder: {path}") from None
        except OSError as exc:  # a name too long, a component that is a file, a loop
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        name = canonical_harness(harness) if harness else detect_harness(path)
        units.extend(harness_module(name or harness or "").discover(path))
    return order_units(units)


def _mtime(unit: SourceUnit) -> float:
    try:
        return unit.path.stat().st_mtime
    except OSError:
        return 0.0


def is_subagent_unit(unit: SourceUnit) -> bool:
    return unit.path.name.startswith("agent-") or "/subagents/" in unit.path.as_posix()


def order_units(units: Iterable[SourceUnit]) -> list[SourceUnit]:
    """Main sessions before subagents, newest first within each; one unit per key."""
    unique: dict[str, SourceUnit] = {}
    for unit in units:
        unique.setdefault(unit.key, unit)
    return sorted(unique.values(), key=lambda u: (is_subagent_unit(u), -_mtime(u), u.key))


def parse_unit(unit: SourceUnit) -> Session:
    return harness_module(unit.harness).parse(unit)


def iter_sessions(units: Iterable[SourceUnit]) -> Iterator[Session]:
    for unit in units:
        yield parse_unit(unit)


def units_for_keys(keys: Iterable[str], paths: dict[str, str]) -> dict[str, SourceUnit]:
    """The current units behind partition keys, found again under their recorded
    paths (``paths``: key → transcript or database path).  Keys whose transcript
    is gone are absent: the memory keeps their rows."""
    found: dict[str, SourceUnit] = {}
    by_source: dict[tuple[str, str], list[str]] = {}
    for key in keys:
        harness = key.split("--", 1)[0]
        if key in paths:
            by_source.setdefault((harness, paths[key]), []).append(key)
    for (harness, path), wanted in by_source.items():
        source = Path(path)
        if not source.exists():
            continue
        for unit in harness_module(harness).discover(source):
            if unit.key in wanted:
                found[unit.key] = unit
    return found
