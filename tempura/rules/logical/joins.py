"""Join exploration rules for the memo: commute, associate and push-through-join.

These are the Beam seed's rules (Calcite's ``JoinCommuteRule``, ``JoinAssociateRule`` and
``JoinPushThroughJoinRule``), for inner and cross joins only: outer, semi and anti joins are
never reordered by them. Like the seed's ``BeamJoinAssociateRule``, the rules check the joins
they would build and do not fire when one of them would be a cross product (the trace records
the refusal). A cross product the query wrote can still be rotated away — ``(A × B) ⋈ C`` with
predicates between A and C and between B and C associates to ``A ⋈ (B ⋈ C)`` — but none is
ever created.

Join conditions in the memo are canonical (:func:`make_join`): conjuncts deduplicated and sorted
by their SQL, so that the same join reached by different rules has one fingerprint.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from sqlglot import exp

from tempura.algebra import Join, JoinKind, LogicalPlan, by_sql, columns_in, conjoin, conjuncts
from tempura.memo import Operand, Rule, RuleCall

REORDER = "join-reorder"  # set on groups whose join order the DP/greedy enumerator covered


def reorderable(plan: LogicalPlan) -> bool:
    return isinstance(plan, Join) and plan.kind in (JoinKind.INNER, JoinKind.CROSS)


def factor_disjunction(predicate: exp.Expr) -> list[exp.Expr]:
    """``(a AND b) OR (a AND c)`` as ``[a, b OR c]``: the conjuncts every disjunct shares come
    out, so that an equi-key hidden in a disjunction (TPC-H Q19) is seen as one. Spark's
    ``BooleanSimplification`` does the same before picking a join algorithm."""
    node = predicate.unnest()
    if not isinstance(node, exp.Or):
        return [predicate]
    disjuncts = list(node.flatten())
    parts = [{c.sql(dialect="spark"): c for c in conjuncts(d)} for d in disjuncts]
    common = [k for k in parts[0] if all(k in p for p in parts[1:])]
    if not common:
        return [predicate]
    rests = [conjoin(v for k, v in p.items() if k not in common) for p in parts]
    out = [parts[0][k] for k in common]
    if all(r is not None for r in rests):
        out.append(exp.or_(*[exp.paren(r, copy=True) for r in rests if r is not None], copy=True))
    return out


def make_join(left: LogicalPlan, right: LogicalPlan, predicates: Iterable[exp.Expr]) -> Join:
    """An inner join of ``left`` and ``right`` on the conjunction of ``predicates`` (a cross join
    when there are none), with the conjuncts in canonical order."""
    unique = by_sql(f for q in predicates for f in factor_disjunction(q))
    condition = conjoin(unique[k] for k in sorted(unique))
    return Join(JoinKind.INNER if condition is not None else JoinKind.CROSS, left, right, condition)


def canonical_joins(plan: LogicalPlan) -> LogicalPlan:
    """``plan`` with every inner and cross join in canonical form."""
    if plan.inputs:
        plan = plan.with_inputs(*(canonical_joins(c) for c in plan.inputs))
    if reorderable(plan):
        assert isinstance(plan, Join)
        return make_join(plan.left, plan.right, conjuncts(plan.condition))
    return plan


def connects(predicate: exp.Expr, left: set[str], right: set[str]) -> bool:
    refs = columns_in(predicate)
    return bool(refs & left) and bool(refs & right)


def _names(plan: LogicalPlan) -> set[str]:
    return set(plan.schema.names)


def _reassociate(
    call: RuleCall, first: LogicalPlan, second: LogicalPlan, outer: LogicalPlan, what: str
) -> Join | None:
    """``(first ⋈ second) ⋈ outer`` rebuilt from the two matched joins' predicates, or ``None``
    (with a trace note) when the new inner join would be a cross product."""
    top, bottom = call.exprs[0], call.exprs[1]
    assert isinstance(top, Join) and isinstance(bottom, Join)
    predicates = conjuncts(top.condition) + conjuncts(bottom.condition)
    inner_cols = _names(first) | _names(second)
    inner = [p for p in predicates if columns_in(p) <= inner_cols]
    rest = [p for p in predicates if not columns_in(p) <= inner_cols]
    if not any(connects(p, _names(first), _names(second)) for p in inner):
        call.notes.append(f"refused {what}: {first.details()} x {second.details()} would be a cross product")
        return None
    if not any(connects(p, inner_cols, _names(outer)) for p in rest):
        call.notes.append(f"refused {what}: the top join would be a cross product")
        return None
    return make_join(make_join(first, second, inner), outer, rest)


def _operands(call: RuleCall) -> tuple[LogicalPlan, LogicalPlan, LogicalPlan] | None:
    """``A, B, C`` of a binding ``(A ⋈ B) ⋈ C``; ``None`` when the enumerator already covered
    the group."""
    if REORDER in call.memo.group(call.group).explored:
        return None
    top, bottom = call.exprs[0], call.exprs[1]
    assert isinstance(top, Join) and isinstance(bottom, Join)
    return bottom.left, bottom.right, top.right


class JoinCommute(Rule):
    """``A ⋈ B → B ⋈ A``."""

    name = "join-commute"
    pattern = Operand(Join, test=reorderable)

    def apply(self, call: RuleCall) -> Sequence[LogicalPlan]:
        join = call.root
        assert isinstance(join, Join)
        return [Join(join.kind, join.right, join.left, join.condition)]


_NESTED = Operand(Join, (Operand(Join, test=reorderable), Operand(LogicalPlan)), test=reorderable)


class JoinAssociate(Rule):
    """``(A ⋈ B) ⋈ C → A ⋈ (B ⋈ C)``."""

    name = "join-associate"
    pattern = _NESTED

    def apply(self, call: RuleCall) -> Sequence[LogicalPlan]:
        operands = _operands(call)
        if operands is None:
            return []
        a, b, c = operands
        rebuilt = _reassociate(call, b, c, a, "associate")
        if rebuilt is None:
            return []
        return [make_join(a, rebuilt.left, conjuncts(rebuilt.condition))]


class JoinPushThroughJoin(Rule):
    """``(A ⋈ B) ⋈ C → (A ⋈ C) ⋈ B`` and ``(A ⋈ B) ⋈ C → (C ⋈ B) ⋈ A``."""

    name = "join-push-through-join"
    pattern = _NESTED

    def apply(self, call: RuleCall) -> Sequence[LogicalPlan]:
        operands = _operands(call)
        if operands is None:
            return []
        a, b, c = operands
        out: list[LogicalPlan] = []
        for first, second, outer, what in ((a, c, b, "push-through right"), (c, b, a, "push-through left")):
            rebuilt = _reassociate(call, first, second, outer, what)
            if rebuilt is not None:
                out.append(rebuilt)
        return out
