"""Greedy state selection: the Tempura seed's Algorithm 1 (Greedy MQO, after Roy et al., 2000).

Starting from a kept set ``S``, repeatedly pick the candidate whose addition lowers the objective
of the best plan the most; keep it while the objective improves; stop when no candidate does.
Trying a candidate is a staged change of the :class:`~tempura.mqo.costs.CostTable`, rolled back
afterwards, so each trial costs only the nodes whose cost it changes.

**Lazy re-evaluation.** Candidates wait in a priority queue under their last computed gain.
After a commit, gains are stale, but (Roy et al.'s monotonicity assumption) keeping more states
only shrinks the others' gains, so a stale gain is an upper bound: the candidate on top is
re-evaluated, and taken if its fresh gain is still at least the next stale one; otherwise it goes
back with its fresh gain. Most candidates are never re-evaluated.

**Departures from the seed**, each measured by the benchmark against the ILP optimum:

- the start is the plan of the memo search without sharing (the DP that prices each read of a
  state as computing, saving and loading it), not the empty set: it is a good plan already, and
  for the forced methods, which cannot recompute, the empty set has no plan at all;
- after the additions, a pass drops every kept state whose removal does not raise the objective
  (states the best plan no longer reads, or that a later addition made redundant);
- a **budget** on kept bytes (the most kept at once) is a stopping rule: a candidate whose
  addition would exceed it is discarded, and the greedy stops when no candidate both fits and
  improves.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from typing import Iterable

from tempura.errors import TempuraError
from tempura.mqo.costs import CostTable
from tempura.mqo.instance import Instance

RELATIVE_TOLERANCE = 1e-12


@dataclass
class GreedyResult:
    """The kept set the greedy chose, its objective, and how the search went."""

    kept: set[int]
    objective: float
    seconds: float
    trials: int
    commits: int
    dropped: int
    evaluations: int
    start: str


class NoGreedyPlan(TempuraError):
    """The greedy has no plan to start from: neither its start nor the empty set has one within
    the budget."""


def greedy(instance: Instance, start: Iterable[int] = (), budget: float | None = None) -> GreedyResult:
    """Algorithm 1 over ``instance`` from the kept set ``start``."""
    began = time.perf_counter()
    table = CostTable(instance, start)
    origin = "search plan" if table.kept else "nothing kept"
    if budget is not None and table.states().peak_bytes(instance) > budget:
        table = CostTable(instance, ())
        origin = "nothing kept (the search plan exceeds the budget)"
    current = table.objective()
    if not math.isfinite(current):
        raise NoGreedyPlan(f"no plan to start the greedy from ({origin})")
    trials = commits = 0
    heap: list[tuple[float, int, int]] = []  # (-gain, candidate, round the gain was computed in)

    def gain(candidate: int) -> float | None:
        nonlocal trials
        trials += 1
        after = table.stage(add=[candidate])
        fits = budget is None or table.states().peak_bytes(instance) <= budget
        table.rollback()
        return current - after if fits else None

    for c in range(len(instance.candidates)):
        if c in table.kept:
            continue
        g = gain(c)
        if g is not None:
            heap.append((-g, c, 0))
    heapq.heapify(heap)
    round_ = 0
    while heap:
        neg, c, computed = heapq.heappop(heap)
        if computed != round_:
            g = gain(c)
            if g is None:
                continue  # no longer fits the budget: discarded
            if heap and g < -heap[0][0]:
                heapq.heappush(heap, (-g, c, round_))
                continue
        else:
            g = -neg
        if g <= RELATIVE_TOLERANCE * abs(current):
            break  # the best candidate does not improve the objective: stop (Algorithm 1, line 9)
        table.stage(add=[c])
        table.commit()
        current = table.objective()
        commits += 1
        round_ += 1
    dropped = drop_unneeded(table, budget)
    return GreedyResult(table.kept, table.objective(), time.perf_counter() - began, trials, commits, dropped,
                        table.evaluations, origin)


def drop_unneeded(table: CostTable, budget: float | None) -> int:
    """Drop kept states whose removal does not raise the objective; returns how many."""
    dropped = 0
    current = table.objective()
    for c in sorted(table.kept, key=lambda c: -table.instance.candidates[c].bytes):
        after = table.stage(remove=[c])
        if after <= current and (budget is None or table.states().peak_bytes(table.instance) <= budget):
            table.commit()
            current = after
            dropped += 1
        else:
            table.rollback()
    return dropped
