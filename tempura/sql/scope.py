"""The vocabulary of binding one query block, shared by the binder and the subquery planner:
the names a block sees (:class:`Scope`), a bound block (:class:`Bound`), Spark's result types of
expressions and aggregates, the tests for subqueries and aggregates in an expression, and
:class:`BlockBinder`, what the subquery planner asks of the binder that drives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ContextManager, Literal, Protocol

from sqlglot import exp

from tempura.algebra import LogicalPlan
from tempura.algebra.decompose import decimal_shape
from tempura.algebra.schema import UNKNOWN_TYPE
from tempura.errors import BindError
from tempura.sql.names import NameAllocator

Rewrite = Callable[[exp.Expr], exp.Expr]
"""Turns an expression of the query block into an expression over the current plan's columns."""


@dataclass
class Scope:
    """Names visible in one query block: source alias → source column → plan column.

    ``parent`` is the enclosing block, for correlated subqueries.
    """

    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    parent: Scope | None = None

    def lookup(self, table: str, column: str) -> tuple[str, int] | None:
        """The plan column and how many blocks out it was found (0 = this block)."""
        scope: Scope | None = self
        depth = 0
        while scope is not None:
            columns = scope.sources.get(table)
            if columns is not None and column in columns:
                return columns[column], depth
            scope = scope.parent
            depth += 1
        return None


@dataclass
class Bound:
    """A bound query expression: the plan and the user-facing names of its columns."""

    plan: LogicalPlan
    names: list[str]
    ordered: bool = False
    order_keys: tuple[int, ...] | None = None


def spark_type(node: exp.Expr | None) -> str:
    """The Spark SQL type string of ``node``: sqlglot's annotation, with the type of arithmetic on
    decimals as Spark derives it (:func:`decimal_of`)."""
    if isinstance(node, _ARITHMETIC + _CHOICES) or (isinstance(node, exp.Literal) and not node.is_string):
        decimal = decimal_of(node)
        if decimal == "double":
            return "double"
        if decimal is not None:
            return f"decimal({decimal[0]},{decimal[1]})"
    return _annotated(node)


def _annotated(node: exp.Expr | None) -> str:
    dtype = getattr(node, "type", None)
    if dtype is None or dtype.this == exp.DataType.Type.UNKNOWN:
        return UNKNOWN_TYPE
    return dtype.sql(dialect="spark").lower().replace(", ", ",")


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Paren, exp.Neg)
_CHOICES = (exp.Case, exp.If, exp.Coalesce)
_INTEGRAL_DIGITS = {"tinyint": 3, "byte": 3, "smallint": 5, "short": 5, "int": 10, "integer": 10, "bigint": 20, "long": 20}
_FLOATING = ("float", "double", "real")
_MAX_PRECISION = 38
_MIN_ADJUSTED_SCALE = 6

DecimalShape = tuple[int, int] | Literal["double"] | None


def _bounded(precision: int, scale: int) -> tuple[int, int]:
    """Spark's precision-loss rule: past 38 digits, keep the integral digits and cut the scale,
    but not below 6 (``DecimalType.adjustPrecisionScale``)."""
    if precision <= _MAX_PRECISION:
        return precision, scale
    integral = precision - scale
    return _MAX_PRECISION, max(_MAX_PRECISION - integral, min(scale, _MIN_ADJUSTED_SCALE))


def decimal_of(node: exp.Expr) -> DecimalShape:
    """``(precision, scale)`` of a decimal-valued expression as Spark types it; ``"double"`` when
    a floating-point operand makes decimal arithmetic ``double``; ``None`` when it is no decimal.

    A numeric literal with a point is a decimal of its digits (``0.05``: ``decimal(2,2)``);
    integral operands of decimal arithmetic count as ``decimal(10,0)`` (``int``), ``decimal(20,0)``
    (``bigint``), an integer literal by its digits. ``+``/``-`` give scale ``max(s1,s2)`` and one
    more integral digit, ``*`` adds precisions (+1) and scales, ``/`` has scale
    ``max(6, s1 + p2 + 1)``; past 38 digits the scale is cut (:func:`_bounded`)."""
    if isinstance(node, (exp.Paren, exp.Neg)):
        return decimal_of(node.this)
    if isinstance(node, _CHOICES):
        return _common_decimal(_choices(node))
    if isinstance(node, exp.Literal) and not node.is_string:
        whole, dot, fraction = node.this.lstrip("-").partition(".")
        if dot and (whole + fraction).isdigit():
            return max(1, len(whole.lstrip("0") + fraction), len(fraction)), len(fraction)
        return None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        left, right = decimal_of(node.left), decimal_of(node.right)
        if left == "double" or right == "double":
            return "double"
        if left is None and right is None:
            return None
        left = left if left is not None else _integral_as_decimal(node.left)
        right = right if right is not None else _integral_as_decimal(node.right)
        if not isinstance(left, tuple) or not isinstance(right, tuple):
            return None
        (p1, s1), (p2, s2) = left, right
        if isinstance(node, (exp.Add, exp.Sub)):
            scale = max(s1, s2)
            return _bounded(max(p1 - s1, p2 - s2) + scale + 1, scale)
        if isinstance(node, exp.Mul):
            return _bounded(p1 + p2 + 1, s1 + s2)
        scale = max(_MIN_ADJUSTED_SCALE, s1 + p2 + 1)
        return _bounded(p1 - s1 + s2 + scale, scale)
    text = aggregate_type(node) if isinstance(node, (exp.AggFunc, exp.Filter)) else _annotated(node)
    if text in _FLOATING:
        return "double"
    if text.startswith("decimal"):
        inside = text[text.index("(") + 1 : -1] if "(" in text else "10,0"
        precision, scale = (int(x) for x in inside.split(","))
        return precision, scale
    return None


def _choices(node: exp.Expr) -> list[exp.Expr]:
    """The values a ``CASE``, ``IF`` or ``COALESCE`` may return."""
    if isinstance(node, exp.Case):
        return [branch.args["true"] for branch in node.args.get("ifs") or []] + (
            [node.args["default"]] if node.args.get("default") is not None else [])
    if isinstance(node, exp.If):
        return [v for v in (node.args.get("true"), node.args.get("false")) if v is not None]
    return [node.this, *node.expressions]


def _common_decimal(values: list[exp.Expr]) -> DecimalShape:
    """The decimal Spark coerces the values of a ``CASE``/``IF``/``COALESCE`` to when one is a
    decimal: the widest scale and the most integral digits, at most 38 in all (integral values as
    ``decimal(10,0)`` or ``decimal(20,0)`` by their type; ``NULL`` does not count). ``None`` when
    none is a decimal, or one is neither a number nor ``NULL``."""
    shapes: list[tuple[int, int]] = []
    decimal = False
    for value in values:
        if isinstance(value, exp.Null):
            continue
        shape = decimal_of(value)
        if shape == "double":
            return "double"
        if shape is not None:  # a decimal (an integer literal is none)
            decimal = True
        else:
            shape = _integral_by_type(value)
            if shape is None:
                return None
        shapes.append(shape)
    if not decimal:
        return None
    scale = max(s for _, s in shapes)
    integral = max(p - s for p, s in shapes)
    return min(_MAX_PRECISION, integral + scale), min(_MAX_PRECISION, scale)


def _integral_by_type(node: exp.Expr) -> tuple[int, int] | None:
    """An integral value as the decimal its type widens to (a literal is an ``int`` if it fits)."""
    if isinstance(node, exp.Literal) and not node.is_string and node.this.lstrip("-").isdigit():
        return (10, 0) if abs(int(node.this)) < 2**31 else (20, 0)
    return _integral_as_decimal(node)


def _integral_as_decimal(node: exp.Expr) -> tuple[int, int] | None:
    """An integral operand of decimal arithmetic as the decimal Spark widens it to."""
    if isinstance(node, exp.Literal) and not node.is_string and node.this.lstrip("-").isdigit():
        return max(1, len(node.this.lstrip("-").lstrip("0"))), 0
    digits = _INTEGRAL_DIGITS.get(_annotated(node))
    return (digits, 0) if digits is not None else None


_INTEGRAL = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")


def aggregate_type(call: exp.Expr) -> str:
    """The Spark result type of an aggregate call: sqlglot's annotation, corrected where Spark
    widens (``SUM`` of an integral is ``bigint``, of ``decimal(p,s)`` is ``decimal(p+10,s)``;
    ``AVG`` of ``decimal(p,s)`` is ``decimal(p+4,s+4)``, of anything else ``double``)."""
    inner = call.this if isinstance(call, exp.Filter) else call
    if isinstance(inner, exp.Count):
        return "bigint"
    if not isinstance(inner, (exp.Sum, exp.Avg)):
        return spark_type(call)
    argument = inner.this.this if isinstance(inner.this, exp.Distinct) else inner.this
    arg_type = spark_type(argument)
    if arg_type.startswith("decimal"):
        p, s = decimal_shape(arg_type) or (10, 0)  # a bare ``decimal`` is decimal(10,0)
        if isinstance(inner, exp.Sum):
            return f"decimal({min(38, p + 10)},{s})"
        return f"decimal({min(38, p + 4)},{min(38, s + 4)})"
    if isinstance(inner, exp.Avg):
        return "double" if arg_type != UNKNOWN_TYPE else spark_type(call)
    if arg_type in _INTEGRAL:
        return "bigint"
    if arg_type in ("float", "double", "real"):
        return "double"
    return spark_type(call)


def is_subquery_node(node: exp.Expr) -> bool:
    """Whether ``node`` opens a nested query (scalar subquery, EXISTS, IN (SELECT ...))."""
    return isinstance(node, (exp.Subquery, exp.Exists)) or (isinstance(node, exp.In) and node.args.get("query") is not None)


def contains_subquery(node: exp.Expr) -> bool:
    return any(is_subquery_node(n) for n in node.walk())


def aggregates_in(node: exp.Expr) -> list[exp.Expr]:
    """Aggregate calls in ``node`` that belong to its own query block (not to subqueries).

    ``agg(...) FILTER (WHERE ...)`` counts as one call.
    """

    def is_call(n: exp.Expr) -> bool:
        return isinstance(n, exp.AggFunc) or (isinstance(n, exp.Filter) and isinstance(n.this, exp.AggFunc))

    found: list[exp.Expr] = []
    queue = [node]  # breadth first, as sqlglot walks, so that calls keep their order
    while queue:
        n = queue.pop(0)
        if is_subquery_node(n):
            continue
        if is_call(n):
            found.append(n)
            continue
        if isinstance(n, exp.Window):
            # the window's own function is not an aggregate of the block; its arguments, its
            # PARTITION BY and its ORDER BY may hold some (``SUM(SUM(x)) OVER (...)``)
            queue.extend(n.this.iter_expressions())
            queue.extend(child for key, child in _children(n) if key != "this")
            continue
        queue.extend(n.iter_expressions())
    return found


def _children(node: exp.Expr) -> list[tuple[str, exp.Expr]]:
    return [(key, child) for key, value in node.args.items()
            for child in (value if isinstance(value, list) else [value]) if isinstance(child, exp.Expr)]


def window_sources(select: exp.Select) -> list[exp.Expr]:
    """The clauses of a block that may hold its window functions: the select list and ORDER BY."""
    order = select.args.get("order")
    return list(select.expressions) + ([o.this for o in order.expressions] if order is not None else [])


def windows_in(node: exp.Expr) -> list[exp.Window]:
    """Window function calls in ``node`` that belong to its own query block."""
    return [
        n for n in node.walk(prune=lambda n: isinstance(n, exp.Window) or is_subquery_node(n))
        if isinstance(n, exp.Window)
    ]


def select_has_aggregation(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(aggregates_in(e) for e in select.expressions)


def unwrap_query(node: exp.Expr) -> exp.Expr:
    while isinstance(node, (exp.Subquery, exp.Paren)) and not node.alias:
        node = node.this
    return node


class BlockBinder(Protocol):
    """What :class:`~tempura.sql.subqueries.SubqueryPlanner` asks of the binder driving it: to
    bind nested query blocks, resolve columns in a scope, and build filters and aggregates."""

    sql: str
    names: NameAllocator

    def bind_error(self, message: str, node: exp.Expr | None) -> BindError: ...

    def cte_frame(self, node: exp.Expr) -> ContextManager[None]: ...

    def bind_query(self, node: exp.Expr, outer: Scope | None) -> Bound: ...

    def bind_from(self, select: exp.Select, outer: Scope | None) -> tuple[LogicalPlan, Scope]: ...

    def resolve(self, node: exp.Expr, scope: Scope) -> exp.Expr: ...

    def max_depth(self, node: exp.Expr, scope: Scope) -> int: ...

    def apply_predicates(self, plan: LogicalPlan, predicates: list[exp.Expr], scope: Scope,
                         rewrite: Rewrite) -> LogicalPlan: ...

    def bind_aggregate(self, plan: LogicalPlan, scope: Scope, keys: list[exp.Expr], calls: list[exp.Expr],
                       select_items: list[exp.Expr] | None = None, group_asts: list[exp.Expr] | None = None,
                       ) -> tuple[LogicalPlan, Rewrite]: ...
