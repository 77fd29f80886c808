"""Aggregate rules: partial states (``PS``), value deltas (``VD``) and their ``+sum`` merge.

``γ(keys; f)`` over a TVR is kept as partial states per key (:mod:`tempura.tvr.partials`): a
value delta is the partial aggregate of the input's delta, weighted by multiplicity, and the new
partial states are the old ones ``+sum`` the value delta. ``DISTINCT`` is the count-based
aggregate ``γ(all columns; count)`` whose rows with a positive count are the output.

A grouping aggregate's own delta (what an operator above it reads) holds the groups whose key
occurs in the input's delta: their new rows, from the partial states, replace their old ones
(:class:`AffectedGroupsDelta`). An aggregate without mergeable partial states — MIN or MAX over
deletions, a ``DISTINCT`` call, a ``FILTER`` — gets its delta the same way, its affected groups
recomputed from the new input.

``COUNT(DISTINCT x)`` also has value deltas once split in two levels, as Spark plans it
(:class:`CountDistinctSplit`): the distinct ``(keys, x)`` pairs, then a plain ``COUNT(x)`` of
them per key; both levels have mergeable partial states.
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from tempura.algebra import (Aggregate, AggregateCall, Distinct, Field, Join, JoinKind, LogicalPlan, Project, Projection, Union,
                             aggregate_parts, col)
from tempura.algebra.expressions import conjoin
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.forms import Form, FormKind, PartialSnapshot
from tempura.tvr.operators import Consolidate, Finalize, StateAggregate, StateMerge, StateRows, ToDelta
from tempura.tvr.partials import has_partial_states, mergeable
from tempura.tvr.zset import MULT_FIELD


def has_value_deltas(x: Expansion, expr: Aggregate | Distinct) -> bool:
    """Whether the aggregate is maintained by value deltas over its input's deltas."""
    return _mergeable(x, expr)


def _mergeable(x: Expansion, expr: Aggregate | Distinct) -> bool:
    _, calls = aggregate_parts(expr)
    insert_only = x.unit_delta(x.child(expr.input))
    return all(mergeable(c, insert_only) for c in calls)


class PartialSnapshotRule(TvrRule):
    """``PS[v](γ(R)) ⇒ γ_partial(R_v)``: partial states of the aggregate over the snapshot (a
    recompute of the states). Valid when every call has partial states: MIN and MAX too, even
    over deletions (a snapshot is a bag), but not a ``DISTINCT`` call or a ``FILTER``."""

    name = "tvr-partial-snapshot"
    family = "aggregate"
    pattern = (Aggregate, Distinct)
    produces = FormKind.PARTIAL
    method = "batch"

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast("Aggregate | Distinct", expr)  # the expansion offers only expressions of the pattern
        if not has_partial_states(expr) or x.aggregate_of(group) is not expr:
            return []  # one aggregate of the group holds its partial states
        snapshot = x.ss(x.child(expr.input), form.end)
        if snapshot is None:
            return []
        keys, calls = aggregate_parts(expr)
        return [StateAggregate(snapshot, keys, calls, signed=False)]


class ValueDeltaRule(TvrRule):
    """``VD[v-1,v](γ(R)) ⇒ γ_partial(ΔR)`` weighted by multiplicity. Valid when every call has a
    mergeable partial state: SUM, COUNT and AVG always, MIN and MAX over insert-only input."""

    name = "tvr-value-delta"
    family = "aggregate"
    pattern = (Aggregate, Distinct)
    produces = FormKind.VALUE_DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast("Aggregate | Distinct", expr)  # the expansion offers only expressions of the pattern
        best = x.aggregate_of(group)
        if best is not expr and best is not None and has_partial_states(best):
            return []  # the value deltas are those of the aggregate holding the partial states
        if not _mergeable(x, expr):
            if isinstance(expr, Aggregate) and not expr.keys and (best is None or not _mergeable(x, best)):
                # grouping ones recompute the affected groups; a split COUNT(DISTINCT) merges
                x.note_recompute(expr, "no mergeable partial state (MIN/MAX over deletions, DISTINCT or FILTER) "
                                       "and no grouping: the aggregate is recomputed")
            return []
        delta = x.sd(x.child(expr.input), form.end)
        if delta is None:
            return []
        keys, calls = aggregate_parts(expr)
        return [StateAggregate(delta, keys, calls, signed=True)]


class ValueDeltaMerge(TvrRule):
    """``PS[v] ⇒ PS[v-1] +sum VD[v-1,v]``: the intra-TVR merge of value deltas; and
    ``PS[v] ⇒ PS[v-1] +sum rows(ΔR)``, the same merge over the input's delta projected to
    per-row partial values (:class:`StateRows`). The second aggregates the delta and the kept
    states in one aggregation — one exchange fewer on Spark — unless the value delta is worth
    computing on its own (kept, or read by more than the merge): the cost decides."""

    name = "tvr-value-delta-merge"
    family = "aggregate"
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
        merges: list[LogicalPlan] = [StateMerge(old, delta, keys, calls)]
        rows = x.sd(x.child(agg.input), form.end) if _mergeable(x, agg) else None
        if rows is not None:
            merges.append(StateMerge(old, StateRows(rows, keys, calls), keys, calls))
        return merges


class FinalizeSnapshot(TvrRule):
    """``SS[v](γ(R)) ⇒ finalize(PS[v])``: the aggregate's rows from its partial states."""

    name = "tvr-finalize"
    family = "aggregate"
    produces = FormKind.SNAPSHOT
    phase = "intra"
    per_expression = False

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        agg = x.aggregate_of(group)
        if agg is None:
            return []
        states = x.ps(group, form.end)
        if states is None or x.fell_back(group, PartialSnapshot(form.end)):
            return []  # recomputed states are no incremental rule: the snapshot falls back itself
        keys, calls = aggregate_parts(agg)
        return [Finalize(states, keys, calls, tuple(agg.schema.fields))]


AFFECTED = "__affected"


class AffectedGroupsDelta(TvrRule):
    """``SD[v-1,v](γ_K(R)) ⇒ new_v − (γ_K(R)_{v-1} ⋉ A)`` with ``A = π_K(ΔR)``: only the groups
    whose key occurs in the input's delta can change, so their new rows replace their old ones
    (read from the aggregate's own previous snapshot, kept or recomputed). The new rows are
    ``finalize(PS[v] ⋉ A)`` when the aggregate has mergeable partial states — its delta from
    its value deltas — and ``γ_K(R_v ⋉ A)`` otherwise: MIN or MAX over deletions, a
    ``DISTINCT`` call or a ``FILTER`` recompute just the affected groups. Keys match
    null-safely, as grouping does. Grouping aggregates only: a global one has one group, always
    affected, and its delta is the difference of its snapshots."""

    name = "tvr-aggregate-affected-groups"
    family = "aggregate"
    pattern = (Aggregate,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Aggregate, expr)  # the expansion offers only expressions of the pattern
        if not expr.keys or form.end < 2:
            return []
        child = x.child(expr.input)
        delta, old = x.sd(child, form.end), x.ss(group, form.end - 1)
        if delta is None or old is None:
            return []
        fields = expr.input.schema
        affected = Distinct(Project(delta, tuple(
            Projection(Field(k + AFFECTED, fields.field(k).type, True), col(k)) for k in expr.keys
        )))
        on = conjoin([exp.NullSafeEQ(this=col(k), expression=col(k + AFFECTED)) for k in expr.keys])
        new: LogicalPlan
        if _mergeable(x, expr) and x.aggregate_of(group) is expr:
            states = x.ps(group, form.end)
            if states is None:
                return []
            new = Finalize(Join(JoinKind.SEMI, states, affected, on), expr.keys, expr.calls, tuple(expr.schema.fields))
        else:
            new_input = x.ss(child, form.end)
            if new_input is None:
                return []
            new = Aggregate(Join(JoinKind.SEMI, new_input, affected, on), expr.keys, expr.calls)
        replaced = Join(JoinKind.SEMI, old, affected, on)
        out = tuple(expr.schema.fields) + (MULT_FIELD,)
        return [Consolidate(Union(ToDelta(new, 1), ToDelta(replaced, -1), True, out))]


class NewGroupsDelta(TvrRule):
    """``SD[v-1,v](γ_K(R)) ⇒ +finalize(γ_partial(ΔR))`` when the groups of ``ΔR`` are new: a
    grouping column holds, in ``ΔR``, keys that landed in other intervals than every key it
    holds in ``R_{v-1}`` (:meth:`~tempura.tvr.bounds.Prover.apart`; the column is never NULL on
    one side, as grouping puts NULLs together). No row of ``R_{v-1}`` is in these groups, so
    their rows are the aggregate of ``ΔR`` alone, and no other group changes: the old rows are
    neither read nor retracted, and the kept partial states are not merged. Calls need partial
    states mergeable over the delta's signs (SUM, COUNT, AVG; MIN and MAX over insert-only input)."""

    name = "tvr-aggregate-new-groups"
    family = "aggregate"
    pattern = (Aggregate,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        expr = cast(Aggregate, expr)  # the expansion offers only expressions of the pattern
        if (not expr.keys or form.end < 2 or x.prover is None
                or not _mergeable(x, expr)):
            return []
        child = x.child(expr.input)
        delta, old = x.sd(child, form.end), x.ss(child, form.end - 1)
        if delta is None or old is None or not x.prover.apart(delta.group, old.group, [(k, k) for k in expr.keys], null_safe=True):
            return []
        states = StateAggregate(delta, expr.keys, expr.calls, signed=True)
        return [ToDelta(Finalize(states, expr.keys, expr.calls, tuple(expr.schema.fields)), 1)]


class CountDistinctSplit(TvrRule):
    """``γ_K(COUNT(DISTINCT x), f…)(R) ⇒ γ_K(COUNT(x), f'…)(γ_{K,x}(f_part…)(R))``: the template
    gains the two-level form of an aggregate whose distinct calls all count one column ``x``.
    Companion calls split too — ``MIN``/``MAX`` of the inner values, ``COUNT`` as the ``SUM`` of
    the inner counts (with grouping keys only: a global ``SUM`` over no rows is NULL, not 0)."""

    name = "tvr-count-distinct-split"
    family = "aggregate"
    pattern = (Aggregate,)
    produces = FormKind.DELTA
    phase = "template"

    def rewrite(self, x: Expansion, group: int, expr: LogicalPlan) -> list[LogicalPlan]:
        expr = cast(Aggregate, expr)  # the expansion offers only expressions of the pattern
        if not any(c.distinct for c in expr.calls):
            return []
        counted = {_distinct_column(c) for c in expr.calls if c.distinct}
        column = counted.pop() if len(counted) == 1 else None
        if column is None or column in expr.keys or column not in expr.input.schema:
            return []
        inner_calls: list[AggregateCall] = []
        outer_calls: list[AggregateCall] = []
        for call in expr.calls:
            if call.distinct:
                outer_calls.append(AggregateCall(call.field, exp.Count(this=col(column))))
                continue
            if isinstance(call.call, exp.Filter) or call.function not in ("min", "max", "count") or (
                    call.function == "count" and not expr.keys):
                return []
            part = Field(call.field.name + "__part", call.field.type, True)
            inner_calls.append(AggregateCall(part, call.call))
            merge = exp.Sum if call.function == "count" else type(call.call)
            outer_calls.append(AggregateCall(call.field, merge(this=col(part.name))))
        inner = Aggregate(expr.input, expr.keys + (column,), tuple(inner_calls))
        return [Aggregate(inner, expr.keys, tuple(outer_calls))]


def _distinct_column(call: AggregateCall) -> str | None:
    """The column ``x`` of ``COUNT(DISTINCT x)``; ``None`` for any other distinct call."""
    if call.function != "count" or isinstance(call.call, exp.Filter):
        return None
    distinct = call.call.this
    if not isinstance(distinct, exp.Distinct) or len(distinct.expressions) != 1:
        return None
    arg = distinct.expressions[0]
    return arg.name if isinstance(arg, exp.Column) and not arg.table else None
