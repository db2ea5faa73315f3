"""Where funes's own things live on disk.  Every function reads the environment when
called, so tests (and hooks) that set HOME or FUNES_HOME see their own paths.  An
agent's homes belong to its definition (:meth:`funes.agents.Agent.home`)."""

from __future__ import annotations

import os
from pathlib import Path


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def funes_home() -> Path:
    """``$FUNES_HOME``, default ``~/.funes``: the memory, its indexes, state and logs."""
    return _env_path("FUNES_HOME") or Path.home() / ".funes"


def memory_dir(home: Path | None = None) -> Path:
    return (home or funes_home()) / "memory"


def state_dir(home: Path | None = None) -> Path:
    return (home or funes_home()) / "state"


def logs_dir(home: Path | None = None) -> Path:
    return (home or funes_home()) / "logs"


def dagster_home(home: Path | None = None) -> Path:
    return (home or funes_home()) / "dagster"


def cache_dir() -> Path:
    """Derived files that any memory can share and that can be rebuilt at will (the
    ONNX export of the shipped weights, compiled secret rules): ``$FUNES_CACHE_DIR``,
    default ``$FUNES_HOME/cache``."""
    return _env_path("FUNES_CACHE_DIR") or funes_home() / "cache"


def models_dir() -> Path:
    return cache_dir() / "models"
