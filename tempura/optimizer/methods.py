"""Plans of a standing query under each incremental method, side by side, and ``auto``'s pick.

The greedy state selection is not exact, so :func:`best_of` picks ``auto``'s plan as the cheapest
of its own and of each forced method's plan, all costed by the same extraction — with one
exception: an incremental plan replaces recomputation only when it saves at least a margin of
recomputation's objective (:data:`AUTO_MARGIN`). Its estimate rests on the arrival forecast and
on more fragments, states and exchanges than recomputation's, so a small estimated saving is
within the estimate's error, and recomputation, which keeps nothing, is the safer bet.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

from tempura.algebra import Query
from tempura.cost.vector import Objective
from tempura.errors import TempuraError
from tempura.mqo import MqoOptions
from tempura.optimizer.extract import FALLS_BACK
from tempura.optimizer.keys import Resume
from tempura.optimizer.optimizer import Optimizer
from tempura.rules.tvr import METHODS
from tempura.tvr.plan import MultiTimePlan
from tempura.tvr.time import TimePoints

FORCED = tuple(m for m in METHODS if m != "auto")
# The share of recomputation's objective an incremental plan must save for ``auto`` to take it.
AUTO_MARGIN = 0.1


def plan_methods(
    optimizer: Optimizer,
    query: Query,
    sql: str,
    time_points: TimePoints,
    objective: Objective,
    methods: Iterable[str] = METHODS,
    disabled: Iterable[str] = (),
    output: str = "snapshot",
    mqo: MqoOptions | None = None,
    errors: dict[str, TempuraError] | None = None,
    resume: Resume | None = None,
    margin: float = AUTO_MARGIN,
) -> dict[str, MultiTimePlan]:
    """Plans of ``query`` under each of ``methods``, side by side, their states chosen by ``mqo``.
    ``auto``'s is the best of its own search and every forced method's plan (:func:`best_of`), so
    its objective is never above theirs, unless it is recomputation's and the cheaper plans save
    less than ``margin`` of it; a forced method with no plan for the query (none within the state
    budget, say) is left out, its error put in ``errors``."""
    wanted = list(methods)
    plans: dict[str, MultiTimePlan] = {}
    errors = {} if errors is None else errors
    for method in dict.fromkeys([*(m for m in FORCED if m in wanted or "auto" in wanted), *wanted]):
        try:
            plans[method] = optimizer.plan_standing(query, sql, time_points, objective, method, disabled, output, mqo=mqo,
                                                  resume=resume)
        except TempuraError as error:
            errors[method] = error
    if "auto" in plans:
        cheapest = best_of(plans)
        chosen = best_of(plans, margin)
        if chosen is not cheapest:
            saving = 1 - cheapest.cost.weighted / chosen.cost.weighted
            note = (f"auto: recomputation, as the cheapest plan ({cheapest.method}) saves {saving:.1%} of its objective, "
                    f"less than the margin of {margin:.0%}")
        else:
            note = f"auto: the {chosen.method} plan is the cheapest"
        if chosen is not plans["auto"]:
            # auto was forced to nothing: the forced plan's fallbacks are no fallbacks of its
            forced = FALLS_BACK.format(method=chosen.method)
            fragments = [dataclasses.replace(f, fallback="") for f in chosen.fragments]
            chosen = dataclasses.replace(chosen, method="auto", fragments=fragments,
                                         notes=[*(n for n in chosen.notes if not n.startswith(forced)), note])
        plans["auto"] = chosen
    if not plans and errors:
        raise next(iter(errors.values()))
    return {m: plans[m] for m in wanted if m in plans}


def best_of(plans: dict[str, MultiTimePlan], margin: float = 0.0) -> MultiTimePlan:
    """``auto``'s plan: the lowest objective among ``plans`` (ties: less total work, then the
    order of the methods); but the ``batch`` plan, if there is one, when the lowest saves less
    than ``margin`` of its objective."""
    order = list(METHODS)
    best = min(plans.values(), key=lambda p: (round(p.cost.weighted, 3), round(p.cost.work, 3), order.index(p.method) if p.method in order else 0))
    batch = plans.get("batch")
    if batch is not None and best is not batch and best.cost.weighted > (1 - margin) * batch.cost.weighted:
        return batch
    return best



__all__ = ["AUTO_MARGIN", "FORCED", "METHODS", "best_of", "plan_methods"]
