"""Intra-TVR rules: relations between the forms of one TVR.

- *delta merge*: ``SS[v] = SS[v-1] +# SD[v-1,v]`` — maintaining a kept snapshot. Classic IVM
  maintains only the view itself (the root and the unary operators above its last join or
  aggregate); maintaining inner results too is the higher-order (DBToaster-style) method: a
  delta then probes one kept join state instead of recomputing several snapshots.
- *snapshot to delta*: ``SD[v-1,v] = SS[v] +# (−SS[v-1])`` — the delta of any relation is the
  difference of two snapshots. It is how a subtree without a delta rule (a window, a
  ``LIMIT`` below the top, a semi-join) still feeds incremental operators above it, by
  recomputing that subtree; ``tempura plan`` names the construct that forced it.
- *delivered delta*: the same difference for the delivered result of a method with no delta
  rule reaching it (``batch``; ``streaming`` over an aggregate): every method delivers a delta
  output, at worst as this time point's snapshot less the previous one, which the search
  recomputes or keeps from the previous time point as the cost decides.
"""

from __future__ import annotations

from tempura.algebra import Limit, LogicalPlan, Scan, Sort, Union
from tempura.memo import GroupRef
from tempura.rules.tvr.aggregate import has_value_deltas
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.operators import Consolidate, ToDelta, ZApply
from tempura.tvr.zset import MULT_FIELD


def _orderless(x: Expansion, group: int) -> bool:
    """Whether the group's rows have no order to keep (a merge would lose a sort's order)."""
    return not any(isinstance(e, (Sort, Limit)) for e in x.template_exprs(group))


def _merge(x: Expansion, group: int, form: Form) -> list[LogicalPlan]:
    if form.end < 2 or not _orderless(x, group):
        return []
    if any(isinstance(e, Scan) for e in x.template_exprs(group)):
        return []  # a source's snapshot is read as it is
    aggregate = x.aggregate_of(group)
    if aggregate is not None and has_value_deltas(x, aggregate):
        return []  # such an aggregate is maintained through its partial states
    old, delta = x.ss(group, form.end - 1), x.sd(group, form.end)
    if old is None or delta is None:
        return []
    return [ZApply(old, delta, unit=x.unit_delta(group))]


class DeltaMerge(TvrRule):
    """``SS[v] ⇒ SS[v-1] +# SD[v-1,v]`` for the view itself (classic IVM)."""

    name = "tvr-delta-merge"
    family = "any operator"
    produces = FormKind.SNAPSHOT
    phase = "intra"
    per_expression = False

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        return _merge(x, group, form) if x.on_spine(group) else []


class DeltaMergeInner(TvrRule):
    """``SS[v] ⇒ SS[v-1] +# SD[v-1,v]`` for a result inside the plan: a kept, maintained
    auxiliary state (higher-order deltas)."""

    name = "tvr-delta-merge-inner"
    family = "any operator"
    produces = FormKind.SNAPSHOT
    phase = "intra"
    per_expression = False
    method = "higher-order"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        return [] if x.on_spine(group) else _merge(x, group, form)


class StreamingAccumulate(TvrRule):
    """``SS[v] ⇒ SS[v-1] ⊎ SD+[v-1,v]`` when every delta of the relation is insert-only with
    multiplicity 1: the streaming ``QP`` part, whose rows are emitted as they arrive and never
    retracted."""

    name = "tvr-streaming-accumulate"
    family = "any operator"
    produces = FormKind.SNAPSHOT
    phase = "intra"
    per_expression = False
    method = "streaming"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        return _merge(x, group, form) if x.unit_delta(group) else []


class SnapshotToDelta(TvrRule):
    """``SD[v-1,v] ⇒ Consolidate(SS[v] ⊎ −SS[v-1])`` (``SD[0,1] ⇒ SS[1]`` as a delta)."""

    name = "tvr-snapshot-to-delta"
    family = "any operator"
    produces = FormKind.DELTA
    phase = "intra"
    per_expression = False

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        if x.unit_delta(group):
            return []  # its generating rules give the delta with every multiplicity 1
        generated = x.has_form(group, form)
        if generated and x.forced is not None:
            return []  # a forced method uses its delta rules; the difference is only a fallback
        exprs = x.template_exprs(group)
        if not generated and exprs:
            x.note_recompute(exprs[0], "no delta rule: its delta is the difference of two recomputed snapshots")
        new = x.ss(group, form.end)
        if new is None:
            return []
        if form.end == 1:
            return [ToDelta(new, 1)]
        old = x.ss(group, form.end - 1)
        if old is None:
            return []
        return [_difference(new, old)]


def _difference(new: GroupRef, old: GroupRef) -> LogicalPlan:
    """``Consolidate(new ⊎ −old)``: the Z-set taking the snapshot ``old`` to ``new``."""
    fields = tuple(new.schema.fields) + (MULT_FIELD,)
    return Consolidate(Union(ToDelta(new, 1), ToDelta(old, -1), True, fields))


class DeliveredDelta(TvrRule):
    """``SD[v-1,v](Q) ⇒ Consolidate(SS[v](Q) ⊎ −SS[v-1](Q))`` (``SD[0,1] ⇒ SS[1]`` as a delta) for
    the query's result ``Q`` when no other rule of the method makes its delta: how ``batch``
    (and ``streaming`` over an aggregate) deliver a delta output. Valid for any relation: a
    delta is the difference of its snapshots (docs/SEMANTICS.md)."""

    name = "tvr-delivered-delta"
    family = "any operator"
    produces = FormKind.DELTA
    phase = "intra"
    per_expression = False
    method = "batch"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        if x.memo.find(group) != x.root or x.has_form(group, form):
            return []
        new = x.ss(group, form.end)
        if new is None:
            return []
        if form.end == 1:
            return [ToDelta(new, 1)]  # the first snapshot, as every method delivers it
        exprs = x.template_exprs(group)
        if exprs:
            x.note_recompute(exprs[0], "no delta rule of the method reaches the result: the delivered delta is the "
                                       "difference of this time point's snapshot and the previous one")
        old = x.ss(group, form.end - 1)
        return [] if old is None else [_difference(new, old)]
