"""Projection pruning: every operator keeps only the columns something above it reads.

One top-down pass carries the set of required columns: a scan reads only those (at least one,
so that it still counts rows), a projection or aggregate drops outputs nobody reads, and each
operator adds what it reads itself (conditions, keys, sort keys). ``Distinct`` and the set
operations need every input column (duplicates and positions depend on all of them). The root
keeps its whole schema.
"""

from __future__ import annotations

from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    SetOperation,
    Sort,
    Values,
    Window,
    columns_in,
)


def _refs(*expressions: exp.Expr | None) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for expression in expressions:
        if expression is not None:
            out |= columns_in(expression)
    return out


def prune_columns(plan: LogicalPlan) -> LogicalPlan:
    """``plan`` with unread columns removed below its root (the root's schema is unchanged)."""
    return _prune(plan, frozenset(plan.schema.names))


def _prune(plan: LogicalPlan, required: frozenset[str]) -> LogicalPlan:
    if isinstance(plan, Scan):
        kept = tuple(c for c in plan.columns if c.field.name in required) or plan.columns[:1]
        return plan if len(kept) == len(plan.columns) else Scan(plan.table, kept, plan.alias)
    if isinstance(plan, Values):
        return plan
    if isinstance(plan, Filter):
        return Filter(_prune(plan.input, required | _refs(plan.condition)), plan.condition)
    if isinstance(plan, Project):
        kept_p = tuple(p for p in plan.projections if p.field.name in required) or plan.projections[:1]
        child = _prune(plan.input, _refs(*(p.expression for p in kept_p)))
        return Project(child, kept_p)
    if isinstance(plan, Aggregate):
        calls = tuple(c for c in plan.calls if c.field.name in required)
        if not calls and not plan.keys:
            calls = plan.calls[:1]  # a scalar aggregate still yields its one row
        child = _prune(plan.input, frozenset(plan.keys) | _refs(*(c.call for c in calls)))
        return Aggregate(child, plan.keys, calls)
    if isinstance(plan, Join):
        needed = required | _refs(plan.condition)
        left = _prune(plan.left, needed & frozenset(plan.left.schema.names))
        right = _prune(plan.right, needed & frozenset(plan.right.schema.names))
        return plan.with_inputs(left, right)
    if isinstance(plan, Sort):
        return Sort(_prune(plan.input, required | _refs(*(k.expression for k in plan.keys))), plan.keys)
    if isinstance(plan, Window):
        windows = tuple(c for c in plan.calls if c.field.name in required)
        inputs = frozenset(plan.input.schema.names)
        child = _prune(plan.input, (required & inputs) | _refs(*(c.call for c in windows)))
        return Window(child, windows) if windows else child
    if isinstance(plan, Limit):
        return plan.with_inputs(_prune(plan.input, required))
    if isinstance(plan, (Distinct, SetOperation)):
        return plan.with_inputs(*(_prune(child, frozenset(child.schema.names)) for child in plan.inputs))
    raise TypeError(f"no pruning for {plan.operator}")
