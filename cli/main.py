"""Entry point of the `funes` console script."""

from __future__ import annotations


def run() -> None:
    raise SystemExit("funes: not implemented yet")
