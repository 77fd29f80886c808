"""Progress bars for runs: one bar per time point, advanced by each landed source and fragment."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


@contextmanager
def progress_bars(console: Console) -> Iterator[Callable[[str, int, int], None]]:
    """A callback ``(what, done, total)`` drawing a bar per time point (keyed by the text before
    the first ``": "``: a time of day's colon is not followed by a space)."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        tasks: dict[str, TaskID] = {}

        def update(what: str, done: int, total: int) -> None:
            key = what.split(": ", 1)[0]
            task = tasks.get(key)
            if task is None:
                task = tasks[key] = progress.add_task(escape(what), total=total)
            progress.update(task, description=escape(what), completed=done, total=total)  # "[ivm]" is no markup

        yield update
