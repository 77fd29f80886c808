"""The operators that compute TVR forms, as memo expressions, each with its lowering.

These sit in the memo beside the ordinary logical operators, over :class:`GroupRef` inputs, and
the ordinary operators (``Filter``, ``Project``, ``Join``, ``Union``) compute deltas unchanged:
the multiplicity column :data:`~tempura.tvr.zset.MULT` is just a column to them. What is new:

- :class:`SourceRead` — a source's rows that arrived in ``(t_start, t_end]``, as a snapshot (a
  bag, ``start == 0``) or as a delta (a Z-set: ``+1`` per inserted row, ``-1`` per deletion);
- :class:`ToDelta` — a bag as a Z-set with multiplicity ``sign`` (``+1``, or ``-1`` to retract);
- :class:`Consolidate` — ``+#`` within one Z-set;
- :class:`ZApply` — ``SS +# SD`` as a bag (a plain union when every multiplicity is ``+1``);
- :class:`StateAggregate` — partial aggregate states of a bag (``PS``) or a Z-set (``VD``);
- :class:`StateRows` — a Z-set's rows as the per-row values of partial states: a value delta not
  yet aggregated, which a :class:`StateMerge` aggregates together with the states it updates;
- :class:`StateMerge` — ``+sum`` of two partial-state relations;
- :class:`Finalize` — partial states to the aggregate's rows.

Every operator *lowers* to the ordinary algebra plus :class:`~tempura.algebra.Repeat`
(:meth:`TvrOperator.lower`), so that statistics, costs and Spark SQL come from the code that
already handles those operators.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    AggregateCall,
    Field,
    Filter,
    LogicalPlan,
    Project,
    Projection,
    Repeat,
    Scan,
    Schema,
    Union,
    col,
)
from tempura.tvr.partials import ROWS, ROWS_FIELD, finalize, partial_columns, row_count, rows_column
from tempura.tvr.zset import MULT, MULT_FIELD


class TvrOperator(LogicalPlan):
    """Base of the TVR operators."""

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        """This operator in the ordinary algebra, over ``inputs`` in place of its own."""
        raise NotImplementedError


def with_mult(schema: Schema) -> Schema:
    """A Z-set's schema: the relation's columns plus the multiplicity."""
    return Schema(schema.fields + (MULT_FIELD,))


def without_mult(schema: Schema) -> Schema:
    return Schema(tuple(f for f in schema.fields if f.name != MULT))


def data_columns(plan: LogicalPlan) -> list[str]:
    return [n for n in plan.schema.names if n != MULT]


def _keep(plan: LogicalPlan, names: Sequence[str], extra: Sequence[Projection] = ()) -> Project:
    return Project(plan, tuple(Projection(plan.schema.field(n), col(n)) for n in names) + tuple(extra))


@dataclass(frozen=True, eq=False)
class SourceRead(TvrOperator):
    """The rows of ``scan``'s table that arrived in ``(t_start, t_end]``; a Z-set when
    ``delta``, else the snapshot at version ``end`` (``start`` 0) or, of a source that only
    inserts, the bag of its rows that arrived after ``t_start`` (``SS(start,end]``: what a join
    keeps of a snapshot when the rows its other side may match all landed after ``t_start``).
    ``keyed``: the column a probe reads it by, when the plan reads it as a keyed read (a view of
    its own, pruned by its probe alone whatever the fragment's other reads of the rows)."""

    scan: Scan
    start: int
    end: int
    delta: bool
    keyed: str = ""

    def _derive_schema(self) -> Schema:
        return with_mult(self.scan.schema) if self.delta else self.scan.schema

    @property
    def operator(self) -> str:
        return "SourceRead"

    @property
    def form(self) -> str:
        if self.delta:
            return f"SD[{self.start},{self.end}]"
        return f"SS({self.start},{self.end}]" if self.start else f"SS[{self.end}]"

    @property
    def view(self) -> str:
        """The name the runtime registers this read under."""
        keyed = f"__by_{self.keyed}" if self.keyed else ""
        return f"{self.scan.table}__{'sd' if self.delta else 'ss'}_{self.start}_{self.end}{keyed}"

    def describe(self) -> str:
        """The read as a user reads it: ``sales, changes up to t2``."""
        span = f"up to t{self.end}" if not self.start else f"in (t{self.start}, t{self.end}]"
        keyed = f", by {self.keyed}" if self.keyed else ""
        if self.delta:
            return f"{self.scan.table}, changes {span}{keyed}"
        return (f"{self.scan.table}, rows landed {span}" if self.start else f"{self.scan.table}, snapshot at t{self.end}") + keyed

    def details(self) -> str:
        return f"{self.scan.details()} {self.form}"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        columns = self.scan.columns
        if self.delta:
            from tempura.algebra import ScanColumn

            columns = columns + (ScanColumn(MULT, MULT_FIELD),)
        return Scan(self.view, columns, self.scan.alias or self.scan.table)


@dataclass(frozen=True, eq=False)
class ToDelta(TvrOperator):
    """A bag as a Z-set whose every row has multiplicity ``sign``."""

    input: LogicalPlan
    sign: int = 1

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        (child,) = inputs
        return ToDelta(child, self.sign)

    def _derive_schema(self) -> Schema:
        return with_mult(self.input.schema)

    def details(self) -> str:
        return f"sign={self.sign:+d}"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        (child,) = inputs
        return _keep(child, child.schema.names, (Projection(MULT_FIELD, exp.cast(exp.Literal.number(self.sign), "bigint")),))


@dataclass(frozen=True, eq=False)
class Consolidate(TvrOperator):
    """``+#`` within a Z-set: equal rows' multiplicities summed, rows summing to 0 dropped."""

    input: LogicalPlan

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        (child,) = inputs
        return Consolidate(child)

    def _derive_schema(self) -> Schema:
        return self.input.schema

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        (child,) = inputs
        keys = tuple(data_columns(child))
        summed = Aggregate(child, keys, (AggregateCall(MULT_FIELD, exp.Sum(this=col(MULT))),))
        return Filter(summed, exp.NEQ(this=col(MULT), expression=exp.Literal.number(0)))


@dataclass(frozen=True, eq=False)
class ZApply(TvrOperator):
    """``left +# right``: the snapshot ``left`` (a bag) changed by the Z-set ``right``. With
    ``unit`` (every multiplicity of ``right`` is ``+1``) this is a union."""

    left: LogicalPlan
    right: LogicalPlan
    unit: bool = False

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.left, self.right)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        left, right = inputs
        return ZApply(left, right, self.unit)

    def _derive_schema(self) -> Schema:
        return self.left.schema

    def details(self) -> str:
        return "union" if self.unit else "consolidate"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        left, right = inputs
        names = list(left.schema.names)
        fields = tuple(left.schema.fields)
        if self.unit:
            return Union(left, _keep(right, names), True, fields)
        signed_left = ToDelta(left, 1).lower([left])
        both = Union(signed_left, _keep(right, [*names, MULT]), True, fields + (MULT_FIELD,))
        return Repeat(Consolidate(both).lower([both]), MULT)


@dataclass(frozen=True, eq=False)
class _ToStates(TvrOperator):
    """An operator from one input to partial-state rows of ``γ(keys; calls)``."""

    input: LogicalPlan
    keys: tuple[str, ...]
    calls: tuple[AggregateCall, ...]

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        (child,) = inputs
        return dataclasses.replace(self, input=child)

    def _derive_schema(self) -> Schema:
        return state_schema(self.input.schema, self.keys, self.calls)


@dataclass(frozen=True, eq=False)
class StateAggregate(_ToStates):
    """Partial states of ``γ(keys; calls)`` over a bag, or over a Z-set when ``signed`` (a
    value delta: every contribution weighted by its multiplicity)."""

    signed: bool

    def details(self) -> str:
        return f"{'VD' if self.signed else 'PS'} keys=[{', '.join(self.keys)}]"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        (child,) = inputs
        calls = []
        for call in self.calls:
            for part in partial_columns(call):
                calls.append(AggregateCall(part.field, part.from_zset if self.signed else part.from_bag))
        calls.append(AggregateCall(ROWS_FIELD, rows_column(self.signed)))
        return Aggregate(child, self.keys, tuple(calls))


def state_schema(input_schema: Schema, keys: tuple[str, ...], calls: tuple[AggregateCall, ...]) -> Schema:
    """Keys, then each call's partial columns, then the row count."""
    fields: list[Field] = [input_schema.field(k) for k in keys]
    for call in calls:
        fields.extend(p.field for p in partial_columns(call))
    fields.append(ROWS_FIELD)
    return Schema(tuple(fields))


@dataclass(frozen=True, eq=False)
class StateRows(_ToStates):
    """A Z-set's rows as partial-state rows of ``γ(keys; calls)``, one per input row: each
    partial column holds the row's own contribution (``x·m``, ``m`` if ``x`` is not null, ``x``)
    and :data:`ROWS` its multiplicity. Merged by ``+sum``, these rows and the value delta
    ``γ_partial(Z)`` (:class:`StateAggregate`, signed) update kept states alike, so
    ``PS[v-1] +sum StateRows(ΔR)`` is ``PS[v]`` with one aggregation fewer: the merge's own
    partial aggregation does the delta's."""

    def details(self) -> str:
        return f"keys=[{', '.join(self.keys)}]"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        (child,) = inputs
        fields = child.schema
        out = [Projection(fields.field(k), col(k)) for k in self.keys]
        for call in self.calls:
            out.extend(Projection(part.field, part.from_row) for part in partial_columns(call))
        out.append(Projection(ROWS_FIELD, row_count()))
        return Project(child, tuple(out))


@dataclass(frozen=True, eq=False)
class StateMerge(TvrOperator):
    """``left +sum right`` for partial states of ``γ(keys; calls)``; a keyed group whose row count
    reaches 0 disappears."""

    left: LogicalPlan
    right: LogicalPlan
    keys: tuple[str, ...]
    calls: tuple[AggregateCall, ...]

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.left, self.right)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        left, right = inputs
        return StateMerge(left, right, self.keys, self.calls)

    def _derive_schema(self) -> Schema:
        return self.left.schema

    def details(self) -> str:
        return f"keys=[{', '.join(self.keys)}]"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        left, right = inputs
        fields = tuple(left.schema.fields)
        names = list(left.schema.names)
        both = Union(left, right if list(right.schema.names) == names else _keep(right, names), True, fields)
        calls = []
        for call in self.calls:
            for part in partial_columns(call):
                calls.append(AggregateCall(left.schema.field(part.field.name), part.merge))
        calls.append(AggregateCall(ROWS_FIELD, exp.Sum(this=col(ROWS))))
        merged: LogicalPlan = Aggregate(both, self.keys, tuple(calls))
        if self.keys:
            merged = Filter(merged, exp.NEQ(this=col(ROWS), expression=exp.Literal.number(0)))
        return merged


@dataclass(frozen=True, eq=False)
class Finalize(TvrOperator):
    """The rows of ``γ(keys; calls)`` (columns ``fields``) from its partial states."""

    input: LogicalPlan
    keys: tuple[str, ...]
    calls: tuple[AggregateCall, ...]
    fields: tuple[Field, ...]

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        (child,) = inputs
        return Finalize(child, self.keys, self.calls, self.fields)

    def _derive_schema(self) -> Schema:
        return Schema(self.fields)

    def details(self) -> str:
        return f"keys=[{', '.join(self.keys)}]"

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        (child,) = inputs
        source: LogicalPlan = child
        if self.keys:
            # a snapshot's group never counts fewer than no rows: ``<> 0`` drops exactly the
            # groups that are gone, with the same filter as the merge of the states below
            source = Filter(child, exp.NEQ(this=col(ROWS), expression=exp.Literal.number(0)))
        by_name = {f.name: f for f in self.fields}
        projections = [Projection(by_name[k], col(k)) for k in self.keys]
        projections += [Projection(by_name[c.field.name], finalize(c)) for c in self.calls]
        return Project(source, tuple(projections))


def lower_plan(plan: LogicalPlan, keep_reads: bool = False) -> LogicalPlan:
    """A whole tree with every TVR operator lowered (inputs first); with ``keep_reads`` the
    source reads stay as they are (the memo keeps them as leaves with their own statistics)."""
    if keep_reads and isinstance(plan, SourceRead):
        return plan
    children = [lower_plan(c, keep_reads) for c in plan.inputs]
    if isinstance(plan, TvrOperator):
        return plan.lower(children)
    if all(new is old for new, old in zip(children, plan.inputs)):
        return plan
    return plan.with_inputs(*children)


@dataclass(frozen=True, eq=False)
class StateRead(TvrOperator):
    """A state kept by an earlier fragment, read back (a fragment's leaf)."""

    state: str
    fields: tuple[Field, ...]

    def _derive_schema(self) -> Schema:
        return Schema(self.fields)

    def details(self) -> str:
        return self.state

    def lower(self, inputs: Sequence[LogicalPlan]) -> LogicalPlan:
        from tempura.algebra import ScanColumn

        return Scan(self.state, tuple(ScanColumn(f.name, f) for f in self.fields), self.state)
