"""Partial states of aggregates: how ``+sum`` keeps SUM, COUNT, AVG, MIN and MAX mergeable.

An aggregate ``γ(keys; f_1..f_n)`` is maintained through its *partial states*: per group key,
columns that merge by a per-function rule and that ``finalize`` turns into the aggregate's
output (SEMANTICS.md, ``+sum``). Every partial-state relation also counts the rows of each group
(:data:`ROWS`), so that a group whose count returns to 0 disappears.

| function | partial columns | computed from a Z-set (signed by ``__m``) | merge | finalize |
|---|---|---|---|---|
| ``SUM(x)`` | ``sum``, ``n`` (non-null count) | ``SUM(x·m)``, ``SUM(m if x not null)`` | add | ``sum`` if ``n > 0`` else NULL |
| ``COUNT(*)``, ``COUNT(x)`` | ``n`` | ``SUM(m)`` / ``SUM(m if x not null)`` | add | ``n`` (0 when empty) |
| ``AVG(x)`` | ``sum``, ``n`` | as SUM | add | ``sum / n`` in Spark's result type |
| ``MIN(x)``, ``MAX(x)`` | ``v`` | ``MIN(x)`` / ``MAX(x)`` | min / max | ``v`` |

Every partial column computed from a Z-set is itself a merge over the Z-set's rows of a per-row
value (``PartialColumn.from_row``: ``x·m``, ``m if x not null``, ``x``), cast to the column's
type. A Z-set projected to those values is therefore a value delta that is not yet aggregated:
merging it into kept states gives the same states as merging its aggregate
(:class:`~tempura.tvr.operators.StateRows`).

The columns, their bag-level calls and :func:`finalize` are the decomposition of
:mod:`tempura.algebra.decompose`; this module adds their signed forms over Z-sets.

MIN and MAX merge only while their input is insert-only (:func:`mergeable`); the rules plan a
recompute of the aggregate otherwise. ``DISTINCT`` calls, ``FILTER`` clauses and other functions
have no partial state here (:func:`has_partial_state`), so an aggregate with them is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from tempura.algebra import AggregateCall, Field, LogicalPlan, aggregate_parts, col
from tempura.algebra.decompose import COUNT_SUFFIX, SUM_SUFFIX, VALUE_SUFFIX, decomposable, finalize
from tempura.algebra.decompose import call_argument, partial_sum_type
from tempura.tvr.zset import MULT

ROWS = "__rows"
ROWS_FIELD = Field(ROWS, "bigint", True)


@dataclass(frozen=True)
class PartialColumn:
    """One partial-state column: ``field``, its aggregate over a bag or a Z-set, and its merge."""

    field: Field
    from_bag: exp.Expr
    from_zset: exp.Expr
    merge: exp.Expr  # an aggregate over the column itself, applied to the union of two states
    from_row: exp.Expr  # one Z-set row's contribution: ``merge`` over these is ``from_zset``


def has_partial_state(call: AggregateCall) -> bool:
    """Whether ``call`` has partial-state columns at all (:func:`~tempura.algebra.decompose.decomposable`).
    Without them neither ``PS`` nor ``VD`` can be computed (the columns of
    :func:`partial_columns` would count duplicates, or read ``DISTINCT x`` as an argument), and
    the aggregate is recomputed from its input's snapshot."""
    return decomposable(call)


def mergeable(call: AggregateCall, insert_only: bool) -> bool:
    """Whether ``call`` can be maintained by ``+sum`` (MIN/MAX only over insert-only input)."""
    if not has_partial_state(call):
        return False
    return insert_only or call.function not in ("min", "max")


def _nonnull_count(arg: exp.Expr | None, signed: bool) -> exp.Expr:
    weight: exp.Expr = col(MULT) if signed else exp.Literal.number(1)
    if arg is None:
        return exp.Sum(this=weight)
    return exp.Sum(this=exp.If(this=exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null())), true=weight, false=exp.Literal.number(0)))


def partial_columns(call: AggregateCall) -> list[PartialColumn]:
    """The partial-state columns of one aggregate call, named after its output field."""
    name = call.field.name
    fn = call.function
    arg = call_argument(call)
    count_name = name + COUNT_SUFFIX
    signed_count = _nonnull_count(arg, True)
    count = PartialColumn(
        Field(count_name, "bigint", True), _nonnull_count(arg, False), signed_count, exp.Sum(this=col(count_name)),
        exp.cast(signed_count.this.copy(), "bigint"),
    )
    if fn == "count":
        return [count]
    assert arg is not None, f"{fn} needs an argument"
    if fn in ("sum", "avg"):
        sum_name = name + SUM_SUFFIX
        sum_type = partial_sum_type(call)
        decimal = sum_type.startswith("decimal")
        plain = arg.copy() if decimal or fn == "sum" else exp.cast(arg.copy(), sum_type)  # AVG sums doubles
        signed = _signed(plain, sum_type)

        def total(of: exp.Expr) -> exp.Expr:
            # SUM widens decimals (and a product with the multiplicity): keep the declared type
            return exp.cast(exp.Sum(this=of), sum_type) if decimal else exp.Sum(this=of)

        return [PartialColumn(Field(sum_name, sum_type, True), total(plain), total(signed), total(col(sum_name)),
                              exp.cast(signed.copy(), sum_type)), count]
    value_name = name + VALUE_SUFFIX
    agg = exp.Min if fn == "min" else exp.Max
    return [PartialColumn(Field(value_name, call.field.type, True), agg(this=arg.copy()), agg(this=arg.copy()), agg(this=col(value_name)),
                          exp.cast(arg.copy(), call.field.type))]


def _signed(value: exp.Expr, sum_type: str) -> exp.Expr:
    """``value`` times the row's multiplicity. Spark types a decimal ``(p, s)`` times ``bigint``
    as ``(p + 21, s)``, and past 38 digits it cuts the scale to as little as 6 (and a ``CASE``
    over such branches too): a sum of ``SUM(x) / n``-like values would lose its digits. A row of
    multiplicity 1 or -1 (every row but consolidated duplicates) therefore contributes ``value``
    or ``-value`` itself, each branch in the sum's own type."""
    product = exp.Mul(this=exp.Paren(this=value.copy()), expression=col(MULT))
    if not sum_type.startswith("decimal"):
        return product
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=col(MULT), expression=exp.Literal.number(1)), true=exp.cast(value.copy(), sum_type)),
        exp.If(this=exp.EQ(this=col(MULT), expression=exp.Literal.number(-1)),
               true=exp.cast(exp.Neg(this=exp.Paren(this=value.copy())), sum_type)),
    ], default=exp.cast(product, sum_type))


def rows_column(signed: bool) -> exp.Expr:
    return exp.Sum(this=col(MULT)) if signed else exp.Count(this=exp.Star())


def row_count() -> exp.Expr:
    """One Z-set row's contribution to :data:`ROWS`: its multiplicity."""
    return exp.cast(col(MULT), "bigint")


def has_partial_states(plan: LogicalPlan) -> bool:
    """Whether every call of the aggregate (or ``Distinct``) has partial-state columns: no
    ``DISTINCT`` call, no ``FILTER``, only the functions this module knows."""
    _, calls = aggregate_parts(plan)
    return all(has_partial_state(c) for c in calls)


__all__ = [
    "ROWS",
    "ROWS_FIELD",
    "PartialColumn",
    "finalize",
    "has_partial_state",
    "has_partial_states",
    "mergeable",
    "partial_columns",
    "row_count",
    "rows_column",
]
