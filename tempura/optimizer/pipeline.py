"""The optimizer's driver: a tuple of named phases run in order over one planning.

A :class:`Phase` is a step of the optimizer with a name a user can disable (``--no-rule
copy``, like a rule), a docstring saying what it does, and what happens in its place when it is
disabled (``off``: a phase without one is simply skipped; a ``required`` phase refuses to be
disabled). :class:`Pipeline` runs the phases, times each one and records what it did
(:class:`PhaseRecord`), which ``explain --trace`` prints and a standing plan keeps in its
``search`` report.

Python's cyclic garbage collector is paused while a pipeline runs (:func:`gc_paused`).
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, TypeVar

from tempura.errors import TempuraError

P = TypeVar("P")


@dataclass(frozen=True)
class Phase(Generic[P]):
    """A named step over a planning ``P``: ``run`` does it and returns a line saying what it did;
    ``off`` (if any) is what is done instead when the phase is disabled."""

    name: str
    run: Callable[[P], str]
    doc: str
    off: Callable[[P], str] | None = None
    required: bool = False


@dataclass(frozen=True)
class PhaseRecord:
    """What one phase did: ``ran`` is false when it was disabled (``note`` then says what was
    done instead)."""

    name: str
    seconds: float
    ran: bool
    note: str

    def __str__(self) -> str:
        state = "" if self.ran else " (disabled)"
        return f"{self.name}{state}: {self.note} [{self.seconds * 1000:.0f} ms]"


class Pipeline(Generic[P]):
    """Runs ``phases`` in order."""

    def __init__(self, phases: tuple[Phase[P], ...]) -> None:
        self.phases = phases
        names = [p.name for p in phases]
        if len(set(names)) != len(names):
            raise ValueError(f"two phases of one name in {names}")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.phases]

    def run(self, planning: P, disabled: frozenset[str] = frozenset(), until: str | None = None) -> list[PhaseRecord]:
        """Every phase over ``planning`` (up to and including ``until``), minus ``disabled``."""
        records: list[PhaseRecord] = []
        with gc_paused():
            for phase in self.phases:
                started = time.perf_counter()
                if phase.name in disabled:
                    if phase.required:
                        raise TempuraError(f"the {phase.name} phase cannot be disabled: every plan needs it")
                    note = phase.off(planning) if phase.off is not None else "skipped"
                    records.append(PhaseRecord(phase.name, time.perf_counter() - started, False, note))
                else:
                    note = phase.run(planning)
                    records.append(PhaseRecord(phase.name, time.perf_counter() - started, True, note))
                if phase.name == until:
                    break
        return records


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a memo is built and searched.

    Planning allocates hundreds of thousands of small, long-lived objects (memo expressions,
    statistics, cost vectors) and frees almost none, so the collector's passes find nothing to
    collect and took a fifth of the planning time; reference counting still frees what dies,
    and the collector runs as usual once planning ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


__all__ = ["Phase", "PhaseRecord", "Pipeline", "gc_paused"]
