"""A byte-count progress display: rich's bar when rich is installed, plain lines otherwise.

``pawl import-dataset-items`` (pawl/cli/datasets.py) shows its progress through this; rich is
in the ``local`` extra, and a core install still sees how far an import got.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Protocol

#: A plain display prints a line each time a task passes another tenth of its total.
STEPS = 10


class ByteProgress(Protocol):
    """The part of ``rich.progress.Progress`` the importer uses."""

    def add_task(self, description: str, *, total: float | None = ...) -> Any: ...

    def update(self, task_id: Any, *, completed: float | None = ...) -> None: ...


def progress_line(description: str, completed: float, total: float) -> str:
    """``checking  40% (4,000 of 10,000 bytes)``."""
    share = 100 if total <= 0 else min(100, int(100 * completed / total))
    return f"{description} {share:3d}% ({int(completed):,} of {int(total):,} bytes)"


class PlainProgress:
    """Prints :func:`progress_line` at each tenth of a task, and once at its end."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._tasks: list[tuple[str, float]] = []
        self._shown: dict[int, int] = {}

    def add_task(self, description: str, *, total: float | None = None) -> int:
        self._tasks.append((description, float(total or 0)))
        self._shown[len(self._tasks) - 1] = -1
        return len(self._tasks) - 1

    def update(self, task_id: int, *, completed: float | None = None) -> None:
        description, total = self._tasks[task_id]
        done = float(completed or 0)
        step = STEPS if total <= 0 else min(STEPS, int(STEPS * done / total))
        if step > self._shown[task_id]:
            self._shown[task_id] = step
            print(progress_line(description, done, total), file=self._stream, flush=True)


@contextmanager
def byte_progress(stream: IO[str] | None = None) -> Iterator[ByteProgress]:
    """rich's bar (description, bar, done/total) if rich is importable, else plain lines."""
    try:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    except ModuleNotFoundError:
        yield PlainProgress(stream or sys.stderr)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TextColumn("bytes"), transient=False) as progress:
        yield progress
