"""Window functions: ``f(...) OVER (PARTITION BY … ORDER BY … frame)`` in a query block becomes
:class:`~tempura.algebra.Window` operators between the block's grouping and its select list.

SQL evaluates window functions after ``GROUP BY`` and ``HAVING`` and before ``SELECT``,
``DISTINCT`` and ``ORDER BY``, so a window may read the block's aggregates
(``RANK() OVER (ORDER BY SUM(x))``, ``AVG(SUM(x)) OVER (PARTITION BY k)``) and the select
list and ``ORDER BY`` may read windows. The binding:

- each distinct window expression of the select list and ``ORDER BY`` is computed once;
- its function's arguments and its ``ORDER BY`` keys are expressions over the block's columns
  (the grouped block's rewrite maps aggregates and keys to the aggregate's columns);
- a ``PARTITION BY`` expression that is not a column is computed by a ``Project`` below, so
  that every window's partition is a set of columns — what the physical plan clusters by and
  what the incremental rules recompute partitions by;
- windows with the same partition columns share one ``Window`` operator; windows with
  different partitions stack, one operator per partition (as Spark plans them).

The frame, the default frame (``RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`` with an
``ORDER BY``, the whole partition without) and the null ordering are Spark's, since the plan
prints the window back as written.
"""

from __future__ import annotations

from sqlglot import exp

from tempura.algebra import Field, LogicalPlan, Project, Projection, Window, WindowCall, col, column_name
from tempura.sql.parse import unsupported
from tempura.sql.scope import BlockBinder, Rewrite, aggregate_type, spark_type

_INT_VALUED = (exp.Rank, exp.DenseRank, exp.RowNumber, exp.Ntile)
_DOUBLE_VALUED = (exp.PercentRank, exp.CumeDist)
_VALUE_OF_ARGUMENT = (exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue)


def window_type(function: exp.Expr) -> tuple[str, bool]:
    """Spark's result type of a window function, and whether it may be NULL."""
    if isinstance(function, _INT_VALUED):
        return "int", False
    if isinstance(function, _DOUBLE_VALUED):
        return "double", False
    if isinstance(function, exp.Count):
        return "bigint", False
    if isinstance(function, _VALUE_OF_ARGUMENT):
        return value_type(function.this), True
    if isinstance(function, exp.AggFunc):
        argument = function.this
        if isinstance(argument, exp.AggFunc) and isinstance(function, (exp.Sum, exp.Avg)):
            # SUM(SUM(x)) OVER (...): the argument's type is the inner aggregate's
            inner = aggregate_type(argument)
            probe = function.copy()
            probe.this.type = exp.DataType.build(inner, dialect="spark")
            return aggregate_type(probe), True
        return aggregate_type(function), True
    return spark_type(function), True


def value_type(node: exp.Expr) -> str:
    """The type of a window function's argument (an aggregate's is the aggregate's result)."""
    return aggregate_type(node) if isinstance(node, exp.AggFunc) else spark_type(node)


class WindowBinder:
    """Binds the window functions of one query block."""

    def __init__(self, binder: BlockBinder) -> None:
        self.binder = binder

    def bind(
        self, plan: LogicalPlan, windows: list[exp.Window], rewrite: Rewrite, aliases: dict[exp.Expr, str]
    ) -> tuple[LogicalPlan, Rewrite]:
        """``plan`` with ``Window`` operators computing ``windows`` on top, and a rewrite that maps
        each window expression of the block to its column (and everything else as ``rewrite``)."""
        names = self.binder.names
        columns: dict[exp.Expr, str] = {}
        computed: list[Projection] = []
        computed_by_expression: dict[exp.Expr, str] = {}
        by_partition: dict[tuple[str, ...], list[WindowCall]] = {}
        for node in windows:
            if node in columns:
                continue
            self._check(node)
            function = node.this.copy()
            for key, value in list(function.args.items()):
                if isinstance(value, exp.Expr):
                    function.set(key, rewrite(value))
                elif isinstance(value, list):
                    function.set(key, [rewrite(v) if isinstance(v, exp.Expr) else v for v in value])
            partition: list[str] = []
            for expression in node.args.get("partition_by") or []:
                resolved = rewrite(expression)
                name = column_name(resolved)
                if name is None or name not in plan.schema:
                    name = computed_by_expression.get(resolved)
                    if name is None:
                        name = names.fresh("partition_key")
                        field = Field(name, spark_type(expression), True)
                        computed.append(Projection(field, resolved))
                        computed_by_expression[resolved] = name
                if name not in partition:
                    partition.append(name)
            order = node.args.get("order")
            ordered = [
                exp.Ordered(this=rewrite(o.this), desc=bool(o.args.get("desc")),
                            nulls_first=bool(o.args.get("nulls_first")))
                for o in (order.expressions if order is not None else [])
            ]
            call = exp.Window(
                this=function,
                partition_by=[col(n) for n in partition] or None,
                order=exp.Order(expressions=ordered) if ordered else None,
                spec=node.args["spec"].copy() if node.args.get("spec") is not None else None,
            )
            kind, nullable = window_type(node.this)
            field = Field(names.fresh(aliases.get(node, function.key)), kind, nullable)
            columns[node] = field.name
            by_partition.setdefault(tuple(partition), []).append(WindowCall(field, call))
        if computed:
            plan = Project(plan, tuple(Projection(f, col(f.name)) for f in plan.schema) + tuple(computed))
        for calls in by_partition.values():
            plan = Window(plan, tuple(calls))

        def rewrite_windows(node: exp.Expr) -> exp.Expr:
            replaced = node.transform(lambda n: col(columns[n]) if isinstance(n, exp.Window) and n in columns else n)
            return rewrite(replaced)

        return plan, rewrite_windows

    def _check(self, node: exp.Window) -> None:
        sql = self.binder.sql
        if node.args.get("alias") is not None and node.args.get("spec") is None and not node.args.get("partition_by") \
                and node.args.get("order") is None:
            raise unsupported("a named window (OVER name)", node, sql)
        if isinstance(node.this, exp.AggFunc) and isinstance(node.this.this, exp.Distinct):
            raise unsupported("DISTINCT in a window function", node, sql)
        if any(isinstance(n, exp.Window) for n in node.this.walk() if n is not node.this) or any(
            isinstance(n, exp.Window) for e in (node.args.get("partition_by") or []) for n in e.walk()
        ):
            raise self.binder.bind_error("a window function cannot contain another window function", node)
