"""Delta rules for semi- and anti-joins: a row of S enters or leaves when its match status
changes (SEMANTICS.md, "semi / anti join"); with keys that land once, only the deltas meet.

With ``T = S_{v-1} ⋉ ΔR`` (the old rows of S that a changed row of R matches — no other row can
change status):

- ``Δ(S ⋉ R) = ΔS ⋉ R_v + ((T ▷ R_{v-1}) ⋉ R_v) − ((T ⋉ R_{v-1}) ▷ R_v)``
- ``Δ(S ▷ R) = ΔS ▷ R_v + ((T ⋉ R_{v-1}) ▷ R_v) − ((T ▷ R_{v-1}) ⋉ R_v)``

The first term is linear in S (semi- and anti-joins keep or drop each row of S by itself, with
its multiplicity); the other two are the old rows that got their first match or lost their last.
``⋉`` and ``▷`` use the join condition; the result keeps S's columns, as the join does.
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from tempura.algebra import Filter, Join, JoinKind, LogicalPlan, Project, Projection, Union, col
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.bounds import equated
from tempura.tvr.operators import Consolidate, ToDelta
from tempura.tvr.zset import MULT, MULT_FIELD


def match_changes(x: Expansion, expr: Join, v: int) -> tuple[LogicalPlan, LogicalPlan, LogicalPlan, LogicalPlan] | None:
    """``(ΔS, R_v, found, lost)``: S's delta, R's new snapshot, and the old rows of S that got
    their first match and that lost their last one in the interval."""
    s, r = x.child(expr.left), x.child(expr.right)
    delta_s, delta_r = x.sd(s, v), x.sd(r, v)
    old_s, old_r, new_r = x.ss(s, v - 1), x.ss(r, v - 1), x.ss(r, v)
    if delta_s is None or delta_r is None or old_s is None or old_r is None or new_r is None:
        return None
    cond = expr.condition
    touched = Join(JoinKind.SEMI, old_s, delta_r, cond)
    found = Join(JoinKind.SEMI, Join(JoinKind.ANTI, touched, old_r, cond), new_r, cond)
    lost = Join(JoinKind.ANTI, Join(JoinKind.SEMI, touched, old_r, cond), new_r, cond)
    return delta_s, new_r, found, lost


class DeltaSemiAntiJoin(TvrRule):
    """``Δ(S ⋉ R)`` and ``Δ(S ▷ R)`` from ``ΔS``, ``ΔR`` and the snapshots around them (from
    ``v = 2``; ``SD[0,1]`` is the first snapshot)."""

    name = "tvr-delta-semi-anti-join"
    family = "semi and anti join"
    pattern = (Join,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if expr.kind not in (JoinKind.SEMI, JoinKind.ANTI) or form.end < 2:
            return []
        parts = match_changes(x, expr, form.end)
        if parts is None:
            return []
        delta_s, new_r, found, lost = parts
        enters, leaves = (found, lost) if expr.kind is JoinKind.SEMI else (lost, found)
        fields = tuple(expr.schema.fields) + (MULT_FIELD,)
        linear = Join(expr.kind, delta_s, new_r, expr.condition)
        plan: LogicalPlan = Union(linear, ToDelta(enters, 1), True, fields)
        return [Union(plan, ToDelta(leaves, -1), True, fields)]


class DeltaSemiAntiJoinKeyed(TvrRule):
    """``Δ(S ⋉ R) ⇒ ΔS ⋉ ⁺ΔR + found − lost`` (and ``▷`` alike) when ``ΔS ⋉ R_{v-1}`` is proven
    empty (:meth:`~tempura.tvr.bounds.Prover.apart`: the keys the new rows of S hold landed
    after every key of the old rows of R). A row of R matching a new row of S is then not in
    ``R_{v-1}``, so its count in ``R_v`` is its count in ``ΔR``, and ``R_v`` can be replaced by
    ``⁺ΔR``, the rows of ``ΔR`` whose multiplicities sum to more than 0 (``ΔR`` itself when it
    only inserts). The snapshot of R is not read, however large; ``found`` and ``lost`` are
    those of :class:`DeltaSemiAntiJoin` (usually proven empty on the same keys)."""

    name = "tvr-delta-semi-anti-join-keyed"
    family = "semi and anti join"
    pattern = (Join,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if (expr.kind not in (JoinKind.SEMI, JoinKind.ANTI) or form.end < 2
                or x.prover is None or expr.condition is None):
            return []
        v, r = form.end, x.child(expr.right)
        delta_s, old_r, delta_r = x.sd(x.child(expr.left), v), x.ss(r, v - 1), x.sd(r, v)
        if delta_s is None or old_r is None or delta_r is None:
            return []
        left = set(expr.left.schema.names)
        pairs = [(a, b) if a in left else (b, a) for a, b in equated(expr.condition)]
        if not x.prover.apart(delta_s.group, old_r.group, pairs):
            return []
        parts = match_changes(x, expr, v)
        if parts is None:
            return []
        _, _, found, lost = parts
        positive: LogicalPlan = delta_r if x.unit_delta(r) else Filter(
            Consolidate(delta_r), exp.GT(this=col(MULT), expression=exp.Literal.number(0)))
        positive = Project(positive, tuple(Projection(f, col(f.name)) for f in positive.schema.fields if f.name != MULT))
        enters, leaves = (found, lost) if expr.kind is JoinKind.SEMI else (lost, found)
        fields = tuple(expr.schema.fields) + (MULT_FIELD,)
        plan: LogicalPlan = Union(Join(expr.kind, delta_s, positive, expr.condition), ToDelta(enters, 1), True, fields)
        return [Union(plan, ToDelta(leaves, -1), True, fields)]
