"""Roo Code (RooCodeInc/Roo-Code), a fork of Cline's classic extension: task folders.

Format facts: FORMAT.md.  ``<storage>/tasks/<task id>/`` (task ids are
UUIDs) in each editor's ``globalStorage/rooveterinaryinc.roo-cline``, in the folder
the ``roo-cline.customStoragePath`` setting names instead, and, for the Roo CLI, in
``~/.vscode-mock/global-storage``.  Parsed by Cline's classic reader (:mod:`funes.agents.cline.tasks`, the format Roo
forked); what
Roo adds is read here: ``history_item.json`` beside the history gives the workspace
(cwd) and ``parentTaskId`` (a ``new_task`` subtask's parent).  Roo stamps every
message with ``ts``, keeps condensed messages in place (tagged ``condenseParent``)
behind an ``isSummary`` message, and inserts ``isTruncationMarker`` messages; the
summaries and markers are skipped, the tagged originals kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from funes.agents.cline import tasks as cline_tasks
from funes.agents.cline.tasks import TaskContext
from funes.agents.roo import AGENT
from funes.traces.common import as_str, opt_str
from funes.traces.model import Session, SourceUnit

HARNESS = AGENT.harness
HISTORY_ITEM = "history_item.json"


def default_roots() -> list[Path]:
    return AGENT.roots()


def discover(root: Path) -> Iterator[SourceUnit]:
    return cline_tasks.discover_tasks(HARNESS, root)


def _context(task_dir: Path) -> TaskContext:
    item = cline_tasks.read_json_object(task_dir / HISTORY_ITEM)
    parent = opt_str(item.get("parentTaskId"))
    return TaskContext(cwd=as_str(item.get("workspace")), parent_session_id=parent, is_subagent=parent is not None)


def parse(unit: SourceUnit) -> Session:
    return cline_tasks.parse_task(unit, _context(unit.path.parent))
