"""Constant values as the estimator sees them: folding literal expressions and encoding values.

Literal expressions in predicates (``date '1994-01-01' + interval '1' year``, ``0.06 - 0.01``)
are folded by sqlglot's simplifier, then read as Python values. Orderable values are encoded on
the number line that the statistics use (see :mod:`tempura.stats.model`): numbers as floats,
dates as days since 1970-01-01, timestamps as seconds since the epoch.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from typing import Union

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.simplify import simplify

from tempura.stats.model import Kind

Value = Union[float, str, bool, None]

EPOCH = dt.date(1970, 1, 1)
EPOCH_TS = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class NotConstant(Exception):
    """The expression is not a constant the estimator can read."""


def encode_date(value: dt.date) -> float:
    return float((value - EPOCH).days)


def encode_timestamp(value: dt.datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - EPOCH_TS).total_seconds()


def encode(value: object, kind: Kind) -> Value:
    """A Python value (from Spark or a literal) on the statistics' number line for ``kind``."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, dt.datetime):
        return encode_timestamp(value)
    if isinstance(value, dt.date):
        return encode_date(value)
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    text = str(value)
    if kind == "date":
        return parse_date(text)
    if kind == "timestamp":
        return parse_timestamp(text)
    if kind == "number":
        try:
            return float(Decimal(text))
        except InvalidOperation:
            raise NotConstant(text) from None
    return text


# What Spark's cast of a string to a DATE accepts: a year of at least four digits, then an
# optional one- or two-digit month and day, then anything after a space or a 'T' (a time).
_SPARK_DATE = re.compile(r"^([+-]?\d{4,})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?$", re.DOTALL)


def parse_date(text: str) -> float:
    """A date string as Spark casts it to a DATE (``'2002-3-01'`` and ``'2002-03'`` included);
    :class:`NotConstant` for what Spark would not read as a date."""
    match = _SPARK_DATE.match(text.strip())
    if match is None:
        raise NotConstant(text)
    year, month, day = (int(part) if part else 1 for part in match.groups())
    try:
        return encode_date(dt.date(year, month, day))
    except ValueError:
        raise NotConstant(text) from None


def parse_timestamp(text: str) -> float:
    try:
        return encode_timestamp(dt.datetime.fromisoformat(text.strip().replace(" ", "T", 1)))
    except ValueError:
        raise NotConstant(text) from None


def _type_kind(data_type: exp.DataType) -> Kind:
    from tempura.stats.model import kind_of

    return kind_of(data_type.sql(dialect="spark"))


def constant(expression: exp.Expr) -> tuple[Value, Kind | None]:
    """The value of a constant expression and the domain its type implies (``None`` when the
    literal carries no type: a bare number or string). Raises :class:`NotConstant`."""
    node = expression
    if node.find(exp.Column) is not None or node.find(exp.Subquery) is not None:
        raise NotConstant(node.sql(dialect="spark"))
    if not isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
        try:
            node = simplify(node.copy())
        except (SqlglotError, ValueError, TypeError, ArithmeticError):
            raise NotConstant(node.sql(dialect="spark")) from None
    return _read(node)


def _read(node: exp.Expr) -> tuple[Value, Kind | None]:
    if isinstance(node, exp.Paren):
        return _read(node.this)
    if isinstance(node, exp.Null):
        return None, None
    if isinstance(node, exp.Boolean):
        return bool(node.this), "boolean"
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this), None
        return encode(node.this, "number"), "number"
    if isinstance(node, exp.Neg):
        value, kind = _read(node.this)
        if isinstance(value, float):
            return -value, kind
        raise NotConstant(node.sql(dialect="spark"))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        value, _ = _read(node.this)
        kind = _type_kind(node.to)
        if value is None:
            return None, kind
        if kind in ("number", "date", "timestamp"):
            return encode(value, kind), kind
        if kind == "string":
            return str(value) if not isinstance(value, float) else _number_text(value), kind
        return value, kind
    raise NotConstant(node.sql(dialect="spark"))


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def coerce(value: Value, kind: Kind) -> Value:
    """``value`` (from :func:`constant`) compared against a column of domain ``kind``, as Spark
    would coerce it: a string literal compared with a date column is a date, and so on."""
    if value is None or isinstance(value, bool):
        return value
    if kind in ("number", "date", "timestamp"):
        if isinstance(value, float):
            return value
        return encode(value, kind)
    if kind == "string" and isinstance(value, float):
        return _number_text(value)
    return value
