"""Hugging Face agent-traces Parquet: an import format, read only by path (`funes
index FILE.parquet`), never swept and never wired.  Format facts: FORMAT.md."""

from __future__ import annotations

from pathlib import Path

from funes.agents.base import Agent


class Parquet(Agent):
    name = "parquet"
    harness = "parquet"
    label = "agent-traces Parquet"
    swept = False
    parser = "funes.agents.parquet.parser"

    def claims_location(self, path: Path) -> int:
        path = path.expanduser()
        if path.suffix == ".parquet":
            return 3
        return 1 if path.is_dir() and next(path.rglob("*.parquet"), None) is not None else 0


AGENT = Parquet()
