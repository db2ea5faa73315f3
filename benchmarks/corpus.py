"""Realistic transcript text for the embedding and reranking benchmarks.

Texts are the message, thinking, command, diff and tool-output strings of the real
agent transcripts in ``tests/fixtures/real`` (read generically from the JSON, so
no parser is needed); ids, paths, signatures and other metadata are left out.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

from funes.chunking import split_text

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
# JSON keys whose string values are what a memory indexes: what people and agents
# wrote, the commands they ran and what the tools printed.
TEXT_KEYS = {
    "text", "content", "thinking", "command", "arguments", "input", "prompt", "summary",
    "stdout", "output", "result", "results", "toolUseResult", "diff",
    "newText", "oldText", "newString", "oldString", "new_string", "old_string",
}


def _strings(value: object, key: str | None) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)
    elif isinstance(value, str) and key in TEXT_KEYS and value.strip():
        yield value


def real_texts(min_chars: int = 1) -> list[str]:
    """Distinct transcript texts of at least ``min_chars`` characters, in file order."""
    seen: dict[str, None] = {}
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            for text in _strings(record, None):
                if len(text) >= min_chars:
                    seen.setdefault(text, None)
    return list(seen)


def chunks_of_size(size: int, count: int, seed: int = 0) -> list[str]:
    """``count`` chunks of exactly ``size`` characters cut at random offsets from the
    real texts long enough to hold one (distinct, so a large sample is not a few
    chunks repeated)."""
    rng = random.Random(seed)
    sources = [t for t in real_texts() if len(t) >= size]
    weights = [len(t) - size + 1 for t in sources]
    chunks = []
    for text in rng.choices(sources, weights=weights, k=count):
        start = rng.randrange(len(text) - size + 1)
        chunks.append(text[start : start + size])
    return chunks


def realistic_chunks(count: int, split_size: int = 1200, seed: int = 0) -> list[str]:
    """``count`` distinct chunks whose lengths follow those of the real texts split
    by the memory's splitter at ``split_size`` (short messages whole, long outputs
    in pieces), each cut at a random offset of a real text so no two are the same."""
    rng = random.Random(seed)
    texts = real_texts()
    lengths = [len(piece) for text in texts for _, piece in split_text(text, split_size)]
    long_texts = [t for t in texts if len(t) >= split_size]
    chunks = []
    for length in rng.choices(lengths, k=count):
        text = rng.choice(long_texts)
        start = rng.randrange(len(text) - length + 1)
        chunks.append(text[start : start + length])
    return chunks
