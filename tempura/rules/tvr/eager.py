"""Eager aggregation below an outer join: the template gains, for an aggregate over the
null-padded side of a left (or right) join, the form that aggregates that side first.

``γ_K(f(r…))(L ⟕_{l = r} R) ⇒ γ_K(g(p…))(L ⟕_{l = r} γ_r(f_part(r…) AS p…)(R))``

where ``K`` are columns of the preserved side ``L`` (at least one: every group then has a row of
``L``, and its outer calls sum at least one partial), every call reads columns of ``R`` only, and
the join condition equates columns of ``L`` with columns of ``R`` (other conjuncts over ``R``
alone are filters below the join already, by predicate pushdown). Each row of ``L`` meets the
rows of ``R`` with its join values, which are one group of the inner aggregate, so a call over
the join is its partial over that group, summed over the rows of ``L`` in the outer group —
whether or not ``L`` repeats a join value:

| call over the join | inner partial ``p`` | outer call |
|---|---|---|
| ``COUNT(r)`` | ``COUNT(r)`` | ``SUM(COALESCE(p, 0))`` (a padded row counts no ``r``) |
| ``COUNT(*)`` | ``COUNT(*)`` | ``SUM(COALESCE(p, 1))`` (a padded row is one row) |
| ``SUM(r)``, integral | ``SUM(r)`` | ``SUM(p)`` (NULL when every ``p`` is) |
| ``MIN(r)``, ``MAX(r)`` | the same | the same |

``SUM`` over decimals and floating point is left alone: its partial sums widen the type or round
differently. This is what makes the outer join incremental in TPC-H Q13: the inner aggregate
is maintained by value deltas, and the outer join's delta probes the aggregate's kept state
instead of every order that arrived before (``tvr-delta-outer-join-probe``).
"""

from __future__ import annotations

from sqlglot import exp

from tempura.algebra import Aggregate, AggregateCall, Field, Join, JoinKind, LogicalPlan, col, columns_in, conjuncts
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.bounds import equated
from tempura.tvr.forms import FormKind

_INTEGRAL = {"tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte"}


class AggregateBelowOuterJoin(TvrRule):
    """Adds the eagerly aggregated form of ``γ(L ⟕ R)`` to the template (see the module)."""

    name = "tvr-aggregate-below-outer-join"
    produces = FormKind.DELTA
    phase = "template"
    method = "ojv"

    def rewrite(self, x: Expansion, group: int, expr: LogicalPlan) -> list[LogicalPlan]:
        if not isinstance(expr, Aggregate) or not expr.calls or not expr.keys:
            return []  # a global aggregate over no rows of L counts 0, its outer SUM would be NULL
        out = []
        for join in x.template_exprs(x.child(expr.input)):
            if isinstance(join, Join) and join.kind in (JoinKind.LEFT, JoinKind.RIGHT):
                found = _eager(expr, join)
                if found is not None:
                    out.append(found)
        return out


def _eager(expr: Aggregate, join: Join) -> LogicalPlan | None:
    mirrored = join.kind is JoinKind.RIGHT
    kept, padded = (join.right, join.left) if mirrored else (join.left, join.right)
    kept_names, padded_names = set(kept.schema.names), set(padded.schema.names)
    if not set(expr.keys) <= kept_names:
        return None
    pairs = equated(join.condition)
    if not pairs or len(pairs) != len(conjuncts(join.condition)):
        return None  # an equi-join: every conjunct equates two columns
    padded_keys: list[str] = []
    for a, b in pairs:
        if a in padded_names and b in kept_names:
            a, b = b, a
        if a not in kept_names or b not in padded_names:
            return None
        if b not in padded_keys:
            padded_keys.append(b)
    if not padded_keys:
        return None
    inner_calls: list[AggregateCall] = []
    outer_calls: list[AggregateCall] = []
    taken = set(padded_names) | set(kept_names)
    for call in expr.calls:
        found = _split(call, padded_names, taken)
        if found is None:
            return None
        inner, outer = found
        inner_calls.append(inner)
        outer_calls.append(outer)
        taken.add(inner.field.name)
    inner_aggregate = Aggregate(padded, tuple(padded_keys), tuple(inner_calls))
    eager = Join(join.kind, inner_aggregate, kept, join.condition) if mirrored else Join(join.kind, kept, inner_aggregate, join.condition)
    return Aggregate(eager, expr.keys, tuple(outer_calls))


def _split(call: AggregateCall, names: set[str], taken: set[str]) -> tuple[AggregateCall, AggregateCall] | None:
    """The inner partial and the outer call of one call (the module's table), or ``None``."""
    if call.distinct or isinstance(call.call, exp.Filter) or call.function not in ("count", "sum", "min", "max"):
        return None
    argument = call.call.args.get("this")
    star = isinstance(argument, exp.Star)
    if not star and (argument is None or not columns_in(argument) or not set(columns_in(argument)) <= names):
        return None
    if call.function == "sum" and call.field.type.lower() not in _INTEGRAL:
        return None
    name = call.field.name + "__part"
    while name in taken:
        name += "_"
    inner_type = "bigint" if call.function in ("count", "sum") else call.field.type
    part = Field(name, inner_type, True)
    merged: exp.Expr
    if call.function == "count":
        merged = exp.Sum(this=exp.Coalesce(this=col(name), expressions=[exp.Literal.number(1 if star else 0)]))
    else:
        merged = type(call.call)(this=col(name))
    return AggregateCall(part, call.call), AggregateCall(call.field, merged)


__all__ = ["AggregateBelowOuterJoin"]
