"""Decomposable aggregates: SUM, COUNT, AVG, MIN and MAX as partial states that aggregate again.

A call of one of these functions, without ``DISTINCT`` or ``FILTER``, over a bag equals a merge
of its *partial states* over the parts of any partition of that bag. Per part, the partial
state is a few columns named after the call's output field:

| function | partial columns | over a bag | merge | finalize |
|---|---|---|---|---|
| ``SUM(x)`` | ``<name>__sum``, ``<name>__n`` | ``SUM(x)``, ``COUNT(x)`` | ``SUM`` | ``sum`` if ``n > 0`` else NULL |
| ``COUNT(*)``, ``COUNT(x)`` | ``<name>__n`` | the call | ``SUM`` | ``n`` (0 when empty) |
| ``AVG(x)`` | ``<name>__sum``, ``<name>__n`` | ``SUM(x)`` (as a double unless decimal), ``COUNT(x)`` | ``SUM`` | ``sum / n`` in Spark's type |
| ``MIN(x)``, ``MAX(x)`` | ``<name>__v`` | the call | ``MIN`` / ``MAX`` | ``v`` |

:func:`finalize` turns merged partial columns back into the call's value, in Spark's result
type and with its NULLs. Two users merge them: incremental maintenance merges partial states
across time (:mod:`tempura.tvr.partials`, which adds the signed forms over Z-sets), and
grouping sets merge them across groups, aggregating each coarser set from the finest one
(:mod:`tempura.sql.grouping`).
"""

from __future__ import annotations

import re

from sqlglot import exp

from tempura.algebra.expressions import col
from tempura.algebra.operators import AggregateCall
from tempura.algebra.schema import Field

DECOMPOSABLE = ("sum", "count", "avg", "min", "max")
SUM_SUFFIX = "__sum"
COUNT_SUFFIX = "__n"
VALUE_SUFFIX = "__v"

_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def decomposable(call: AggregateCall) -> bool:
    """Whether ``call`` has partial states: one of :data:`DECOMPOSABLE`, without ``DISTINCT``
    (its parts would count a value once per part) or ``FILTER``."""
    if isinstance(call.call, exp.Filter) or call.distinct:
        return False
    return call.function in DECOMPOSABLE


def decimal_shape(type_: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a ``decimal(p,s)`` type, else None."""
    match = _DECIMAL.fullmatch(type_)
    return (int(match.group(1)), int(match.group(2))) if match else None


def partial_sum_type(call: AggregateCall) -> str:
    """The type of a SUM or AVG call's ``__sum`` column: the SUM's own type, or the type Spark
    sums an AVG in (``decimal(p + 10, s)`` for ``AVG(decimal(p, s))``, else double)."""
    if call.function == "sum":
        return call.field.type
    shape = decimal_shape(call.field.type)
    if shape:  # AVG(decimal(p, s)) is decimal(p + 4, s + 4)
        p, s = shape[0] - 4, shape[1] - 4
        return f"decimal({min(p + 10, 38)},{s})"
    return "double"


def summed_type(type_: str) -> str:
    """Spark's type of ``SUM`` over a column of ``type_`` (a partial column's)."""
    shape = decimal_shape(type_)
    if shape:
        return f"decimal({min(shape[0] + 10, 38)},{shape[1]})"
    return "double" if type_ in ("double", "float") else "bigint"


def call_argument(call: AggregateCall) -> exp.Expr | None:
    """The argument of a call, None for ``COUNT(*)``."""
    arg = call.call.this
    return None if arg is None or isinstance(arg, exp.Star) else arg


def bag_partials(call: AggregateCall) -> tuple[AggregateCall, ...]:
    """``call``'s partial columns over a bag, as plain aggregate calls named after ``call``
    (a call that is not :func:`decomposable` is refused)."""
    if not decomposable(call):
        raise ValueError(f"{call.call.sql(dialect='spark')} has no partial state")
    name, fn, arg = call.field.name, call.function, call_argument(call)
    counted = exp.Count(this=arg.copy() if arg is not None else exp.Star())
    count = AggregateCall(Field(name + COUNT_SUFFIX, "bigint", True), counted)
    if fn == "count":
        return (count,)
    assert arg is not None, f"{fn} needs an argument"
    if fn in ("sum", "avg"):
        sum_type = partial_sum_type(call)
        summed = arg.copy() if sum_type.startswith("decimal") or fn == "sum" else exp.cast(arg.copy(), sum_type)
        return AggregateCall(Field(name + SUM_SUFFIX, sum_type, True), exp.Sum(this=summed)), count
    return (AggregateCall(Field(name + VALUE_SUFFIX, call.field.type, True), call.call.copy()),)


def merged_partials(call: AggregateCall, into: AggregateCall) -> tuple[AggregateCall, ...]:
    """The calls that merge the partial columns of ``call`` (as :func:`bag_partials` names
    them) into partial columns named after ``into``: plain ``SUM``, ``MIN`` or ``MAX`` calls,
    each typed as Spark types it; :func:`finalize` of ``into`` then gives the call's value."""
    merged = []
    for part in bag_partials(call):
        suffix = part.field.name[len(call.field.name):]
        column = col(part.field.name)
        if suffix == VALUE_SUFFIX:
            merge: exp.Expr = exp.Min(this=column) if call.function == "min" else exp.Max(this=column)
            type_ = part.field.type
        else:
            merge, type_ = exp.Sum(this=column), summed_type(part.field.type)
        merged.append(AggregateCall(Field(into.field.name + suffix, type_, True), merge))
    return tuple(merged)


def finalize(call: AggregateCall) -> exp.Expr:
    """The aggregate's value from its partial-state columns."""
    name = call.field.name
    n = col(name + COUNT_SUFFIX)
    fn = call.function
    if fn == "count":
        return exp.cast(exp.Coalesce(this=n, expressions=[exp.Literal.number(0)]), call.field.type)
    if fn in ("min", "max"):
        return col(name + VALUE_SUFFIX)
    total = col(name + SUM_SUFFIX)
    positive = exp.GT(this=exp.Coalesce(this=n.copy(), expressions=[exp.Literal.number(0)]), expression=exp.Literal.number(0))
    if fn == "sum":
        value: exp.Expr = exp.cast(total, call.field.type)
    else:
        sum_type = partial_sum_type(call)
        divisor = exp.cast(n.copy(), "decimal(20,0)") if sum_type.startswith("decimal") else exp.cast(n.copy(), "double")
        value = exp.cast(exp.Div(this=exp.cast(total, sum_type), expression=divisor), call.field.type)
    return exp.If(this=positive, true=value, false=exp.cast(exp.Null(), call.field.type))


__all__ = [
    "COUNT_SUFFIX",
    "DECOMPOSABLE",
    "SUM_SUFFIX",
    "VALUE_SUFFIX",
    "bag_partials",
    "call_argument",
    "decimal_shape",
    "decomposable",
    "finalize",
    "merged_partials",
    "partial_sum_type",
    "summed_type",
]
