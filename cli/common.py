"""What every command shares: terminals, progress bars, confirmations, JSON output."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from funes.errors import UsageError


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def interactive() -> bool:
    """A person at a terminal (both ends), who can be asked and shown progress."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def note(message: str) -> None:
    """A human-facing line on stderr (stdout stays clean for data)."""
    print(message, file=sys.stderr)


def warn_if_damaged(memory: Any) -> None:
    """One line on stderr when a reader served a damaged memory (what it could read)."""
    if memory.damage:
        note(f"funes: warning: memory at {memory.location.label} is damaged: {memory.damage.describe()};"
             " what can be read is served: run `funes repair` to restore it")


T = TypeVar("T")


def read_memory(memory: str | None, read: Callable[[Any], T]) -> T:
    """What ``read`` finds in the memory named ``memory`` (opened for reading); a damaged
    memory is served as far as it can be read, with its warning line after."""
    from funes.retrieval.access import open_memory

    opened = open_memory(memory)
    try:
        return read(opened)
    finally:
        warn_if_damaged(opened)


def print_answer(answer: T, as_json: bool, json_of: Callable[[T], Any], text_of: Callable[[T], str]) -> None:
    """A reading command's answer on stdout: one JSON value, or the agent format."""
    if as_json:
        print_json(json_of(answer))
    else:
        sys.stdout.write(text_of(answer) + "\n")


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=None) + "\n")


def confirm(question: str, *, default: bool, assume_yes: bool) -> bool:
    if assume_yes:
        return True
    if not interactive():
        return False
    import typer

    return typer.confirm(question, default=default, err=True)


def embed_progress_text(detail: Any) -> str:
    """What the embedding bar says beside its counts (``detail``: an
    :class:`funes.indexing.EmbedProgress`): chunks/s, dense coverage, and the time
    left from the characters/s measured so far (cost follows tokens: the backlog's
    last tier, tool output, is long)."""
    from funes.retrieval.status import duration_text

    seconds = max(detail.seconds, 1e-3)
    coverage = detail.embedded / detail.embeddable if detail.embeddable else 1.0
    text = f"{detail.chunks_done / seconds:.0f} chunks/s · dense {coverage:.0%}"
    chars_per_s = detail.chars_done / seconds
    if detail.chars_done < detail.chars_total and chars_per_s:
        text += f" · ~{duration_text((detail.chars_total - detail.chars_done) / chars_per_s)} left"
    return text


class ProgressBars:
    """Rich progress bars on a terminal (one per stage), nothing when piped.

    Each :meth:`shown` is a new display with its own task ids, so a stage shown
    again (the rest of the backlog, after a question) gets a new bar.  A stage that
    reports an :class:`funes.indexing.EmbedProgress` shows its rate, coverage and
    time left instead of rich's estimate from chunks."""

    def __init__(self) -> None:
        self._progress = None
        self._tasks: dict[str, Any] = {}

    def __call__(self, stage: str, advance: int, total: int | None, detail: Any = None) -> None:
        if self._progress is None:
            return
        task = self._tasks.get(stage)
        if task is None:
            task = self._progress.add_task(stage, total=total, detail="")
            self._tasks[stage] = task
        elif total is not None:
            self._progress.update(task, total=total)
        if detail is not None:
            self._progress.update(task, detail=embed_progress_text(detail))
        self._progress.advance(task, advance)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        from rich.text import Text

        class Remaining(TimeRemainingColumn):
            def render(self, task: Any) -> Text:
                detail = task.fields.get("detail")
                if not detail:
                    return super().render(task)
                return Text(detail, style="progress.remaining", no_wrap=True, overflow="ellipsis")

        self._progress = Progress(TextColumn("{task.description:>8}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                                  Remaining(), console=Console(stderr=True), transient=False)
        self._tasks = {}
        self._progress.start()

    def _stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._progress = None
        self._tasks = {}

    @contextmanager
    def shown(self) -> Iterator[ProgressBars]:
        if not stderr_is_terminal():
            yield self
            return
        self._start()
        try:
            yield self
        finally:
            self._stop()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The bars off the terminal while a question is asked; a new display after it."""
        if self._progress is None:
            yield
            return
        self._stop()
        try:
            yield
        finally:
            self._start()


def require_positive(name: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{name} must be a positive integer, got {value}")
