"""Costing a logical plan as Spark would run it without tempura's physical planning.

Until the memo picks physical operators, each logical operator is costed with the algorithm
Spark's planner would choose for it: a broadcast hash join when one side of an equi-join is under
the broadcast threshold by estimate and by its upper bound (Spark sizes a join by the product of
its sides, never by a guess below it; the smaller side builds), a sort-merge join otherwise, a broadcast
nested-loop join without equi-keys; hash aggregation with a partial/final split; a range
exchange and sort for a global ``ORDER BY``, and a top-k for ``ORDER BY … LIMIT``.

:class:`PlanCost` annotates every node with its algorithm, its own cost and the cumulative cost
of its subtree.
"""

from __future__ import annotations

from dataclasses import dataclass

from tempura.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Project,
    Generate,
    Opaque,
    Scan,
    SetOperation,
    Sort,
    Union,
    Values,
    Window,
)
from tempura.cost.model import ZERO, Cost, CostConstants
from tempura.cost.operators import SparkCosts
from tempura.stats.estimate import Estimator, split_join_condition
from tempura.stats.relation import RelStats


@dataclass(frozen=True)
class NodeCost:
    """One node's algorithm, own cost and subtree cost."""

    algorithm: str
    own: Cost
    cumulative: Cost


class PlanCost:
    """Costs of every node of logical plans, under one estimator and one set of constants."""

    def __init__(self, estimator: Estimator, constants: CostConstants | None = None) -> None:
        self.estimator = estimator
        self.costs = SparkCosts(constants)
        self._cache: dict[LogicalPlan, NodeCost] = {}

    @property
    def constants(self) -> CostConstants:
        return self.costs.k

    def of(self, plan: LogicalPlan) -> NodeCost:
        cached = self._cache.get(plan)
        if cached is not None:
            return cached
        children = [self.of(child) for child in plan.inputs]
        algorithm, own = self._own(plan)
        total = own
        for child in children:
            total = total + child.cumulative
        if isinstance(plan, Limit) and isinstance(plan.input, Sort):
            # Spark runs ORDER BY … LIMIT as one top-k (TakeOrderedAndProject): no global sort.
            total = total + children[0].own.scaled(-1.0)
        result = NodeCost(algorithm, own, total.with_rows(own.rows))
        self._cache[plan] = result
        return result

    def _own(self, plan: LogicalPlan) -> tuple[str, Cost]:
        stats = self.estimator.of
        out = stats(plan)
        c = self.costs
        if isinstance(plan, Scan):
            return "FileScan", c.scan(out)
        if isinstance(plan, Values):
            return "LocalTableScan", Cost(rows=out.rows)
        if isinstance(plan, Opaque):
            return "Opaque", c.opaque([stats(i) for i in plan.inputs], out)
        if isinstance(plan, Generate):
            return "Generate", c.generate(out)
        if isinstance(plan, Filter):
            return "Filter", c.filter(stats(plan.input), out)
        if isinstance(plan, Project):
            computed = sum(1 for p in plan.projections if not p.is_passthrough)
            return "Project", c.project(stats(plan.input), computed)
        if isinstance(plan, Join):
            return self._join(plan, stats(plan.left), stats(plan.right), out)
        if isinstance(plan, (Aggregate, Distinct)):
            keyed = bool(plan.keys) if isinstance(plan, Aggregate) else True
            return "HashAggregate", c.hash_aggregate(stats(plan.input), out, keyed)
        if isinstance(plan, Sort):
            source = stats(plan.input)
            return "Sort", c.range_sort(source).with_rows(out.rows)
        if isinstance(plan, Window):
            source = stats(plan.input)
            move = c.shuffle(source) if plan.partition_keys else c.gather(source)
            return "Window", (move + c.window(source, len(plan.calls))).with_rows(out.rows)
        if isinstance(plan, Limit):
            source = stats(plan.input)
            if isinstance(plan.input, Sort):
                return "TakeOrdered", (c.top_k(source, out.rows) + c.gather(out)).with_rows(out.rows)
            return "Limit", (c.limit(out) + c.gather(out)).with_rows(out.rows)
        if isinstance(plan, SetOperation):
            if isinstance(plan, Union) and plan.all:
                return "Union", c.union(out)
            left, right = stats(plan.left), stats(plan.right)
            both = RelStats(left.rows + right.rows, max(left.row_size, right.row_size), {})
            return f"{plan.operator}(hash)", c.hash_aggregate(both, out, keyed=True)
        return plan.operator, ZERO

    def _join(self, plan: Join, left: RelStats, right: RelStats, out: RelStats) -> tuple[str, Cost]:
        c = self.costs
        pairs, _, _ = split_join_condition(
            plan.condition, set(plan.left.schema.names), set(plan.right.schema.names)
        )
        if not pairs:
            return "BroadcastNestedLoopJoin", c.nested_loop_join(left, right, out)
        threshold = self.constants.broadcast_threshold
        # Spark can build a broadcast on the right for inner/left/semi/anti joins and on the
        # left for inner/right joins.
        can_build_right = plan.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI)
        can_build_left = plan.kind in (JoinKind.INNER, JoinKind.RIGHT)
        options = []
        if can_build_right and max(right.bytes, right.max_bytes) <= threshold:
            options.append((right.bytes, "BroadcastHashJoin(build=right)", c.broadcast_hash_join(right, left, out)))
        if can_build_left and max(left.bytes, left.max_bytes) <= threshold:
            options.append((left.bytes, "BroadcastHashJoin(build=left)", c.broadcast_hash_join(left, right, out)))
        if options:
            _, name, cost = min(options, key=lambda o: o[0])
            return name, cost
        return "SortMergeJoin", c.sort_merge_join(left, right, out)
