"""Physical planning for Spark: implementation rules per logical operator, and the enforcers.

:class:`SparkImplementer` is what the memo search asks for alternatives. Besides the join and
aggregate rules of their own modules it implements:

- ``Scan`` as a file scan, ``Values`` as a local table scan;
- ``Filter`` and ``Project`` in place, passing their consumer's requirement to their input
  (through the projection's renames) — Spark's narrow operators keep partitioning and order;
- ``Sort`` as Spark's global sort (a sampling job, a range exchange, then a sort) or, when its
  input is estimated no larger than the largest broadcast tempura pins, as a sort in one task:
  the input's partitions coalesced into one (``single-task-sort``, the ``COALESCE(1)`` hint),
  which needs no exchange — no sampling job, no shuffle stage. Unlike a broadcast, a sort in one
  task that turns out larger than estimated spills and takes longer but does not fail, so the
  estimate decides, not the bound; ``ORDER BY … LIMIT`` as a top-k (``take-ordered``:
  Spark's ``TakeOrderedAndProject``);
- ``Window`` over its input clustered on the partition columns (gathered into one partition
  when it has none), each partition sorted by the window's order;
- ``Limit`` with a final gather; ``UNION ALL`` as a free concatenation; the other set operations
  as hash aggregation over both inputs.

Enforcers, in :meth:`SparkImplementer.enforce`: a hash-partitioning exchange for ``hash`` and
``cluster``, a single-partition exchange for ``single``, a broadcast exchange for ``broadcast``
and a partition-local sort for an ordering. An enforcer asks its own group for the weaker
property, so exchanges land wherever in the plan they are cheapest.

Items of the Hive seed that tempura leaves to later, and why: bucketed (map-side) joins and
bucket-aware aggregation need tables written with bucketing, which tempura's parquet and csv
sources are not; skew joins are what Spark's adaptive execution handles at run time, and AQE is
off while tempura's plan runs so that what runs is what was costed; map-side join of several
small tables at once (Hive's multi-way map join) has no Spark operator.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from tempura.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    PartialAggregate,
    Project,
    Generate,
    Opaque,
    Scan,
    SetOperation,
    Sort,
    Union,
    Values,
    Window,
    column_name,
)
from tempura.cost.model import Cost
from tempura.cost.operators import SparkCosts
from tempura.memo import Alternative, Group, GroupRef, Memo
from tempura.memo.search import EXCHANGE, TRANSPARENT, UNION
from tempura.memo.properties import (
    BROADCAST,
    BROADCASTED,
    CLUSTER,
    HASH,
    NO_PROPS,
    SINGLE,
    SINGLE_PARTITION,
    Distribution,
    Props,
    rename,
)
from tempura.rules.physical import aggregate, joins
from tempura.rules.base import Implementation
from tempura.rules.physical.aggregate import HASH_AGGREGATE
from tempura.stats.relation import RelStats

FILE_SCAN = Implementation("file-scan", "Scan", "A table as a scan of its files, reading the columns the plan needs.")
LOCAL_TABLE_SCAN = Implementation("local-table-scan", "Values", "Literal rows as a local table.")
GENERATE = Implementation("generate", "Generate",
                          "A LATERAL VIEW row by row, in place: keeps A's partitioning (not its order within a row's rows).")
OPAQUE = Implementation("opaque-spark-sql", "Opaque", "A part tempura does not plan natively, as the Spark SQL it was written in.")
FILTER = Implementation("filter", "Filter", "σ_p(A) row by row, in place: keeps A's partitioning and order.")
PROJECT = Implementation("project", "Project",
                         "π(A) row by row, in place: keeps A's partitioning and order, through the projection's renames.")
GLOBAL_SORT = Implementation("global-sort", "Sort", "τ(A) as a range exchange, then a sort of each partition.")
SINGLE_TASK_SORT_RULE = Implementation(
    "single-task-sort", "Sort",
    "τ(A) in one task when A is no larger than a broadcast: A's partitions coalesced into one, no exchange.")
LIMIT = Implementation("limit-gather", "Limit", "λ_n(A) as a limit of each partition, gathered into one.")
TAKE_ORDERED = Implementation("take-ordered", "Limit(Sort)",
                              "λ_n(τ(A)) as a top-k of each partition merged into one (TakeOrderedAndProject).")
WINDOW = Implementation("window", "Window",
                        "Window functions over A clustered on the partition columns (one partition without any), "
                        "each partition sorted by the window's order.")
UNION_ALL = Implementation("union-all", "Union", "A ∪all B as a concatenation of the inputs' partitions.")
HASH_SET_OPERATION = Implementation("hash-set-operation", "Union | Intersect | Except",
                                    "A ∪ B, A ∩ B, A − B as a hash aggregate over both inputs.")
PARTIAL_AGGREGATE = Implementation("partial-aggregate", "PartialAggregate",
                                   "The partial step of a split aggregate, per partition, in place.")
HASH_EXCHANGE = Implementation("hash-exchange", "any group", "Hash partitioning on keys, when a consumer requires it.", True)
SINGLE_EXCHANGE = Implementation("single-exchange", "any group", "All rows in one partition, when a consumer requires it.", True)
BROADCAST_EXCHANGE = Implementation("broadcast-exchange", "any group", "A copy of all rows for every task (a hash join's build side).", True)
LOCAL_SORT = Implementation("local-sort", "any group", "Each partition sorted, when a consumer requires an order.", True)

IMPLEMENTATIONS = (FILE_SCAN, LOCAL_TABLE_SCAN, OPAQUE, FILTER, GENERATE, PROJECT, *joins.RULES, HASH_AGGREGATE, PARTIAL_AGGREGATE,
                   GLOBAL_SORT, SINGLE_TASK_SORT_RULE, LIMIT, TAKE_ORDERED, WINDOW, UNION_ALL, HASH_SET_OPERATION)
ENFORCERS = (HASH_EXCHANGE, SINGLE_EXCHANGE, BROADCAST_EXCHANGE, LOCAL_SORT)
RULES = (*IMPLEMENTATIONS, *ENFORCERS)


def _keep(delivered: list[Props]) -> Props:
    return delivered[0]


SINGLE_TASK_SORT = "COALESCE:1"  # the hint that sorts in one task: the input coalesced to one partition

Implement = Callable[["SparkImplementer", Group, LogicalPlan, Props], Sequence[Alternative]]


class SparkImplementer:
    """Implementation rules and enforcers for Spark, minus the rules named in ``disabled``.

    :meth:`implement` dispatches on the operator's class (the first class of its MRO with
    rules); each rule is an :class:`~tempura.rules.base.Implementation` the caller may disable."""

    def __init__(self, memo: Memo, costs: SparkCosts, disabled: Iterable[str] = ()) -> None:
        self.memo = memo
        self.costs = costs
        self.disabled = set(disabled)
        self._shapes: dict[Join, joins.JoinShape] = {}

    def enabled(self, rule: Implementation) -> bool:
        return rule.name not in self.disabled

    def _stats(self, ref: LogicalPlan) -> RelStats:
        assert isinstance(ref, GroupRef)
        return self.memo.group(ref.group).stats

    def implement(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        for kind in type(expr).__mro__:
            method = _BY_OPERATOR.get(kind)
            if method is not None:
                return method(self, group, expr, required)
        raise NotImplementedError(f"no physical implementation for {expr.operator}")

    def _join(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Join)
        shape = self._shapes.get(expr)
        if shape is None:
            shape = self._shapes[expr] = joins.JoinShape.of(expr)
        return joins.implement_join(self.memo, self.costs, group, expr, required, self.enabled, shape)

    def _aggregate(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        if not self.enabled(HASH_AGGREGATE):
            return []
        return aggregate.implement_aggregate(self.memo, self.costs, group, expr, required)

    def _partial(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, PartialAggregate)
        if not self.enabled(PARTIAL_AGGREGATE):
            return []
        return aggregate.implement_partial(self.memo, self.costs, group, expr, required)

    def _scan(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        if not self.enabled(FILE_SCAN):
            return []
        return [Alternative("Scan", expr.details(), (), self.costs.scan(group.stats), lambda _d: NO_PROPS, expr, rule=FILE_SCAN.name)]

    def _values(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        if not self.enabled(LOCAL_TABLE_SCAN):
            return []
        return [Alternative("LocalTableScan", expr.details(), (), Cost(rows=group.stats.rows), lambda _d: NO_PROPS, expr,
                            rule=LOCAL_TABLE_SCAN.name)]

    def _generate(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Generate)
        if not self.enabled(GENERATE):
            return []
        child = self._child(expr.input, joins.passable(required, set(expr.input.schema.names)))
        return [Alternative("Generate", expr.details(), child, self.costs.generate(group.stats), _keep, expr,
                            passthrough=(0,), rule=GENERATE.name, fusion=TRANSPARENT)]

    def _opaque(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Opaque)
        if not self.enabled(OPAQUE):
            return []
        children = tuple(self._child(read, NO_PROPS)[0] for read in expr.inputs)
        cost = self.costs.opaque([self._stats(read) for read in expr.inputs], group.stats)
        return [Alternative("Opaque", f"Spark SQL, not planned natively: {expr.reason}", children, cost, lambda _d: NO_PROPS, expr, rule=OPAQUE.name)]

    def _filter(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Filter)
        if not self.enabled(FILTER):
            return []
        child = self._child(expr.input, joins.passable(required, set(expr.input.schema.names)))
        return [Alternative("Filter", expr.details(), child, self.costs.filter(self._stats(expr.input), group.stats), _keep, expr,
                            passthrough=(0,), rule=FILTER.name, fusion=TRANSPARENT)]

    def _project_rule(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Project)
        return [self._project(expr, required)] if self.enabled(PROJECT) else []

    def _sort(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Sort)
        c = self.costs
        out = group.stats
        source = self._stats(expr.input)
        child = self._child(expr.input, NO_PROPS)
        sorts = []
        if self.enabled(GLOBAL_SORT):
            own = c.range_sort(source).with_rows(out.rows)
            sorts.append(Alternative("Sort", f"global {expr.details()}", child, own, _const(NO_PROPS), expr, rule=GLOBAL_SORT.name,
                                     fusion=EXCHANGE))
        if self.enabled(SINGLE_TASK_SORT_RULE) and source.bytes <= c.k.broadcast_limit:
            sorts.append(Alternative("Sort", f"single {expr.details()}", child, c.sort(source).with_rows(out.rows),
                                     _const(NO_PROPS), expr, hint=SINGLE_TASK_SORT, rule=SINGLE_TASK_SORT_RULE.name))
        return sorts

    def _window(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Window)
        if not self.enabled(WINDOW):
            return []
        keys = expr.partition_keys
        need = Props(Distribution.clustered(*keys)) if keys else Props(SINGLE_PARTITION)
        own = self.costs.window(self._stats(expr.input), len(expr.calls)).with_rows(group.stats.rows)
        return [Alternative("Window", expr.details(), self._child(expr.input, need), own, _keep, expr, rule=WINDOW.name)]

    def _limit_rule(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, Limit)
        return self._limit(group, expr)

    def _set_operation_rule(self, group: Group, expr: LogicalPlan, required: Props) -> Sequence[Alternative]:
        assert isinstance(expr, SetOperation)
        made = self._set_operation(expr, group.stats)
        return [made] if made is not None else []

    def _child(self, ref: LogicalPlan, required: Props) -> tuple[tuple[int, Props], ...]:
        assert isinstance(ref, GroupRef)
        return ((self.memo.find(ref.group), required),)

    def _project(self, expr: Project, required: Props) -> Alternative:
        to_input: dict[str, str] = {}
        to_output: dict[str, list[str]] = {}
        for p in expr.projections:
            source = column_name(p.expression)
            if source is not None:
                to_input.setdefault(p.field.name, source)
                to_output.setdefault(source, []).append(p.field.name)
        child_required = rename(required, to_input) if not required.is_any else NO_PROPS
        if child_required is None or required.distribution.kind == BROADCAST:
            child_required = NO_PROPS
        computed = sum(1 for p in expr.projections if not p.is_passthrough)
        own = self.costs.project(self._stats(expr.input), computed)

        def deliver(delivered: list[Props]) -> Props:
            back = rename(delivered[0], {k: v[0] for k, v in to_output.items()})
            return back if back is not None else NO_PROPS

        return Alternative("Project", expr.details(), self._child(expr.input, child_required), own, deliver, expr,
                           passthrough=(0,), fusion=TRANSPARENT)

    def _limit(self, group: Group, expr: Limit) -> list[Alternative]:
        c = self.costs
        out = group.stats
        alternatives = [
            Alternative("Limit", expr.details(), self._child(expr.input, NO_PROPS),
                        (c.limit(out) + c.gather(out)).with_rows(out.rows), lambda _d: Props(SINGLE_PARTITION), expr,
                        rule=LIMIT.name, fusion=EXCHANGE)
        ] if self.enabled(LIMIT) else []
        source_ref = expr.input
        assert isinstance(source_ref, GroupRef)
        if self.enabled(TAKE_ORDERED) and expr.count is not None and not expr.offset:
            for sort in self.memo.group(source_ref.group).exprs:
                if isinstance(sort, Sort):
                    below = self._stats(sort.input)
                    own = (c.top_k(below, out.rows) + c.gather(out)).with_rows(out.rows)
                    template = expr.with_inputs(sort)
                    alternatives.append(
                        Alternative("TakeOrderedAndProject", f"{expr.details()} {sort.details()}",
                                    self._child(sort.input, NO_PROPS), own, lambda _d: Props(SINGLE_PARTITION),
                                    template, rule=TAKE_ORDERED.name, fusion=EXCHANGE)
                    )
        return alternatives

    def _set_operation(self, expr: SetOperation, out: RelStats) -> Alternative | None:
        c = self.costs
        left, right = self._stats(expr.left), self._stats(expr.right)
        children = self._child(expr.left, NO_PROPS) + self._child(expr.right, NO_PROPS)
        if isinstance(expr, Union) and expr.all:
            if not self.enabled(UNION_ALL):
                return None
            return Alternative("Union", expr.details(), children, c.union(out), lambda _d: NO_PROPS, expr, rule=UNION_ALL.name,
                               fusion=UNION, unfused=c.union_copy(out))
        if not self.enabled(HASH_SET_OPERATION):
            return None
        both = RelStats(left.rows + right.rows, max(left.row_size, right.row_size), {})
        own = c.hash_aggregate(both, out, keyed=True)
        return Alternative(expr.operator, f"hash {expr.details()}", children, own, lambda _d: NO_PROPS, expr,
                           rule=HASH_SET_OPERATION.name)

    # -- enforcers -----------------------------------------------------------------------------

    def enforce(self, group: Group, required: Props) -> Sequence[Alternative]:
        c = self.costs
        stats = group.stats
        if required.ordering:
            weaker = required.without_ordering()
            ordering = required.ordering

            def sorted_(delivered: list[Props]) -> Props:
                return Props(delivered[0].distribution, ordering)

            if not self.enabled(LOCAL_SORT):
                return []
            return [Alternative("Sort", f"local [{', '.join(ordering)}]", ((group.id, weaker),), c.sort(stats), sorted_, enforcer=True,
                                rule=LOCAL_SORT.name)]
        dist = required.distribution
        if dist.kind in (HASH, CLUSTER) and self.enabled(HASH_EXCHANGE):
            (keys,) = dist.keys
            delivered = Props(Distribution.hashed(*keys))
            return [Alternative("Exchange", f"hashpartitioning({', '.join(keys)})", ((group.id, NO_PROPS),),
                                c.shuffle(stats), _const(delivered), enforcer=True, rule=HASH_EXCHANGE.name, fusion=EXCHANGE)]
        if dist.kind == SINGLE and self.enabled(SINGLE_EXCHANGE):
            return [Alternative("Exchange", "SinglePartition", ((group.id, NO_PROPS),), c.gather(stats),
                                _const(Props(SINGLE_PARTITION)), enforcer=True, rule=SINGLE_EXCHANGE.name, fusion=EXCHANGE)]
        if dist.kind == BROADCAST and self.enabled(BROADCAST_EXCHANGE):
            return [Alternative("BroadcastExchange", "", ((group.id, NO_PROPS),), c.broadcast(stats),
                                _const(Props(BROADCASTED)), enforcer=True, rule=BROADCAST_EXCHANGE.name, fusion=EXCHANGE)]
        return []


def _const(props: Props) -> Callable[[list[Props]], Props]:
    return lambda _d: props


_BY_OPERATOR: dict[type, Implement] = {
    Join: SparkImplementer._join,
    Aggregate: SparkImplementer._aggregate,
    Distinct: SparkImplementer._aggregate,
    PartialAggregate: SparkImplementer._partial,
    Scan: SparkImplementer._scan,
    Values: SparkImplementer._values,
    Opaque: SparkImplementer._opaque,
    Generate: SparkImplementer._generate,
    Filter: SparkImplementer._filter,
    Project: SparkImplementer._project_rule,
    Sort: SparkImplementer._sort,
    Window: SparkImplementer._window,
    Limit: SparkImplementer._limit_rule,
    SetOperation: SparkImplementer._set_operation_rule,
    GroupRef: lambda _self, _group, _expr, _required: [],
}


__all__ = ["ENFORCERS", "IMPLEMENTATIONS", "RULES", "SINGLE_TASK_SORT_RULE", "TAKE_ORDERED", "SparkImplementer"]
