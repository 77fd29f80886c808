"""Generating rules: a snapshot or delta of an operator from its inputs' snapshots and deltas.

``S_v`` is ``SS[v]`` of S, ``ΔS`` is ``SD[v-1,v]``. Deltas are Z-sets: the multiplicity column
``__m`` passes through filters, projections and unions unchanged, and through a join with a
snapshot (whose rows count once each) unchanged as well. Only the keyed join's last term joins
two deltas, and multiplies their multiplicities.
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from tempura.algebra import Field, Filter, Generate, Join, JoinKind, LogicalPlan, Project, Projection, Scan, Union, col
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.operators import SourceRead, ToDelta
from tempura.tvr.zset import MULT, MULT_FIELD


def _ordered(plan: LogicalPlan, fields: tuple[Field, ...]) -> LogicalPlan:
    """``plan``'s columns in the order ``fields`` names them (a projection when they differ)."""
    names = [f.name for f in fields]
    if list(plan.schema.names) == names:
        return plan
    return Project(plan, tuple(Projection(plan.schema.field(n), col(n)) for n in names))


def delta_fields(plan: LogicalPlan) -> tuple[Field, ...]:
    return tuple(plan.schema.fields) + (MULT_FIELD,)


class SnapshotScan(TvrRule):
    """``SS[v](Scan R) ⇒ SourceRead(R, (t_0, t_v])``: a source's snapshot is what has arrived
    by ``t_v`` (with its deletions applied)."""

    name = "tvr-snapshot-scan"
    family = "scan"
    pattern = (Scan,)
    produces = FormKind.SNAPSHOT
    method = "batch"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Scan, expr)  # the expansion offers only expressions of the pattern
        return [SourceRead(expr, 0, form.end, False)]


class SnapshotOperator(TvrRule):
    """``SS[v](op(A, B)) ⇒ op(SS[v](A), SS[v](B))``: any operator's snapshot is the operator over
    its inputs' snapshots. This is recompute, and it is always available."""

    name = "tvr-snapshot"
    family = "any operator"
    produces = FormKind.SNAPSHOT
    method = "batch"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        if expr is None or isinstance(expr, Scan) or not expr.inputs:
            return [expr] if expr is not None and not isinstance(expr, Scan) else []
        inputs = [x.ss(x.child(c), form.end) for c in expr.inputs]
        if any(i is None for i in inputs):
            return []
        return [expr.with_inputs(*inputs)]  # type: ignore[arg-type]


class DeltaScan(TvrRule):
    """``SD[v-1,v](Scan R) ⇒ SourceRead(R, (t_{v-1}, t_v])``: the rows that arrived in the
    interval, ``+1`` each, and ``-1`` for each deletion."""

    name = "tvr-delta-scan"
    family = "scan"
    pattern = (Scan,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Scan, expr)  # the expansion offers only expressions of the pattern
        return [SourceRead(expr, form.start, form.end, True)]


class DeltaFilter(TvrRule):
    """``Δσ_p(R) ⇒ σ_p(ΔR)``: a filter keeps or drops each row of the delta with its
    multiplicity, as it would in the snapshot."""

    name = "tvr-delta-filter"
    family = "filter and project"
    pattern = (Filter,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Filter, expr)  # the expansion offers only expressions of the pattern
        delta = x.sd(x.child(expr.input), form.end)
        return [] if delta is None else [Filter(delta, expr.condition)]


class DeltaProject(TvrRule):
    """``Δπ(R) ⇒ π(ΔR)`` with the multiplicity passed through: a bag projection maps each row,
    so it maps each delta row."""

    name = "tvr-delta-project"
    family = "filter and project"
    pattern = (Project,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Project, expr)  # the expansion offers only expressions of the pattern
        delta = x.sd(x.child(expr.input), form.end)
        if delta is None:
            return []
        return [Project(delta, expr.projections + (Projection(MULT_FIELD, col(MULT)),))]


class DeltaGenerate(TvrRule):
    """``Δ gen(R) ⇒ gen(ΔR)``: a LATERAL VIEW maps each input row to its generated rows, so it
    maps each delta row to rows of the same multiplicity (the multiplicity is an input column,
    carried to each)."""

    name = "tvr-delta-generate"
    family = "filter and project"
    pattern = (Generate,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Generate, expr)  # the expansion offers only expressions of the pattern
        delta = x.sd(x.child(expr.input), form.end)
        if delta is None:
            return []
        return [_ordered(Generate(delta, expr.call, expr.fields, expr.outer), delta_fields(expr))]


class DeltaJoin(TvrRule):
    """``Δ(S ⋈ R) ⇒ ΔS ⋈ R_{v-1} + S_v ⋈ ΔR`` for inner (and cross) joins: the join is bilinear,
    and using the old snapshot on one side and the new one on the other counts every new pair
    exactly once. At ``v = 1`` the old snapshots are empty: ``S_1 ⋈ ΔR``."""

    name = "tvr-delta-join"
    family = "join"
    pattern = (Join,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if expr.kind not in (JoinKind.INNER, JoinKind.CROSS):
            return []
        fields = delta_fields(expr)
        terms = _inner_delta_terms(x, expr, form.end, fields)
        return [] if terms is None else [_union_all(terms, fields)]


def _inner_delta_terms(x: Expansion, expr: Join, v: int, fields: tuple[Field, ...]) -> list[LogicalPlan] | None:
    left, right = x.child(expr.left), x.child(expr.right)
    new_left, delta_right = x.ss(left, v), x.sd(right, v)
    if new_left is None or delta_right is None:
        return None
    terms: list[LogicalPlan] = [Join(JoinKind.INNER if expr.condition is not None else expr.kind, new_left, delta_right, expr.condition)]
    if v > 1:
        delta_left, old_right = x.sd(left, v), x.ss(right, v - 1)
        if delta_left is None or old_right is None:
            return None
        terms.insert(0, _ordered(Join(terms[0].kind, delta_left, old_right, expr.condition), fields))  # type: ignore[attr-defined]
    return [_ordered(t, fields) for t in terms]


class DeltaJoinKeyed(TvrRule):
    """``Δ(S ⋈ R) ⇒ ΔS ⋈ R_{v-1} + S_{v-1} ⋈ ΔR + ΔS ⋈ ΔR`` (from ``v = 2``), for inner joins
    that equate columns of one key domain (:meth:`~tempura.tvr.bounds.Prover.co_arriving`): when
    keys land once and with the rows that reference them, old rows of one side never meet new
    rows of the other, so the first two terms are proven empty and only the join of the two
    deltas is computed, whatever the size of the snapshots. It holds for any Z-sets: the last
    term's multiplicity is the product of its inputs'."""

    name = "tvr-delta-join-keyed"
    family = "join"
    pattern = (Join,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if (expr.kind not in (JoinKind.INNER, JoinKind.CROSS) or form.end < 2
                or x.prover is None or not x.prover.co_arriving(expr)):
            return []
        v = form.end
        left, right = x.child(expr.left), x.child(expr.right)
        delta_left, old_right = x.sd(left, v), x.ss(right, v - 1)
        old_left, delta_right = x.ss(left, v - 1), x.sd(right, v)
        if delta_left is None or old_right is None or old_left is None or delta_right is None:
            return []
        fields = delta_fields(expr)
        kind = JoinKind.INNER if expr.condition is not None else expr.kind
        renamed = Project(delta_right, tuple(Projection(f, col(f.name)) for f in delta_right.schema.fields if f.name != MULT)
                          + (Projection(_RIGHT_MULT, col(MULT)),))
        both = Join(kind, delta_left, renamed, expr.condition)
        product = Project(both, tuple(Projection(f, col(f.name)) for f in expr.schema.fields)
                          + (Projection(MULT_FIELD, exp.Mul(this=col(MULT), expression=col(_RIGHT_MULT.name))),))
        terms = [Join(kind, delta_left, old_right, expr.condition), Join(kind, old_left, delta_right, expr.condition), product]
        return [_union_all([_ordered(t, fields) for t in terms], fields)]


_RIGHT_MULT = Field("__m_right", "bigint", False)


def _union_all(terms: list[LogicalPlan], fields: tuple[Field, ...]) -> LogicalPlan:
    plan = terms[0]
    for t in terms[1:]:
        plan = Union(plan, t, True, fields)
    return plan


class DeltaUnion(TvrRule):
    """``Δ(S ⊎ R) ⇒ ΔS ⊎ ΔR`` for ``UNION ALL``: multiplicities add."""

    name = "tvr-delta-union"
    family = "union"
    pattern = (Union,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Union, expr)  # the expansion offers only expressions of the pattern
        if not expr.all:
            return []
        left, right = x.sd(x.child(expr.left), form.end), x.sd(x.child(expr.right), form.end)
        if left is None or right is None:
            return []
        return [Union(left, right, True, expr.fields + (MULT_FIELD,))]


class DeltaOuterJoin(TvrRule):
    """Outer-join view maintenance (the Tempura seed's one-side-multi-match rule, in Z-set form).

    ``S ⟕ R = (S ⋈ R) + pad(S ▷ R)``, so ``Δ(S ⟕ R) = Δ(S ⋈ R) + pad(Δ(S ▷ R))`` with

    ``Δ(S ▷ R) = ΔS ▷ R_v + ((T ⋉ R_{v-1}) ▷ R_v) − ((T ▷ R_{v-1}) ⋉ R_v)``, ``T = S_{v-1} ⋉ ΔR``.

    The anti-join is linear in its left input (first term). An old row of S changes its match
    status only if a row of ``ΔR`` matches it, so only ``T`` is examined: its rows that had a
    match and lost every one gain a padded row (``+``), those that had none and got one lose it
    (``−``). ⋉ and ▷ use the join condition. This holds for any condition and for deletions on
    either side. Right outer joins are the mirror image and full outer joins use both sides.
    From ``v = 2`` on; ``SD[0,1]`` is the first snapshot itself.
    """

    name = "tvr-delta-outer-join"
    family = "outer join"
    pattern = (Join,)
    produces = FormKind.DELTA
    method = "ojv"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if expr.kind not in (JoinKind.LEFT, JoinKind.RIGHT, JoinKind.FULL):
            return []
        v = form.end
        if v < 2:
            return []
        fields = delta_fields(expr)
        inner = Join(JoinKind.INNER, expr.left, expr.right, expr.condition)
        terms = _inner_delta_terms(x, inner, v, fields)
        if terms is None:
            return []
        sides = []
        if expr.kind in (JoinKind.LEFT, JoinKind.FULL):
            sides.append(False)
        if expr.kind in (JoinKind.RIGHT, JoinKind.FULL):
            sides.append(True)
        for mirrored in sides:
            unmatched = _unmatched_delta(x, expr, v, mirrored)
            if unmatched is None:
                return []
            terms.extend(_padded(t, expr, mirrored, fields) for t in unmatched)
        return [_union_all(terms, fields)]


class DeltaOuterJoinProbe(TvrRule):
    """Outer-join view maintenance that reads the preserved side's old snapshot once.

    For ``P ⟕ O`` (P preserved) the inner part is split the other way round,
    ``Δ(P ⋈ O) = ΔP ⋈ O_v + P_{v-1} ⋈ ΔO``, and ``P_{v-1} ⋈ ΔO = T ⋈ ΔO`` with
    ``T = P_{v-1} ⋉ ΔO`` (a row of P that matches no row of ``ΔO`` joins nothing). The new rows
    of P and their padding are one outer join, ``ΔP ⋈ O_v + pad(ΔP ▷ O_v) = ΔP ⟕ O_v`` (linear in
    its preserved input). So

    ``Δ(P ⟕ O) = ΔP ⟕ O_v + T ⋈ ΔO + pad((T ⋉ O_{v-1}) ▷ O_v) − pad((T ▷ O_{v-1}) ⋉ O_v)``

    and the old snapshot ``P_{v-1}`` is read only to find ``T``, the rows a change of O touches.
    When O is insert-only, a row of T keeps every old match and has a new one, so the third term
    is empty and the fourth is ``pad(T ▷ O_{v-1})``. Left and right outer joins; the full outer
    join is :class:`DeltaOuterJoin`'s.
    """

    name = "tvr-delta-outer-join-probe"
    family = "outer join"
    pattern = (Join,)
    produces = FormKind.DELTA
    method = "ojv"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if expr.kind not in (JoinKind.LEFT, JoinKind.RIGHT) or form.end < 2:
            return []
        v, cond, mirrored = form.end, expr.condition, expr.kind is JoinKind.RIGHT
        p, o = (x.child(expr.right), x.child(expr.left)) if mirrored else (x.child(expr.left), x.child(expr.right))
        delta_p, delta_o, old_p, old_o, new_o = x.sd(p, v), x.sd(o, v), x.ss(p, v - 1), x.ss(o, v - 1), x.ss(o, v)
        if delta_p is None or delta_o is None or old_p is None or old_o is None or new_o is None:
            return []
        fields = delta_fields(expr)
        touched = Join(JoinKind.SEMI, old_p, delta_o, cond)
        if mirrored:
            new_rows: LogicalPlan = Join(JoinKind.RIGHT, new_o, delta_p, cond)
            matched: LogicalPlan = Join(JoinKind.INNER, delta_o, touched, cond)
        else:
            new_rows, matched = Join(JoinKind.LEFT, delta_p, new_o, cond), Join(JoinKind.INNER, touched, delta_o, cond)
        terms = [_ordered(new_rows, fields), _ordered(matched, fields)]
        if x.unit_delta(o):
            changes: list[LogicalPlan] = [ToDelta(Join(JoinKind.ANTI, touched, old_o, cond), -1)]
        else:
            lost = Join(JoinKind.ANTI, Join(JoinKind.SEMI, touched, old_o, cond), new_o, cond)
            found = Join(JoinKind.SEMI, Join(JoinKind.ANTI, touched, old_o, cond), new_o, cond)
            changes = [ToDelta(lost, 1), ToDelta(found, -1)]
        terms.extend(_padded(t, expr, mirrored, fields) for t in changes)
        return [_union_all(terms, fields)]


def _unmatched_delta(x: Expansion, expr: Join, v: int, mirrored: bool) -> list[LogicalPlan] | None:
    """The three Z-set terms of ``Δ(S ▷ R)``, S being the preserved side."""
    s_ref, r_ref = (expr.right, expr.left) if mirrored else (expr.left, expr.right)
    s, r = x.child(s_ref), x.child(r_ref)
    delta_s, delta_r = x.sd(s, v), x.sd(r, v)
    old_s, old_r, new_r = x.ss(s, v - 1), x.ss(r, v - 1), x.ss(r, v)
    if None in (delta_s, delta_r, old_s, old_r, new_r):
        return None
    cond = expr.condition
    touched = Join(JoinKind.SEMI, old_s, delta_r, cond)  # type: ignore[arg-type]
    lost = Join(JoinKind.ANTI, Join(JoinKind.SEMI, touched, old_r, cond), new_r, cond)  # type: ignore[arg-type]
    found = Join(JoinKind.SEMI, Join(JoinKind.ANTI, touched, old_r, cond), new_r, cond)  # type: ignore[arg-type]
    return [Join(JoinKind.ANTI, delta_s, new_r, cond), ToDelta(lost, 1), ToDelta(found, -1)]  # type: ignore[arg-type]


def _padded(term: LogicalPlan, expr: Join, mirrored: bool, fields: tuple[Field, ...]) -> LogicalPlan:
    """A Z-set over the preserved side's columns with the other side's columns null."""
    other = expr.left if mirrored else expr.right
    nulls = {f.name for f in other.schema.fields}
    projections = []
    for f in fields:
        if f.name in nulls:
            projections.append(Projection(f, exp.cast(exp.Null(), f.type)))
        else:
            projections.append(Projection(term.schema.field(f.name), col(f.name)))
    return Project(term, tuple(projections))
