"""Which source columns' distributions a query's estimates read.

A column's distinct count and quantiles (the sketches of :mod:`tempura.stats.sketch`) matter to
cardinality estimation only where rows are compared on it: a predicate, a join condition, a
grouping, a distinct aggregate, a window's partition or order, a set operation's rows, a sort. A
column the query only sums, averages or projects into a result never changes how many rows an
operator returns: its counts, nulls, range and widths suffice, and sketching its distinct values
at every landing is work for nothing. This is the query-driven choice ``ANALYZE TABLE … FOR
COLUMNS`` leaves to its user, made from the plan.

:func:`compared_columns` follows each plan column back to the source columns it is computed
from, and collects those behind every column an operator compares. Anything it does not know
(an operator of another kind) counts every column it sees as compared: the answer errs towards
sketching more, never less.
"""

from __future__ import annotations

from typing import Iterable

from sqlglot import exp

from tempura.algebra.expressions import columns_in
from tempura.algebra.operators import (Aggregate, Distinct, Filter, Join, Limit, LogicalPlan, PartialAggregate, Project,
                                       Repeat, Scan, SetOperation, Sort, Values, Window)

Lineage = dict[str, frozenset[tuple[str, str]]]  # a plan column -> the (table, source column) it comes from


def compared_columns(plan: LogicalPlan) -> set[tuple[str, str]]:
    """The (table, source column, lower case) pairs whose distributions estimating ``plan`` reads."""
    compared: set[tuple[str, str]] = set()
    _lineage(plan, compared)
    return compared


def _behind(lineage: Lineage, names: Iterable[str]) -> frozenset[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for name in names:
        out |= lineage.get(name, frozenset())
    return frozenset(out)


def _lineage(plan: LogicalPlan, compared: set[tuple[str, str]]) -> Lineage:
    """``plan``'s columns' lineage; what its operators compare added to ``compared``."""
    if isinstance(plan, Scan):
        return {c.field.name: frozenset({(plan.table, c.source.lower())}) for c in plan.columns}
    if isinstance(plan, Values):
        return {}
    inputs = [_lineage(child, compared) for child in plan.inputs]
    below: Lineage = {}
    for one in inputs:
        below.update(one)

    def compare(names: Iterable[str]) -> None:
        compared.update(_behind(below, names))

    if isinstance(plan, Filter):
        compare(columns_in(plan.condition))
        return below
    if isinstance(plan, Project):
        return {p.field.name: _behind(below, columns_in(p.expression)) for p in plan.projections}
    if isinstance(plan, Join):
        if plan.condition is not None:
            compare(columns_in(plan.condition))
        return below
    if isinstance(plan, (Aggregate, PartialAggregate)):
        compare(plan.keys)
        out = {key: below.get(key, frozenset()) for key in plan.keys}
        for call in plan.calls:
            used = columns_in(call.call)
            if call.distinct or isinstance(call.call, exp.Filter):  # distinct values, or a condition
                compare(used)
            # a later operator comparing the result (HAVING) compares what it is computed from
            out[call.field.name] = _behind(below, used)
        return out
    if isinstance(plan, Window):
        for window in plan.calls:
            compare(columns_in(window.call))
        out = dict(below)
        out.update({window.field.name: _behind(below, columns_in(window.call)) for window in plan.calls})
        return out
    if isinstance(plan, Sort):
        for key in plan.keys:
            compare(columns_in(key.expression))
        return below
    if isinstance(plan, (Limit, Repeat)):
        return below
    if isinstance(plan, Distinct):
        compare(below)
        return below
    if isinstance(plan, SetOperation):
        left, right = inputs
        compare(left)
        compare(right)
        return {f.name: left.get(a.name, frozenset()) | right.get(b.name, frozenset())
                for f, a, b in zip(plan.fields, plan.left.schema.fields, plan.right.schema.fields)}
    compare(below)  # an operator of another kind: everything it sees counts as compared
    return below


__all__ = ["compared_columns"]
