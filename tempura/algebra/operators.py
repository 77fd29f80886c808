"""Logical operators: immutable, hashable plan values that know their output schema, and
:func:`format_plan`, which prints a plan as an indented tree.

A plan is a tree of these frozen dataclasses. Rewrites build new values (``with_inputs``);
nothing is patched in place. Scalar expressions are sqlglot expressions whose column references
are plan-unique names (``schema.py``).

Semantics worth stating:

- Every operator works on bags. ``Union``/``Intersect``/``Except`` with ``all=False`` and
  ``Distinct`` remove duplicates.
- ``Aggregate`` with no keys is a scalar aggregate: one row, even over empty input.
- ``Aggregate`` keeps its key columns' names: a key column above the aggregate carries the same
  value as below it.
- A ``Project`` may pass an input column through under its own name; any computed column gets a
  fresh name.
- ``Sort`` defines an order; ``Filter``, ``Project`` and ``Limit`` keep their input's order.
- Semi and anti joins output the left input's columns only.
- ``Window`` keeps every input row and column and appends one column per window call; it
  keeps no order.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

from sqlglot import exp

from tempura.algebra.expressions import column_name
from tempura.algebra.schema import Field, Schema, hash_once


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
"""Each operator class's dataclass field names, in order (what its identity is made of)."""


class LogicalPlan:
    """Base of every logical operator."""

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return ()

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        """The same operator over new inputs (positional, as ``inputs`` orders them)."""
        if inputs:
            raise TypeError(f"{type(self).__name__} takes no inputs")
        return self

    @cached_property
    def schema(self) -> Schema:
        return self._derive_schema()

    def remembered(self, name: str, compute: Callable[[], str]) -> str:
        """A text derived from this operator alone, computed once: operators are immutable, and
        printing their expressions as SQL (sqlglot copies a tree to print it) is what planning
        would otherwise repeat for every time point and property a memo group is asked for."""
        known = self.__dict__.get(name)
        if known is None:
            known = self.__dict__[name] = compute()
        return known

    def _derive_schema(self) -> Schema:
        raise NotImplementedError

    @property
    def operator(self) -> str:
        """The operator's name, as plans print it."""
        return type(self).__name__

    def details(self) -> str:
        """The operator's arguments on one line, as plans print it."""
        return ""

    def _field_names(self) -> tuple[str, ...]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]
        return names

    def _key(self) -> tuple[Any, ...]:
        cached = self.__dict__.get("_key_value")
        if cached is None:
            cached = self.__dict__["_key_value"] = tuple(getattr(self, name) for name in self._field_names())
        return cached

    def _replace(self, **changes: LogicalPlan) -> LogicalPlan:
        """This operator with some inputs changed: ``dataclasses.replace`` without running the
        generated ``__init__`` again (rebuilding plans is the memo's inner loop)."""
        made = object.__new__(type(self))
        state = made.__dict__
        for name in self._field_names():
            state[name] = changes[name] if name in changes else self.__dict__[name]
        return made

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, LogicalPlan)
        return hash(self) == hash(other) and self._key() == other._key()

    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((type(self).__name__, self._key()))
            self.__dict__["_hash"] = cached
        return cached

    def __str__(self) -> str:
        return format_plan(self)


Annotate = Callable[[LogicalPlan], str]


def format_plan(plan: LogicalPlan, annotate: Annotate | None = None, indent: str = "  ") -> str:
    """The plan as an indented tree. ``annotate`` may add text (estimates, costs) to each line."""
    lines: list[str] = []

    def visit(node: LogicalPlan, depth: int) -> None:
        details = node.details()
        line = f"{indent * depth}{node.operator}{' ' + details if details else ''}"
        if annotate is not None:
            extra = annotate(node)
            if extra:
                line = f"{line}  {extra}"
        lines.append(line)
        for child in node.inputs:
            visit(child, depth + 1)

    visit(plan, 0)
    return "\n".join(lines)


class Unary(LogicalPlan):
    """An operator with one input, stored in the ``input`` field."""

    input: LogicalPlan

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        (new_input,) = inputs
        return self._replace(input=new_input)

    def _derive_schema(self) -> Schema:
        return self.input.schema


class Binary(LogicalPlan):
    """An operator with a ``left`` and a ``right`` input."""

    left: LogicalPlan
    right: LogicalPlan

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.left, self.right)

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        left, right = inputs
        return self._replace(left=left, right=right)


@hash_once
@dataclass(frozen=True)
class ScanColumn:
    """A column read by a scan: the table's column ``source``, exposed as ``field``."""

    source: str
    field: Field


@dataclass(frozen=True, eq=False)
class Scan(LogicalPlan):
    """Read the catalog table ``table``; ``alias`` is the name the query gave it."""

    table: str
    columns: tuple[ScanColumn, ...]
    alias: str

    def _derive_schema(self) -> Schema:
        return Schema(tuple(c.field for c in self.columns))

    def details(self) -> str:
        alias = f" AS {self.alias}" if self.alias and self.alias != self.table else ""
        cols = ", ".join(
            c.field.name if c.field.name == c.source else f"{c.field.name} := {c.source}" for c in self.columns
        )
        return f"{self.table}{alias} [{cols}]"


@dataclass(frozen=True, eq=False)
class Values(LogicalPlan):
    """Literal rows. ``Values((), ((),))`` is the one-row, no-column relation under ``SELECT 1``."""

    fields: tuple[Field, ...]
    rows: tuple[tuple[exp.Expr, ...], ...]

    def _derive_schema(self) -> Schema:
        return Schema(self.fields)

    def details(self) -> str:
        names = ", ".join(f.name for f in self.fields)
        return f"[{names}] {len(self.rows)} row{'s' if len(self.rows) != 1 else ''}"


@dataclass(frozen=True, eq=False)
class Opaque(LogicalPlan):
    """A part of the query tempura does not plan natively, run as the Spark SQL ``sql`` the user
    wrote: Spark computes it, tempura prices it and plans around it.

    ``inputs`` are the catalog tables ``sql`` reads, as scans of every column: the text's mention
    of ``tables[i]`` reads ``inputs[i]``, whose columns are the table's ``read_columns[i]`` in
    order, so a standing query's snapshot of the part is the text over its sources' snapshots. ``columns`` are the
    columns of the text's result that the plan reads: ``source`` is the name Spark's analysis
    gives the column (made unique: ``name__2``). ``reason`` says why it is opaque."""

    sql: str
    tables: tuple[str, ...]
    reads: tuple[LogicalPlan, ...]
    read_columns: tuple[tuple[str, ...], ...]
    columns: tuple[ScanColumn, ...]
    outputs: tuple[str, ...]
    reason: str

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return self.reads

    def with_inputs(self, *inputs: LogicalPlan) -> LogicalPlan:
        if len(inputs) != len(self.reads):
            raise TypeError(f"Opaque reads {len(self.reads)} inputs, not {len(inputs)}")
        return self._replace(reads=tuple(inputs))  # type: ignore[arg-type]

    def _derive_schema(self) -> Schema:
        return Schema(tuple(c.field for c in self.columns))

    def details(self) -> str:
        cols = ", ".join(c.field.name if c.field.name == c.source else f"{c.field.name} := {c.source}" for c in self.columns)
        return f"[{cols}] runs as Spark SQL: {self.reason}"


@dataclass(frozen=True, eq=False)
class Filter(Unary):
    """Keep the rows for which ``condition`` is true (not false, not null)."""

    input: LogicalPlan
    condition: exp.Expr

    def details(self) -> str:
        return self.remembered("_details", lambda: self.condition.sql(dialect="spark"))


@hash_once
@dataclass(frozen=True)
class Projection:
    """One output column of a ``Project``: ``field.name := expression``."""

    field: Field
    expression: exp.Expr

    @property
    def is_passthrough(self) -> bool:
        return column_name(self.expression) == self.field.name


@dataclass(frozen=True, eq=False)
class Project(Unary):
    """Compute the output columns ``projections`` from each input row."""

    input: LogicalPlan
    projections: tuple[Projection, ...]

    def _derive_schema(self) -> Schema:
        return Schema(tuple(p.field for p in self.projections))

    def details(self) -> str:
        return self.remembered("_details", lambda: "[" + ", ".join(
            p.field.name if p.is_passthrough else f"{p.field.name} := {p.expression.sql(dialect='spark')}"
            for p in self.projections) + "]")


class JoinKind(enum.Enum):
    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"
    SEMI = "semi"
    ANTI = "anti"
    CROSS = "cross"

    @property
    def keeps_right_columns(self) -> bool:
        return self not in (JoinKind.SEMI, JoinKind.ANTI)

    @property
    def pads_left(self) -> bool:
        """Whether rows of the right input may appear with a null-padded left side."""
        return self in (JoinKind.RIGHT, JoinKind.FULL)

    @property
    def pads_right(self) -> bool:
        """Whether rows of the left input may appear with a null-padded right side."""
        return self in (JoinKind.LEFT, JoinKind.FULL)


@dataclass(frozen=True, eq=False)
class Join(Binary):
    """Join ``left`` and ``right`` on ``condition`` (``None`` for a cross join)."""

    kind: JoinKind
    left: LogicalPlan
    right: LogicalPlan
    condition: exp.Expr | None = None

    def _derive_schema(self) -> Schema:
        left = self.left.schema.nullable() if self.kind.pads_left else self.left.schema
        if not self.kind.keeps_right_columns:
            return left
        right = self.right.schema.nullable() if self.kind.pads_right else self.right.schema
        return left + right

    def details(self) -> str:
        return self.remembered("_details", lambda: self.kind.value + (
            f" ON {self.condition.sql(dialect='spark')}" if self.condition is not None else ""))


@hash_once
@dataclass(frozen=True)
class AggregateCall:
    """One aggregate: ``field.name := call``, where ``call`` is a sqlglot aggregate function
    over input columns (``COUNT(*)`` is ``exp.Count(this=exp.Star())``; ``DISTINCT`` sits inside
    it as sqlglot puts it)."""

    field: Field
    call: exp.Expr

    @property
    def function(self) -> str:
        """Lower-case function name: ``sum``, ``count``, ``avg``, ``min``, ``max``, ..."""
        node = self.call.this if isinstance(self.call, exp.Filter) else self.call
        return node.key

    @property
    def distinct(self) -> bool:
        node = self.call.this if isinstance(self.call, exp.Filter) else self.call
        return isinstance(node.args.get("this"), exp.Distinct)


def grouped_schema(input: Schema, keys: tuple[str, ...], calls: tuple[AggregateCall, ...]) -> Schema:
    """The columns of a grouping: its keys as the input has them, then one per call."""
    return Schema(tuple(input.field(k) for k in keys) + tuple(c.field for c in calls))


@dataclass(frozen=True, eq=False)
class Aggregate(Unary):
    """Group by the input columns ``keys`` and compute ``calls`` per group."""

    input: LogicalPlan
    keys: tuple[str, ...]
    calls: tuple[AggregateCall, ...]

    def _derive_schema(self) -> Schema:
        return grouped_schema(self.input.schema, self.keys, self.calls)

    def details(self) -> str:
        return self.remembered("_details", lambda: f"keys=[{', '.join(self.keys)}] calls=["
                               + ", ".join(f"{c.field.name} := {c.call.sql(dialect='spark')}" for c in self.calls) + "]")


@dataclass(frozen=True, eq=False)
class PartialAggregate(Unary):
    """The partial step of a split aggregate: per-partition groups with partial results (the
    physical search makes it when it splits a hash aggregate)."""

    input: LogicalPlan
    keys: tuple[str, ...]
    calls: tuple[AggregateCall, ...]

    def _derive_schema(self) -> Schema:
        return grouped_schema(self.input.schema, self.keys, self.calls)

    def details(self) -> str:
        return f"keys=[{', '.join(self.keys)}]"


@dataclass(frozen=True, eq=False)
class SetOperation(Binary):
    """Base of ``Union``, ``Intersect`` and ``Except``: columns correspond by position, and the
    output columns are ``fields``."""

    left: LogicalPlan
    right: LogicalPlan
    all: bool
    fields: tuple[Field, ...]

    def _derive_schema(self) -> Schema:
        return Schema(self.fields)

    def details(self) -> str:
        return ("ALL " if self.all else "DISTINCT ") + "[" + ", ".join(f.name for f in self.fields) + "]"


@dataclass(frozen=True, eq=False)
class Union(SetOperation):
    """Bag union (``all``) or set union."""


@dataclass(frozen=True, eq=False)
class Intersect(SetOperation):
    """Bag intersection (``all``: min of multiplicities) or set intersection."""


@dataclass(frozen=True, eq=False)
class Except(SetOperation):
    """Bag difference (``all``: multiplicities subtracted) or set difference."""


@dataclass(frozen=True, eq=False)
class Distinct(Unary):
    """Remove duplicate rows."""

    input: LogicalPlan


@hash_once
@dataclass(frozen=True)
class WindowCall:
    """One window function: ``field.name := call``, where ``call`` is a sqlglot ``exp.Window``
    (the function, ``PARTITION BY``, ``ORDER BY`` and frame) over input columns."""

    field: Field
    call: exp.Window

    @property
    def function(self) -> str:
        """Lower-case function name: ``rank``, ``row_number``, ``sum``, ``lag``, ..."""
        return self.call.this.key

    @property
    def partition(self) -> tuple[str, ...]:
        """The input columns of ``PARTITION BY`` (a computed partition expression has none)."""
        names = (column_name(e) for e in self.call.args.get("partition_by") or [])
        return tuple(n for n in names if n is not None)

    @property
    def ordered(self) -> bool:
        order = self.call.args.get("order")
        return order is not None and bool(order.expressions)


@dataclass(frozen=True, eq=False)
class Window(Unary):
    """Every input row with the values of window functions ``calls`` appended: each call sees
    the rows of the row's partition (the rows equal on its ``PARTITION BY`` columns, NULL equal
    to NULL), in its ``ORDER BY`` order, within its frame."""

    input: LogicalPlan
    calls: tuple[WindowCall, ...]

    def _derive_schema(self) -> Schema:
        return Schema(tuple(self.input.schema.fields) + tuple(c.field for c in self.calls))

    @property
    def partition_keys(self) -> tuple[str, ...]:
        """The columns every call partitions by: rows that differ in one of them never meet in
        any call's window (empty when some call has no such column)."""
        common = [k for k in self.calls[0].partition if all(k in c.partition for c in self.calls[1:])]
        return tuple(common)

    def details(self) -> str:
        return "[" + ", ".join(f"{c.field.name} := {c.call.sql(dialect='spark')}" for c in self.calls) + "]"


@hash_once
@dataclass(frozen=True)
class SortKey:
    expression: exp.Expr
    descending: bool = False
    nulls_first: bool = True

    def __str__(self) -> str:
        direction = "DESC" if self.descending else "ASC"
        nulls = "NULLS FIRST" if self.nulls_first else "NULLS LAST"
        return f"{self.expression.sql(dialect='spark')} {direction} {nulls}"


@dataclass(frozen=True, eq=False)
class Sort(Unary):
    """Order the rows by ``keys``."""

    input: LogicalPlan
    keys: tuple[SortKey, ...]

    def details(self) -> str:
        return "[" + ", ".join(str(k) for k in self.keys) + "]"


@dataclass(frozen=True, eq=False)
class Limit(Unary):
    """Skip ``offset`` rows, then keep at most ``count`` (all when ``None``)."""

    input: LogicalPlan
    count: int | None
    offset: int = 0

    def details(self) -> str:
        text = "ALL" if self.count is None else str(self.count)
        return text + (f" OFFSET {self.offset}" if self.offset else "")


@dataclass(frozen=True, eq=False)
class Generate(Unary):
    """Spark's ``LATERAL VIEW [OUTER]``: each input row with each row the generator ``call``
    (``explode``, ``posexplode``, ``inline``) makes of it, the generated columns ``fields``
    appended. Without ``outer`` a row whose call makes no row vanishes; with it, it stays once
    with NULLs. Each output row comes from one input row, so the operator maps a bag row by row
    (and a delta's rows with their multiplicities)."""

    input: LogicalPlan
    call: exp.Expr
    fields: tuple[Field, ...]
    outer: bool = False

    def _derive_schema(self) -> Schema:
        return Schema(tuple(self.input.schema.fields) + self.fields)

    def details(self) -> str:
        call = self.remembered("_call_sql", lambda: self.call.sql(dialect="spark"))
        return f"{'OUTER ' if self.outer else ''}{call} AS [{', '.join(f.name for f in self.fields)}]"


@dataclass(frozen=True, eq=False)
class Repeat(Unary):
    """Each input row ``count`` times, where ``count`` is an integer column of the row (dropped
    from the output); rows whose count is not positive vanish. Spark's ``explode(sequence(…))``.
    This is how a Z-set with positive multiplicities becomes a bag."""

    input: LogicalPlan
    count: str

    def _derive_schema(self) -> Schema:
        return Schema(tuple(f for f in self.input.schema.fields if f.name != self.count))

    def details(self) -> str:
        return f"by {self.count}"


@dataclass(frozen=True)
class Query:
    """A bound query: its plan plus what the user sees of the result.

    ``names[i]`` is the user-facing name of ``plan.schema.fields[i]`` (names may repeat, as in
    SQL). ``ordered`` says whether the query fixes the row order; ``order_keys`` then gives the
    output positions of its sort keys when all of them are output columns, so that rows tied on
    the keys may legitimately come in any order.

    ``result`` is Spark's analysis of the query as written (its result ``StructType`` as JSON),
    where Spark analyzed it: Spark is the authority on what the result's columns are called and
    typed, so ``names`` are then Spark's, and what tempura delivers is cast to its types.
    """

    plan: LogicalPlan
    names: tuple[str, ...]
    ordered: bool = False
    order_keys: tuple[int, ...] | None = None
    result: str | None = None

    def __post_init__(self) -> None:
        if len(self.names) != len(self.plan.schema):
            raise ValueError("a query needs one output name per output column")

    def __str__(self) -> str:
        return str(self.plan)


def aggregate_parts(plan: LogicalPlan) -> tuple[tuple[str, ...], tuple[AggregateCall, ...]]:
    """The grouping keys and calls of an ``Aggregate``, or of a ``Distinct`` (all its columns
    are keys, no call)."""
    if isinstance(plan, Aggregate):
        return plan.keys, plan.calls
    assert isinstance(plan, Distinct), plan
    return tuple(plan.schema.names), ()
