"""Choosing the kept states: the greedy, the ILP, or both, and a budget that cannot be met.

:func:`select` runs the greedy (:mod:`tempura.mqo.greedy`) on every instance. The ILP
(:mod:`tempura.mqo.ilp`) is the selector itself when the instance is small enough — at most
``ilp_limit`` binary variables — and otherwise only when asked to measure the greedy's gap, or
when the greedy has no plan within the budget. The :class:`Selection` records which selector
decided, both objectives when both ran, and the cost table of the chosen set, from which the
plan is extracted.

A budget no plan can meet is an error that states the smallest budget that works (the least
peak of kept bytes, :func:`~tempura.mqo.ilp.smallest_budget`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from tempura.cost.model import format_bytes
from tempura.errors import TempuraError
from tempura.mqo import ilp
from tempura.mqo.costs import CostTable
from tempura.mqo.greedy import GreedyResult, NoGreedyPlan, drop_unneeded, greedy
from tempura.mqo.instance import Instance

SELECTORS = ("auto", "greedy", "ilp", "off")
DEFAULT_ILP_LIMIT = 200
DEFAULT_TIME_LIMIT = 10.0
DEFAULT_PROOF_LIMIT = 1.0
DEFAULT_PROOF_GAP = 1e-3
TIE_TOLERANCE = 1e-9  # relative: objectives closer than this are equal


@dataclass(frozen=True)
class MqoOptions:
    """How states are chosen.

    ``selector``: ``auto`` (the ILP decides when the instance has at most ``ilp_limit`` binaries,
    the greedy otherwise), ``greedy`` or ``ilp`` (always); ``off``: the planner keeps the memo
    search's own plan, which prices each read of a state alone and shares nothing. ``budget``: the most bytes kept at once.
    ``check``: solve the ILP beside the greedy even above the limit, to measure the gap.
    ``time_limit``: seconds the solver may take before its best solution so far is used.
    ``proof_limit``: under ``auto``, when the greedy has a plan, the ILP only improves on it or
    proves it optimal: it gets this many seconds (the greedy's plan is usually optimal already,
    and proving it can take the solver far longer than finding it). ``proof_gap``: in that case a
    plan proven within this share of the optimum stands, as no plan can save more than that: the
    estimates it rests on are far coarser, and closing the last fraction of a percent is where
    the solver spends its time."""

    selector: str = "auto"
    ilp_limit: int = DEFAULT_ILP_LIMIT
    budget: float | None = None
    check: bool = False
    time_limit: float = DEFAULT_TIME_LIMIT
    proof_limit: float = DEFAULT_PROOF_LIMIT
    proof_gap: float = DEFAULT_PROOF_GAP

    def __post_init__(self) -> None:
        if self.selector not in SELECTORS:
            raise TempuraError(f"unknown state selector '{self.selector}' (known: {', '.join(SELECTORS)})")
        if self.ilp_limit < 0:
            raise TempuraError("the ILP's limit on binary variables must not be negative")
        if not 0 <= self.proof_gap < 1:
            raise TempuraError("the proof gap is a share of the optimum, at least 0 and below 1")
        if self.budget is not None and self.budget < 0:
            raise TempuraError("a state budget must not be negative")


class BudgetError(TempuraError):
    """No plan keeps its states within the budget."""


@dataclass
class Selection:
    """The kept set chosen, who chose it, and the cost table of its best plan."""

    kept: set[int]
    objective: float
    selector: str
    table: CostTable
    greedy: GreedyResult | None
    ilp: ilp.IlpResult | None

    @property
    def gap(self) -> float | None:
        """The greedy's objective over the ILP's proven optimum, or the plan proven within the
        proof gap of it (1.0: the greedy is optimal, or as good as proven)."""
        if self.greedy is None or self.ilp is None or not self.ilp.optimal or not math.isfinite(self.ilp.objective):
            return None
        if self.ilp.objective <= 0:
            return 1.0
        return self.greedy.objective / self.ilp.objective

    def report(self, instance: Instance) -> dict[str, Any]:
        out: dict[str, Any] = {
            "selector": self.selector,
            "nodes": instance.size,
            "ops": instance.op_count,
            "candidates": len(instance.candidates),
            "binaries": instance.binaries(),
            "kept": len(self.kept),
            "objective": self.objective,
        }
        if self.greedy is not None:
            g = self.greedy
            out["greedy"] = {"objective": g.objective, "seconds": g.seconds, "trials": g.trials,
                             "commits": g.commits, "dropped": g.dropped, "start": g.start}
        if self.ilp is not None:
            i = self.ilp
            out["ilp"] = {"objective": i.objective, "seconds": i.seconds, "optimal": i.optimal,
                          "status": i.status, "solver": i.solver, "binaries": i.binaries, "gap": i.gap}
        if self.gap is not None:
            out["greedy_gap"] = self.gap
        return out


def select(instance: Instance, start: Iterable[int] = (), options: MqoOptions = MqoOptions()) -> Selection:
    """The states to keep for ``instance``, starting the greedy from ``start``."""
    if options.selector == "off":
        raise TempuraError("the 'off' selector chooses nothing: the planner keeps the search's plan")
    budget = options.budget
    found: GreedyResult | None
    try:
        found = greedy(instance, start, budget) if options.selector != "ilp" else None
    except NoGreedyPlan:
        found = None
    small = instance.binaries() <= options.ilp_limit
    as_selector = options.selector == "ilp" or (options.selector == "auto" and small) or found is None
    upper = found.objective if found is not None else None
    limit, gap = options.time_limit, 0.0
    if options.selector == "auto" and found is not None and not options.check:
        limit, gap = min(limit, options.proof_limit), options.proof_gap
    solved = ilp.solve(instance, budget, limit, upper, found.kept if found else None, gap) if as_selector or options.check else None
    if solved is not None and not math.isfinite(solved.objective):
        solved = None  # infeasible, or no solution within the time limit
    if found is None and solved is None:
        if budget is not None:
            least, proven = ilp.smallest_budget(instance, options.time_limit)
            raise BudgetError(f"no plan keeps its states within the budget of {format_bytes(budget)}: the smallest budget "
                              f"that works is {'' if proven else 'about '}{format_bytes(least, up=True)}")
        raise TempuraError("no plan delivers the results with the states this method may keep")
    greedy_table = CostTable(instance, found.kept) if found is not None else None
    if solved is not None and as_selector:
        table = CostTable(instance, solved.kept, solved.until)
        drop_unneeded(table, budget)  # among equally cheap plans, the one keeping less
        # A solve stopped by its time limit may be worse than the greedy's, and among equally
        # cheap plans the solver's pick depends on its search: the greedy's plan, which is
        # deterministic, decides unless the solver's is strictly cheaper.
        if greedy_table is None or table.objective() < greedy_table.objective() * (1 - TIE_TOLERANCE):
            return Selection(table.kept, table.objective(), "ilp", table, found, solved)
    assert found is not None and greedy_table is not None
    return Selection(set(found.kept), greedy_table.objective(), "greedy", greedy_table, found, solved)

