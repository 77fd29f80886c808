"""Aggregate rules: partial states (``PS``), value deltas (``VD``) and their ``+sum`` merge.

``γ(keys; f)`` over a TVR is kept as partial states per key (:mod:`tempura.tvr.partials`): a
value delta is the partial aggregate of the input's delta, weighted by multiplicity, and the new
partial states are the old ones ``+sum`` the value delta. ``DISTINCT`` is the count-based
aggregate ``γ(all columns; count)`` whose rows with a positive count are the output.
"""

from __future__ import annotations

from tempura.algebra import Aggregate, AggregateCall, Distinct, LogicalPlan
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.operators import Finalize, StateAggregate, StateMerge
from tempura.tvr.partials import has_partial_state, mergeable


def aggregate_parts(expr: Aggregate | Distinct) -> tuple[tuple[str, ...], tuple[AggregateCall, ...]]:
    if isinstance(expr, Aggregate):
        return expr.keys, expr.calls
    return tuple(expr.schema.names), ()


def _mergeable(x: Expansion, expr: Aggregate | Distinct) -> bool:
    _, calls = aggregate_parts(expr)
    insert_only = x.unit_delta(x.child(expr.input))
    return all(mergeable(c, insert_only) for c in calls)


def has_partial_states(expr: Aggregate | Distinct) -> bool:
    """Whether every call of the aggregate has partial-state columns (no ``DISTINCT`` call, no
    ``FILTER``, only the functions of :mod:`tempura.tvr.partials`)."""
    _, calls = aggregate_parts(expr)
    return all(has_partial_state(c) for c in calls)


class PartialSnapshotRule(TvrRule):
    """``PS[v](γ(R)) ⇒ γ_partial(R_v)``: partial states of the aggregate over the snapshot (a
    recompute of the states). Valid when every call has partial states: MIN and MAX too, even
    over deletions (a snapshot is a bag), but not a ``DISTINCT`` call or a ``FILTER``."""

    name = "tvr-partial-snapshot"
    produces = FormKind.PARTIAL
    method = "batch"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        if not isinstance(expr, (Aggregate, Distinct)) or not has_partial_states(expr):
            return []
        snapshot = x.ss(x.child(expr.input), form.end)
        if snapshot is None:
            return []
        keys, calls = aggregate_parts(expr)
        return [StateAggregate(snapshot, keys, calls, signed=False)]


class ValueDeltaRule(TvrRule):
    """``VD[v-1,v](γ(R)) ⇒ γ_partial(ΔR)`` weighted by multiplicity. Valid when every call has a
    mergeable partial state: SUM, COUNT and AVG always, MIN and MAX over insert-only input."""

    name = "tvr-value-delta"
    produces = FormKind.VALUE_DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        if not isinstance(expr, (Aggregate, Distinct)):
            return []
        if not _mergeable(x, expr):
            x.note_recompute(expr, "no mergeable partial state (MIN/MAX over deletions, DISTINCT or FILTER)")
            return []
        delta = x.sd(x.child(expr.input), form.end)
        if delta is None:
            return []
        keys, calls = aggregate_parts(expr)
        return [StateAggregate(delta, keys, calls, signed=True)]


class ValueDeltaMerge(TvrRule):
    """``PS[v] ⇒ PS[v-1] +sum VD[v-1,v]``: the intra-TVR merge of value deltas."""

    name = "tvr-value-delta-merge"
    produces = FormKind.PARTIAL
    phase = "intra"
    per_expression = False

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        agg = x.aggregate_of(group)
        if agg is None or form.end < 2:
            return []
        old, delta = x.ps(group, form.end - 1), x.vd(group, form.end)
        if old is None or delta is None:
            return []
        keys, calls = aggregate_parts(agg)
        return [StateMerge(old, delta, keys, calls)]


class FinalizeSnapshot(TvrRule):
    """``SS[v](γ(R)) ⇒ finalize(PS[v])``: the aggregate's rows from its partial states."""

    name = "tvr-finalize"
    produces = FormKind.SNAPSHOT
    phase = "intra"
    per_expression = False

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        agg = x.aggregate_of(group)
        if agg is None:
            return []
        states = x.ps(group, form.end)
        if states is None:
            return []
        keys, calls = aggregate_parts(agg)
        return [Finalize(states, keys, calls, tuple(agg.schema.fields))]
