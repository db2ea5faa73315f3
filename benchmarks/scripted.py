"""Scripted coding sessions for the synthetic histories: prompts, thinking, replies,
tool calls with long results, the mix of a real session, made from a seed.  The
writers in synthetic.py, synthetic_stores.py, synthetic_more.py and
synthetic_clis.py render them in each agent's own on-disk shape; the shapes follow
the agent's FORMAT.md and the test fixtures (SQLite stores reuse the fixture
builders' schemas and record helpers), so the parser meets what it meets on a
user's machine: the fields it skips as well as the ones it reads."""

from __future__ import annotations

import importlib.util
import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

TESTS_FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
EXCHANGES_PER_SESSION = 60
T0 = 1_780_000_000  # 2026-05-28T20:26:40Z
_WORDS = ("the cache key includes the build id so every deploy starts cold and the tile server refetches "
          "each request from origin which explains the latency spike we saw after release handler returns "
          "before the pool drains retry backoff jitter test fixture timeout config parser schema migration "
          "index column row session token user database query endpoint middleware logging error status").split()
_IDENTS = ("cache", "key", "build_id", "tile", "fetch", "origin", "pool", "retry", "backoff", "config",
           "parser", "schema", "row", "session", "token", "handler", "request", "response", "store", "index")


@dataclass
class Call:
    id: str
    kind: str  # shell | read | edit | write | search
    args: dict
    result: str
    is_error: bool = False


@dataclass
class Step:
    text: str
    thinking: str | None = None
    calls: list[Call] = field(default_factory=list)


@dataclass
class Exchange:
    prompt: str
    steps: list[Step]
    started: float  # epoch seconds

    def at(self, offset: int) -> float:
        return self.started + offset


@dataclass
class ScriptedSession:
    id: str
    cwd: str
    exchanges: list[Exchange]

    def size(self) -> int:
        """Characters of content (what any format must store at least)."""
        total = 0
        for exchange in self.exchanges:
            total += len(exchange.prompt)
            for step in exchange.steps:
                total += len(step.text) + len(step.thinking or "")
                total += sum(len(c.result) + len(json.dumps(c.args)) for c in step.calls)
        return total


def _prose(rng: random.Random, low: int, high: int) -> str:
    words, length = [], 0
    target = rng.randint(low, high)
    while length < target:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words).capitalize() + "."


def _code(rng: random.Random, low: int, high: int) -> str:
    lines, length, number = [], 0, 1
    target = rng.randint(low, high)
    while length < target:
        a, b, c = rng.choice(_IDENTS), rng.choice(_IDENTS), rng.choice(_IDENTS)
        line = rng.choice((f"def {a}_{b}(self, {c}):", f"    return self.{a}.get({c}, {rng.randint(0, 999)})",
                           f"    {a} = {b}({c}, timeout={rng.randint(1, 60)})", f"# {a} before {b}: see {c}",
                           f"class {a.title()}{b.title()}:", f"    if not {a}: raise ValueError('{b} {c}')", ""))
        lines.append(f"{number:5d}\t{line}")
        length += len(lines[-1]) + 1
        number += 1
    return "\n".join(lines)


def _call(rng: random.Random, ident: str, cwd: str) -> Call:
    kind = rng.choices(("shell", "read", "edit", "write", "search"), weights=(35, 30, 20, 5, 10))[0]
    path = f"{cwd}/src/{rng.choice(_IDENTS)}/{rng.choice(_IDENTS)}.py"
    if kind == "shell":
        command = rng.choice(("pytest -q tests/", "git diff --stat", "rg -n cache src/", "make build", "ls -la src"))
        return Call(ident, kind, {"command": command}, _code(rng, 300, 6000) + f"\nexit code {rng.randint(0, 1)}",
                    is_error=rng.random() < 0.1)
    if kind == "read":
        return Call(ident, kind, {"path": path}, _code(rng, 1000, 12000))
    if kind == "edit":
        return Call(ident, kind, {"path": path, "old": _code(rng, 40, 400), "new": _code(rng, 40, 400)},
                    f"The file {path} has been edited.")
    if kind == "write":
        return Call(ident, kind, {"path": path, "content": _code(rng, 200, 3000)}, f"Wrote {path}.")
    return Call(ident, kind, {"pattern": rng.choice(_IDENTS), "path": cwd}, _code(rng, 200, 3000))


def scripted_session(rng: random.Random, number: int, exchanges: int = EXCHANGES_PER_SESSION) -> ScriptedSession:
    """A coding session: ``exchanges`` prompts, each answered in one to five steps
    (thinking most of the time, a reply, up to three tool calls), the last one a
    plain reply."""
    cwd = f"/home/dev/proj{number % 7}"
    started = T0 + number * 86_400
    script = []
    calls = 0
    for index in range(exchanges):
        steps = []
        for step in range(rng.randint(1, 5)):
            thinking = _prose(rng, 100, 1500) if rng.random() < 0.6 else None
            step_calls = []
            for _ in range(rng.randint(1, 3)):
                calls += 1
                step_calls.append(_call(rng, f"call_{number}_{calls}", cwd))
            steps.append(Step(_prose(rng, 40, 600), thinking, step_calls))
        steps.append(Step(_prose(rng, 100, 1200), _prose(rng, 100, 600) if rng.random() < 0.5 else None))
        script.append(Exchange(_prose(rng, 30, 600), steps, started + index * 300))
    return ScriptedSession(str(uuid.UUID(int=rng.getrandbits(128), version=4)), cwd, script)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _jsonl(path: Path, records) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, separators=(",", ":")) + "\n")


def _fixture_module(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, TESTS_FIXTURES / relative)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _steps(exchange: Exchange):
    """(offset seconds, step) of an exchange's steps."""
    return [(1 + 20 * i, step) for i, step in enumerate(exchange.steps)]


