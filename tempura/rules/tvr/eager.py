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

**Counts over a side that does not change** (``tvr-outer-join-count-update``). When the eager
form groups by exactly the preserved side's join columns, ``γ_K(COUNT(r))(L ⟕_{K = k} R)``, and
``L`` has no delta over an interval, the kept partial states are updated in place:

``PS[v] ⇒ π(PS[v-1] ⟕_{K = k} VD[v](γ_k(COUNT(r))(R)))`` with ``sum := sum + rows · Δn``

Each row of ``L`` meets at most one row of the inner aggregate (it is grouped by the join
columns), so a group's ``__rows`` is the number of rows of ``L`` with that key, and does not
change while ``L`` does not. Its outer sum is ``COALESCE(p, 0)`` summed over those rows, where
``p`` is the inner count of the one matching group: linear in the inner partial count ``n``
whether the inner group appears, grows, shrinks or disappears (a group that disappears has
counted its last row away, so ``n`` is 0). The change of the sum is therefore the inner value
delta's ``n`` times ``__rows``, and no group of the outer aggregate appears or disappears. The
update reads the kept states and the inner value delta only — neither ``L`` nor the outer join
— and needs no exchange of the states: the value delta, one row per changed key, is the small
side of a left join. NULL keys match nothing, on either side, as in the join. This is TPC-H
Q13's inner aggregate while customers do not arrive. The rule fires at the versions whose ``L``
delta is proven empty (:meth:`~tempura.tvr.bounds.Prover.empty`), which is why it is not copied
across versions.
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from tempura.algebra import Aggregate, AggregateCall, Field, Join, JoinKind, LogicalPlan, Project, Projection, col
from tempura.algebra import columns_in, conjoin, conjuncts
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.bounds import equated
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.partials import ROWS, partial_columns

_INTEGRAL = {"tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte"}


class AggregateBelowOuterJoin(TvrRule):
    """Adds the eagerly aggregated form of ``γ(L ⟕ R)`` to the template (see the module)."""

    name = "tvr-aggregate-below-outer-join"
    family = "outer join"
    pattern = (Aggregate,)
    produces = FormKind.DELTA
    phase = "template"
    method = "ojv"

    def rewrite(self, x: Expansion, group: int, expr: LogicalPlan) -> list[LogicalPlan]:
        expr = cast(Aggregate, expr)  # the expansion offers only expressions of the pattern
        if not expr.calls or not expr.keys:
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
    name = _unused(call.field.name + "__part", taken)
    inner_type = "bigint" if call.function in ("count", "sum") else call.field.type
    part = Field(name, inner_type, True)
    merged: exp.Expr
    if call.function == "count":
        merged = exp.Sum(this=exp.Coalesce(this=col(name), expressions=[exp.Literal.number(1 if star else 0)]))
    else:
        merged = type(call.call)(this=col(name))
    return AggregateCall(part, call.call), AggregateCall(call.field, merged)


def _unused(name: str, taken: set[str]) -> str:
    """``name``, with underscores appended until it is none of ``taken``."""
    while name in taken:
        name += "_"
    return name


class OuterJoinCountUpdate(TvrRule):
    """``PS[v](γ_K(L ⟕ γ_k(R))) ⇒ PS[v-1]`` updated by key from the inner value delta, while
    ``L`` does not change (see the module)."""

    name = "tvr-outer-join-count-update"
    family = "outer join"
    produces = FormKind.PARTIAL
    phase = "intra"
    per_expression = False
    method = "ojv"
    version_specific = True  # valid where L's delta is proven empty: checked at every version

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        agg = x.aggregate_of(group)
        if not isinstance(agg, Aggregate) or not agg.keys or form.end < 2 or x.prover is None:
            return []
        for join in x.template_exprs(x.child(agg.input)):
            found = _count_update(x, group, agg, join, form.end)
            if found is not None:
                return [found]
        return []


def _count_update(x: Expansion, group: int, agg: Aggregate, join: LogicalPlan, version: int) -> LogicalPlan | None:
    if not isinstance(join, Join) or join.kind not in (JoinKind.LEFT, JoinKind.RIGHT):
        return None
    kept, padded = (join.right, join.left) if join.kind is JoinKind.RIGHT else (join.left, join.right)
    inner = x.aggregate_of(x.child(padded))
    if not isinstance(inner, Aggregate) or not inner.keys:
        return None
    pairs = equated(join.condition)
    if not pairs or len(pairs) != len(conjuncts(join.condition)):
        return None  # an equi-join: every conjunct equates two columns
    kept_names, padded_names = set(kept.schema.names), set(padded.schema.names)
    on: dict[str, str] = {}  # preserved join column -> inner key
    for a, b in pairs:
        if a in padded_names and b in kept_names:
            a, b = b, a
        if a not in kept_names or b not in padded_names or on.get(a, b) != b:
            return None
        on[a] = b
    if set(on) != set(agg.keys) or sorted(on.values()) != sorted(inner.keys):
        return None  # grouped by exactly the join columns, each matching one inner key
    counts = {c.field.name: c for c in inner.calls if c.function == "count" and not c.distinct
              and not isinstance(c.call, exp.Filter)}
    deltas: dict[str, str] = {}  # the outer sum's partial column -> the inner partial count it sums
    for call in agg.calls:
        node = call.call
        if call.distinct or call.function != "sum" or not isinstance(node.this, exp.Coalesce):
            return None
        coalesce = node.this
        rest = coalesce.expressions
        counted = coalesce.this.name if isinstance(coalesce.this, exp.Column) and not coalesce.this.table else None
        if counted not in counts or len(rest) != 1 or not (isinstance(rest[0], exp.Literal) and rest[0].this == "0"):
            return None
        deltas[partial_columns(call)[0].field.name] = partial_columns(counts[counted])[0].field.name
    unchanged = x.sd(x.child(kept), version)
    if unchanged is None or x.prover is None or not x.prover.empty(unchanged.group):
        return None  # L may change over the interval
    old, delta = x.ps(group, version - 1), x.vd(x.child(padded), version)
    if old is None or delta is None:
        return None
    taken = set(old.schema.names)
    renamed: dict[str, str] = {}
    for counted in sorted(set(deltas.values())):
        renamed[counted] = _unused(counted + "__delta", taken)
        taken.add(renamed[counted])
    changes = Project(delta, tuple(Projection(delta.schema.field(k), col(k)) for k in inner.keys) + tuple(
        Projection(Field(name, "bigint", True), col(counted)) for counted, name in renamed.items()))
    matched = Join(JoinKind.LEFT, old, changes, conjoin([exp.EQ(this=col(a), expression=col(b)) for a, b in on.items()]))
    projections = []
    for f in old.schema.fields:
        expression: exp.Expr = col(f.name)
        if f.name in deltas:
            change = exp.Mul(this=col(ROWS), expression=exp.Coalesce(this=col(renamed[deltas[f.name]]),
                                                                     expressions=[exp.Literal.number(0)]))
            expression = exp.cast(exp.Add(this=col(f.name), expression=change), f.type)
        projections.append(Projection(f, expression))
    return Project(matched, tuple(projections))


__all__ = ["AggregateBelowOuterJoin", "OuterJoinCountUpdate"]
