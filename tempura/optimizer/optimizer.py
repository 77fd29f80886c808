"""The optimizer: one-off and standing queries planned by one driver over named phases.

:class:`Optimizer` holds what planning depends on besides the query — the estimator, the arrival
model of a standing query's sources, the cost constants — and runs a pipeline of
:mod:`tempura.optimizer.phases` over a :class:`~tempura.optimizer.phases.Planning`: the one-off
pipeline for :meth:`Optimizer.plan`, the standing one for :meth:`Optimizer.plan_standing`.

Rules and phases are disabled by name (``disabled``), checked once against the rule registry
(:mod:`tempura.rules.registry`) and the phases' names; an unknown name is one error naming the
closest known one.
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterable

from tempura.algebra import LogicalPlan, PartialAggregate, Query
from tempura.cost.model import CostConstants
from tempura.cost.operators import SparkCosts
from tempura.cost.vector import Objective
from tempura.errors import TempuraError
from tempura.infer import TvrEstimator
from tempura.memo import SearchReport, Trace
from tempura.mqo import Instance, MqoOptions
from tempura.optimizer.keys import Resume
from tempura.optimizer.phases import ONE_OFF, PHASES, STANDING, Planning, Standing, instance
from tempura.optimizer.pipeline import PhaseRecord, gc_paused
from tempura.optimizer.plans import PlannedQuery
from tempura.rules.logical.reorder import DP_LIMIT
from tempura.rules.physical.aggregate import partial_aggregate_stats
from tempura.rules.registry import REGISTRY
from tempura.stats.estimate import Estimator
from tempura.stats.relation import RelStats
from tempura.tvr.bounds import ArrivalBounds
from tempura.tvr.plan import MultiTimePlan
from tempura.tvr.time import TimePoints


@dataclass(frozen=True)
class Arrival:
    """What the optimizer needs of the arrival model: each source's share of rows per interval,
    whether it deletes, and what its reads are proven to hold (:mod:`tempura.tvr.bounds`)."""

    fraction: Callable[[str, int, int], float]
    insert_only: Callable[[str], bool]
    bounds: ArrivalBounds = field(default_factory=lambda: ArrivalBounds({}))

    @staticmethod
    def uniform(k: int, deletions: Iterable[str] = ()) -> Arrival:
        """Every source's rows spread evenly over the ``k`` intervals."""
        with_deletions = set(deletions)
        return Arrival(lambda _t, start, end: (end - start) / k, lambda table: table not in with_deletions)


def _alive(ref: weakref.ref[Planning]) -> Planning:
    planning = ref()
    if planning is None:
        raise TempuraError("internal: statistics asked of a memo whose planning was dropped")
    return planning


def check_names(disabled: Iterable[str]) -> frozenset[str]:
    """``disabled`` as a set of known rule and phase names (the one check)."""
    return REGISTRY.check(disabled, PHASES)


class Optimizer:
    """Plans queries with one estimator, arrival model (for standing queries) and set of cost
    constants."""

    def __init__(self, estimator: Estimator, arrival: Arrival | None = None, constants: CostConstants | None = None,
                 dp_limit: int = DP_LIMIT) -> None:
        self.estimator = estimator
        self.arrival = arrival or Arrival.uniform(1)
        self.costs = SparkCosts(constants)
        self.dp_limit = dp_limit
        self.tvr_estimator = TvrEstimator(estimator, self.arrival.fraction, self.arrival.bounds)

    def _planning(self, query: Query, off: frozenset[str], standing: Standing | None, trace: bool = False) -> Planning:
        planning = Planning(query, off, self.costs, self.estimator.derive, self.dp_limit, standing, Trace() if trace else None)
        if standing is None:  # the one-off plan hands its memo out (explain reads it)
            planning.derive = lambda expr, inputs: self._derive(planning, expr, inputs)
            return planning
        # The memo keeps the deriver, and the planning keeps the memo: a weak reference back keeps
        # that from being a cycle, so dropping the planning frees the memo at once (see Group).
        ref = weakref.ref(planning)
        planning.derive = lambda expr, inputs: self._derive(_alive(ref), expr, inputs)
        return planning

    def _derive(self, planning: Planning, expr: LogicalPlan, inputs: list[RelStats]) -> RelStats:
        if isinstance(expr, PartialAggregate):
            groups = self.estimator.group_count(inputs[0], list(expr.keys)) if expr.keys else 1.0
            return partial_aggregate_stats(expr, inputs[0], groups, self.costs)
        if planning.standing is None:
            return self.estimator.derive(expr, inputs)
        stats = self.tvr_estimator.derive(expr, inputs)
        if planning.prover is not None and planning.prover.expr_empty(expr):
            return dataclasses.replace(stats, rows=0.0)
        return stats

    def plan(self, query: Query, disabled: Iterable[str] = (), trace: bool = False) -> PlannedQuery:
        """The cheapest plan of a one-off ``query``, its rules and phases minus ``disabled``."""
        planning = self._planning(query, check_names(disabled), None, trace)
        phases = ONE_OFF.run(planning, planning.off)
        memo, search = planning.the_memo(), planning.search
        assert search is not None and planning.physical is not None and isinstance(planning.result, LogicalPlan)
        groups, exprs = memo.size()
        report = SearchReport(groups=groups, expressions=exprs, rule_firings=planning.firings,
                              alternatives=search.stats.alternatives, pruned=search.stats.pruned,
                              winners=search.winner_count, seconds=sum(p.seconds for p in phases))
        planned = dataclasses.replace(query, plan=planning.result)
        return PlannedQuery(planned, planning.physical, planning.hints, memo, report, planning.tracer, planning.fired, phases)

    def _standing(self, query: Query, sql: str, time_points: TimePoints, objective: Objective, method: str,
                  disabled: Iterable[str], output: str, mqo: MqoOptions | None, resume: Resume | None) -> Planning:
        if output not in ("snapshot", "delta"):
            raise TempuraError(f"unknown output mode '{output}' (known: snapshot, delta)")
        if objective.k != time_points.k:
            raise TempuraError(f"the objective has {objective.k} weights for {time_points.k} time points")
        off = check_names(disabled)
        options = mqo or MqoOptions()
        if options.selector == "off":  # the selector that selects nothing: the phase disabled
            off, options = off | {"select-states"}, dataclasses.replace(options, selector="auto")
        standing = Standing(sql, time_points, objective, method, output, options, resume or Resume(1),
                            self.arrival.insert_only, self.arrival.bounds, self.arrival.fraction)
        return self._planning(query, off, standing)

    def plan_standing(
        self,
        query: Query,
        sql: str,
        time_points: TimePoints,
        objective: Objective,
        method: str = "auto",
        disabled: Iterable[str] = (),
        output: str = "snapshot",
        mqo: MqoOptions | None = None,
        resume: Resume | None = None,
    ) -> MultiTimePlan:
        """The cheapest plan of ``query`` over ``time_points`` with the rules of ``method``.

        ``output="snapshot"`` delivers ``SS[v]`` at each delivery ``v``; ``output="delta"``
        delivers the change since the previous time point, ``SD[v-1,v]``. ``mqo`` says how the
        kept states are chosen (:mod:`tempura.mqo`). ``resume`` re-plans a cycle whose first time
        points are committed: the plan runs from ``resume.floor`` on, delivers only from there,
        and may read the committed states at the cost of a read. ``disabled`` names rules and
        phases (``copy``, ``select-states``, …) to leave out.

        The garbage collector stays paused while planning (:func:`gc_paused`). The memo holds no
        reference cycle (its groups refer back to it, and its deriver to the planning, weakly), so
        dropping the planning frees it by reference counting; no collector pass has to scan its
        hundreds of thousands of objects (about a sixth of an ``auto`` planning's time, measured)."""
        with gc_paused():
            return self._plan_standing(query, sql, time_points, objective, method, disabled, output, mqo, resume)

    def _plan_standing(self, query: Query, sql: str, time_points: TimePoints, objective: Objective, method: str,
                       disabled: Iterable[str], output: str, mqo: MqoOptions | None, resume: Resume | None) -> MultiTimePlan:
        planning = self._standing(query, sql, time_points, objective, method, disabled, output, mqo, resume)
        phases = STANDING.run(planning, planning.off)
        plan = planning.result
        assert isinstance(plan, MultiTimePlan) and planning.search is not None
        expansion, memo = planning.the_expansion(), planning.the_memo()
        groups, exprs = memo.size()
        plan.search = {
            "template_groups": planning.template_groups,
            "groups": groups,
            "expressions": exprs,
            "forms": expansion.report.forms,
            "copied": expansion.report.copied,
            "tvr_rule_firings": dict(sorted(expansion.report.firings.items())),
            "alternatives": planning.search.stats.alternatives,
            "winners": planning.search.winner_count,
            **phase_seconds(phases),
            **({"mqo": planning.selection.report(planning.selection.table.instance)} if planning.selection is not None else {}),
        }
        return plan

    def state_instance(self, query: Query, time_points: TimePoints, objective: Objective, method: str = "auto",
                       budget: float | None = None) -> tuple[Instance, set[int]]:
        """The state selection's instance for ``query`` (pruned), and the kept set of the memo
        search's own plan: what :func:`~tempura.mqo.select` is given (the MQO benchmark)."""
        planning = self._standing(query, "", time_points, objective, method, (), "snapshot", None, None)
        STANDING.run(planning, planning.off, until="search")
        _built, pruned, start = instance(planning, budget)
        return pruned.instance, start


def phase_seconds(phases: list[PhaseRecord]) -> dict[str, object]:
    """A standing plan's timings: each phase's, and the totals of its stages (the template, the
    expansion over time, the search, the state selection and extraction)."""
    seconds = {p.name: p.seconds for p in phases}

    def total(*names: str) -> float:
        return sum(seconds.get(n, 0.0) for n in names)

    return {
        "phase_seconds": {p.name: round(p.seconds, 6) for p in phases},
        "phase_notes": {p.name: p.note for p in phases},
        "template_seconds": total("normalize", "explore", "implement"),
        "expand_seconds": total("expand", "copy", "rewrite-expanded"),
        "search_seconds": total("collapse", "search"),
        "mqo_seconds": total("select-states", "extract"),
        "seconds": total(*seconds),
    }


__all__ = ["Arrival", "Optimizer", "check_names", "phase_seconds"]
