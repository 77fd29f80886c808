"""The optimizer driver: normalization, memo exploration, physical search, extraction.

:class:`Planner` runs the phases for one query:

1. ``rules.logical.normalize`` — predicate pushdown and projection pruning to a fixpoint;
2. the plan goes into a :class:`~tempura.memo.Memo` (inner joins in canonical form), and the
   rule engine explores it with the join rules (``join-reorder``, ``join-commute``,
   ``join-associate``, ``join-push-through-join``) until no rule adds anything, then collapses
   stacked filters and projections (:mod:`tempura.rules.logical.collapse`);
3. the :class:`~tempura.memo.Search` finds the cheapest physical plan with
   :class:`~tempura.rules.physical.SparkImplementer`;
4. the winner is turned back into a logical plan in its chosen join order, with one join hint
   per join (``BROADCAST``, ``SHUFFLE_HASH`` or ``MERGE`` on a side) that the SQL back end prints
   so Spark runs the algorithms that were costed.

Every rule has a name and can be disabled; an unknown name is an error that lists the known ones.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from tempura.algebra import LogicalPlan, Project, Projection, Query, SetOperation, col
from tempura.cost.model import CostConstants
from tempura.cost.operators import SparkCosts
from tempura.errors import TempuraError
from tempura.memo import GroupRef, Memo, PhysicalPlan, Rule, RuleEngine, Search, SearchReport, Trace
from tempura.rules.logical import PRUNE
from tempura.rules.logical import RULES as NORMALIZATION_RULES
from tempura.rules.logical.collapse import NAMES as COLLAPSE_RULES
from tempura.rules.logical.collapse import collapse
from tempura.rules.logical import normalize
from tempura.rules.logical.joins import JoinAssociate, JoinCommute, JoinPushThroughJoin, canonical_joins
from tempura.rules.logical.reorder import DP_LIMIT, JoinReorder
from tempura.rules.physical import RULES as PHYSICAL_RULES
from tempura.rules.physical import PartialAggregate, SparkImplementer
from tempura.stats.estimate import Estimator
from tempura.stats.relation import RelStats

JoinHint = tuple[str, str]  # (strategy, side): ("BROADCAST", "right"); a single-task sort's ("COALESCE", "1")


def exploration_rules(dp_limit: int = DP_LIMIT) -> list[Rule]:
    return [JoinReorder(dp_limit), JoinCommute(), JoinAssociate(), JoinPushThroughJoin()]


def rule_names() -> list[str]:
    """Every rule a user can disable, in the order the phases apply them."""
    return [*NORMALIZATION_RULES, PRUNE, *(r.name for r in exploration_rules()), *COLLAPSE_RULES, *PHYSICAL_RULES]


@dataclass
class PlannedQuery:
    """A query as tempura will run it, with how it was found."""

    query: Query
    physical: PhysicalPlan
    hints: dict[LogicalPlan, JoinHint]
    memo: Memo
    report: SearchReport
    trace: Trace | None = None
    normalization: list[str] = field(default_factory=list)


class Planner:
    """Plans queries with one estimator and one set of cost constants."""

    def __init__(self, estimator: Estimator, constants: CostConstants | None = None, dp_limit: int = DP_LIMIT) -> None:
        self.estimator = estimator
        self.costs = SparkCosts(constants)
        self.dp_limit = dp_limit

    def _derive(self, expr: LogicalPlan, inputs: list[RelStats]) -> RelStats:
        if isinstance(expr, PartialAggregate):
            groups = self.estimator.group_count(inputs[0], list(expr.keys)) if expr.keys else 1.0
            return expr.estimate(inputs[0], groups, self.costs)
        return self.estimator.derive(expr, inputs)

    def check_rules(self, disabled: Iterable[str]) -> set[str]:
        off = set(disabled)
        unknown = off - set(rule_names())
        if unknown:
            raise TempuraError(f"unknown rule(s): {', '.join(sorted(unknown))} (known: {', '.join(rule_names())})")
        return off

    def explore(self, query: Query, off: set[str], tracer: Trace | None, fired: list[str]) -> tuple[Memo, int, RuleEngine]:
        """Normalization and logical exploration: the memo of ``query`` and its root group."""
        normalized = normalize(query.plan, off & {*NORMALIZATION_RULES, PRUNE}, fired)
        memo = Memo(self._derive)
        rules = [r for r in exploration_rules(self.dp_limit) if r.name not in off]
        if JoinReorder.name not in off:
            # The enumerator covers every region of three or more joined relations completely;
            # associate and push-through would only rediscover what it added.
            rules = [r for r in rules if r.name not in (JoinAssociate.name, JoinPushThroughJoin.name)]
        engine = RuleEngine(memo, rules, tracer)
        root = memo.insert(canonical_joins(normalized))
        memo.root = root
        engine.seed()
        engine.run()
        memo.listeners.clear()
        return memo, root, engine

    def plan(self, query: Query, disabled: Iterable[str] = (), trace: bool = False) -> PlannedQuery:
        with gc_paused():
            return self._plan(query, disabled, trace)

    def _plan(self, query: Query, disabled: Iterable[str], trace: bool) -> PlannedQuery:
        off = self.check_rules(disabled)
        started = time.perf_counter()
        fired: list[str] = []
        tracer = Trace() if trace else None
        memo, root, engine = self.explore(query, off, tracer, fired)
        collapse(memo, off, tracer)
        root = memo.find(root)
        search = Search(memo, SparkImplementer(memo, self.costs, off))
        if search.optimize(root) is None:
            raise TempuraError(f"no physical plan for the query with rules disabled: {', '.join(sorted(off))}")
        physical = search.extract(memo.find(root))
        hints: dict[LogicalPlan, JoinHint] = {}
        plan = _to_logical(physical, hints)
        plan = _in_order(plan, list(query.plan.schema.names))
        groups, exprs = memo.size()
        report = SearchReport(
            groups=groups,
            expressions=exprs,
            rule_firings=engine.firings,
            alternatives=search.stats.alternatives,
            pruned=search.stats.pruned,
            winners=search.winner_count,
            seconds=time.perf_counter() - started,
        )
        planned = Query(plan, query.names, query.ordered, query.order_keys)
        return PlannedQuery(planned, physical, hints, memo, report, tracer, fired)


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


def _in_order(plan: LogicalPlan, names: list[str]) -> LogicalPlan:
    """``plan`` with its columns in the order ``names`` (a project when they differ)."""
    if list(plan.schema.names) == names:
        return plan
    return Project(plan, tuple(Projection(plan.schema.field(n), col(n)) for n in names))


def fill_template(template: LogicalPlan, children: Iterable[LogicalPlan]) -> LogicalPlan:
    """``template`` (a memo expression, perhaps nesting operators) with its group references
    replaced, in order, by ``children``."""
    it = iter(children)

    def fill(node: LogicalPlan) -> LogicalPlan:
        if isinstance(node, GroupRef):
            return next(it)
        if not node.inputs:
            return node
        filled = [fill(c) for c in node.inputs]
        if isinstance(node, SetOperation):  # positional: keep each input's column order
            filled = [_in_order(f, list(c.schema.names)) for f, c in zip(filled, node.inputs)]
        return node.with_inputs(*filled)

    return fill(template)


def _to_logical(node: PhysicalPlan, hints: dict[LogicalPlan, JoinHint]) -> LogicalPlan:
    """The logical plan a physical plan computes, in its join order, collecting join hints."""
    if node.logical is None:  # an enforcer or a partial aggregate: look through it
        return _to_logical(node.children[0], hints)
    plan = fill_template(node.logical, [_to_logical(child, hints) for child in node.children])
    if node.hint is not None:
        strategy, side = node.hint.split(":")
        hints[plan] = (strategy, side)
    return plan


