"""Kilo Code sessions: two stores, both read.

Format facts: FORMAT.md.

* **The Kilo CLI's database** (the ``kilo`` CLI 1.x+ and the VS Code extension 5.x+,
  which runs the CLI as its backend): ``<data>/kilo.db``, OpenCode's SQLite schema
  unchanged (``session``, ``message.data``, ``part.data``) and its legacy ``storage/``
  JSON tree, read with OpenCode's reader (:mod:`funes.agents.opencode.parser`)
  under Kilo's harness.
* **The classic extension's task folders** (Kilo Code 4.x, a Roo Code fork):
  ``globalStorage/kilocode.kilo-code/tasks/<id>/api_conversation_history.json``, read
  with Cline's classic task reader (:mod:`funes.agents.cline.tasks`); the working
  directory comes from the environment details of the first message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from funes.agents.cline import tasks as cline_tasks
from funes.agents.cline.tasks import API_HISTORY, TaskContext
from funes.agents.kilo import AGENT, is_database_name
from funes.agents.opencode import parser as opencode
from funes.traces.model import Session, SourceUnit

HARNESS = AGENT.harness


def default_roots() -> list[Path]:
    return AGENT.roots()


def _holds_tasks(root: Path) -> bool:
    """Whether ``root`` is (or lies in) a classic extension storage, its ``tasks``
    folder or one task: the data folder of the CLI is never walked for tasks."""
    if root.is_file():
        return root.name == API_HISTORY or (root.parent / API_HISTORY).is_file()
    return (root / "tasks").is_dir() or root.name == "tasks" or (root / API_HISTORY).is_file()


def discover(root: Path) -> Iterator[SourceUnit]:
    if _holds_tasks(root):
        yield from cline_tasks.discover_tasks(HARNESS, root)
        return
    yield from opencode.discover_store(root, HARNESS, is_database_name)


def parse(unit: SourceUnit) -> Session:
    if unit.path.name == API_HISTORY:
        return cline_tasks.parse_task(unit, TaskContext())
    return opencode.parse(unit)
