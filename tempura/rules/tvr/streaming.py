"""Inter-TVR streaming rules: the ``QP`` / ``QN`` split of an outer join.

``S ⟕ R = QP ⊎ QN`` with ``QP = S ⋈ R`` (the matched rows) and ``QN = pad(S ▷ R)`` (the
unmatched rows, null-padded). Over insert-only inputs ``QP`` only grows: its rows can be emitted
as they arrive and are never retracted, so ``QP`` is the TVR of the inner join, maintained by its
insert-only deltas, while ``QN`` is computed once, at the last time point. The split is an edge
between the outer join's meta-set and those of the inner join and the padded anti-join.

- :class:`StreamingOuterJoinSplit`: ``SS[k](S ⟕ R) ⇒ SS[k](QP) ⊎ SS[k](QN)``.
- :class:`StreamingAggregateSplit`: an aggregate over the outer join (through filters and
  projections, which keep the split) emits only at the end, but its partial aggregation of
  ``QP`` runs early and is kept: ``PS[k](γ(S ⟕ R)) ⇒ PS[k](γ(QP)) +sum PS[k](γ(QN))``.

Right outer joins split the mirror way and full outer joins into ``QP`` and both padded sides.
"""

from __future__ import annotations

from typing import cast

from tempura.algebra import Aggregate, Distinct, Filter, Join, JoinKind, LogicalPlan, Project, Union, aggregate_parts
from tempura.tvr.partials import has_partial_states
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.rules.tvr.generating import _padded
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.operators import StateMerge

OUTER = (JoinKind.LEFT, JoinKind.RIGHT, JoinKind.FULL)


def split_parts(x: Expansion, join: Join) -> tuple[int, int] | None:
    """Template groups of ``QP`` and ``QN`` for an outer join over insert-only inputs."""
    if join.kind not in OUTER or not all(x.unit_delta(x.child(c)) for c in join.inputs):
        return None
    fields = tuple(join.schema.fields)
    qp = Join(JoinKind.INNER, join.left, join.right, join.condition)
    unmatched: list[LogicalPlan] = []
    if join.kind in (JoinKind.LEFT, JoinKind.FULL):
        unmatched.append(_padded(Join(JoinKind.ANTI, join.left, join.right, join.condition), join, False, fields))
    if join.kind in (JoinKind.RIGHT, JoinKind.FULL):
        unmatched.append(_padded(Join(JoinKind.ANTI, join.right, join.left, join.condition), join, True, fields))
    qn = unmatched[0] if len(unmatched) == 1 else Union(unmatched[0], unmatched[1], True, fields)
    qp_group = x.memo.insert(qp)
    x.qp_groups.add(qp_group)
    return qp_group, x.memo.insert(qn)


class StreamingOuterJoinSplit(TvrRule):
    """``SS[k](S ⟕ R) ⇒ SS[k](S ⋈ R) ⊎ SS[k](pad(S ▷ R))`` over insert-only inputs."""

    name = "tvr-streaming-outer-join-split"
    family = "outer join"
    pattern = (Join,)
    produces = FormKind.SNAPSHOT
    method = "streaming"
    version_specific = True

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Join, expr)  # the expansion offers only expressions of the pattern
        if form.end != x.k:
            return []
        parts = split_parts(x, expr)
        if parts is None:
            return []
        qp, qn = x.ss(parts[0], form.end), x.ss(parts[1], form.end)
        if qp is None or qn is None:
            return []
        return [Union(qp, qn, True, tuple(expr.schema.fields))]


class StreamingAggregateSplit(TvrRule):
    """``PS[k](γ(chain(S ⟕ R))) ⇒ PS[k](γ(chain(QP))) +sum PS[k](γ(chain(QN)))``, where
    ``chain`` is the filters and projections between the aggregate and the outer join."""

    name = "tvr-streaming-aggregate-split"
    family = "aggregate"
    pattern = (Aggregate, Distinct)
    produces = FormKind.PARTIAL
    method = "streaming"
    version_specific = True

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast("Aggregate | Distinct", expr)  # the expansion offers only expressions of the pattern
        if (form.end != x.k or not has_partial_states(expr)
                or x.aggregate_of(group) is not expr):
            return []
        chain: list[LogicalPlan] = []
        below = x.child(expr.input)
        join: Join | None = None
        while join is None:
            exprs = x.template_exprs(below)
            join = next((e for e in exprs if isinstance(e, Join) and e.kind in OUTER), None)
            if join is not None:
                break
            step = next((e for e in exprs if isinstance(e, (Project, Filter))), None)
            if step is None:
                return []
            chain.append(step)
            below = x.child(step.inputs[0])
        parts = split_parts(x, join)
        if parts is None:
            return []
        keys, calls = aggregate_parts(expr)
        states = []
        for index, part in enumerate(parts):
            plan: LogicalPlan = x.memo.ref(part)
            for link in reversed(chain):
                plan = link.with_inputs(plan)
            plan = expr.with_inputs(plan)
            aggregate = x.memo.insert(plan)
            if index == 0:
                x.qp_groups.add(aggregate)
            state = x.ps(aggregate, form.end)
            if state is None:
                return []
            states.append(state)
        return [StateMerge(states[0], states[1], keys, calls)]
