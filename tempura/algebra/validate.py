"""Structural checks of a plan: every column an operator references exists in its input.

The front end runs this on what it builds, and tests run it on every plan they see, so that a
rewrite that loses a column fails where it happens and not later inside Spark.
"""

from __future__ import annotations

from sqlglot import exp

from tempura.algebra.expressions import columns_in
from tempura.algebra.operators import (
    Generate,
    Aggregate,
    Filter,
    Join,
    LogicalPlan,
    Project,
    SetOperation,
    Sort,
    Values,
    Window,
)


class InvalidPlan(ValueError):
    """A plan violates an invariant of the algebra: a bug in whatever built it."""


def _check_refs(node: LogicalPlan, expression: exp.Expr, available: frozenset[str]) -> None:
    missing = columns_in(expression) - available
    if missing:
        raise InvalidPlan(
            f"{node.operator} references unknown column(s) {sorted(missing)} in "
            f"{expression.sql(dialect='spark')}; input has {sorted(available)}"
        )


def validate_plan(plan: LogicalPlan) -> None:
    """Raise :class:`InvalidPlan` if any operator in ``plan`` is malformed."""
    seen: set[int] = set()
    for node in _walk(plan):
        if id(node) in seen:
            continue
        seen.add(id(node))
        _validate_node(node)


def _walk(plan: LogicalPlan) -> list[LogicalPlan]:
    out: list[LogicalPlan] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.inputs)
    return out


def _validate_node(node: LogicalPlan) -> None:
    if isinstance(node, Join):
        overlap = set(node.left.schema.names) & set(node.right.schema.names)
        if overlap:
            raise InvalidPlan(f"Join inputs share column names {sorted(overlap)}")
    try:
        _ = node.schema
    except ValueError as error:  # duplicate output names
        raise InvalidPlan(f"{node.operator}: {error}") from None
    if isinstance(node, Filter):
        _check_refs(node, node.condition, frozenset(node.input.schema.names))
    elif isinstance(node, Project):
        available = frozenset(node.input.schema.names)
        for p in node.projections:
            _check_refs(node, p.expression, available)
            if p.field.name in available and not p.is_passthrough:
                raise InvalidPlan(f"Project reuses input column name {p.field.name} for a new value")
    elif isinstance(node, Join):
        if node.condition is not None:
            both = frozenset(node.left.schema.names) | frozenset(node.right.schema.names)
            _check_refs(node, node.condition, both)
    elif isinstance(node, Aggregate):
        available = frozenset(node.input.schema.names)
        missing = set(node.keys) - available
        if missing:
            raise InvalidPlan(f"Aggregate groups by unknown column(s) {sorted(missing)}")
        for call in node.calls:
            _check_refs(node, call.call, available)
    elif isinstance(node, Window):
        available = frozenset(node.input.schema.names)
        for window_call in node.calls:
            _check_refs(node, window_call.call, available)
    elif isinstance(node, Generate):
        _check_refs(node, node.call, frozenset(node.input.schema.names))
    elif isinstance(node, Sort):
        for key in node.keys:
            _check_refs(node, key.expression, frozenset(node.input.schema.names))
    elif isinstance(node, SetOperation):
        if not (len(node.left.schema) == len(node.right.schema) == len(node.fields)):
            raise InvalidPlan(f"{node.operator} inputs have different numbers of columns")
    elif isinstance(node, Values):
        for row in node.rows:
            if len(row) != len(node.fields):
                raise InvalidPlan("Values row has the wrong number of columns")
