"""Time and chance in a standing query: what ``now()`` means, and what cannot be maintained.

In a standing query, ``current_timestamp()``, ``now()``, ``current_date()`` and
``localtimestamp()`` mean the time point being computed, as Materialize's ``mz_now()`` does: the
result at ``t_i`` is ``spark.sql(query)`` with the clock at ``t_i``, whenever the run happens, so
a result can be computed again and come out the same. :func:`at_time` puts a time point's value
in their place; :func:`time_calls` finds them.

Functions whose value is chance (``rand()``, ``uuid()``, ``shuffle()``, ...) or depends on how
Spark splits the work (``monotonically_increasing_id()``, ``input_file_name()``) have no result
to maintain: :func:`chance_calls` finds them, for the planner to refuse them or, where the spec
asks, to recompute them.

A call of a function sqlglot does not know, and that is none of those, is for Spark to know or
not: :func:`unknown_calls` finds them, for ``validate`` to ask Spark about.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlglot import exp

from tempura.sql.parse import parse_sql, position_of

_CLOCK = (exp.CurrentTimestamp, exp.CurrentDate, exp.Localtimestamp)
_CLOCK_NAMES = {"now", "current_timestamp", "current_date", "curdate", "localtimestamp"}
_CHANCE = (exp.Rand, exp.Randn, exp.Uuid, exp.Shuffle)
_CHANCE_NAMES = {"monotonically_increasing_id", "spark_partition_id", "input_file_name", "input_file_block_start",
                 "input_file_block_length", "uniform", "randstr", "reflect", "java_method", "try_reflect", "rand",
                 "randn", "random", "uuid", "shuffle"}


@dataclass(frozen=True)
class Call:
    """A function call found in the query: its name as written, and where it starts."""

    name: str
    line: int | None
    column: int | None

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.column} of the query)" if self.line is not None else ""
        return f"{self.name}(){where}"


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    names: dict[type[exp.Expr], str] = {
        exp.CurrentTimestamp: "current_timestamp", exp.CurrentDate: "current_date",
        exp.Localtimestamp: "localtimestamp", exp.Rand: "rand", exp.Randn: "randn", exp.Uuid: "uuid",
        exp.Shuffle: "shuffle"}
    return names.get(type(node), node.key)


def is_clock(node: exp.Expr) -> bool:
    """Whether ``node`` reads the clock."""
    return isinstance(node, _CLOCK) or (isinstance(node, exp.Anonymous) and str(node.this).lower() in _CLOCK_NAMES)


def is_chance(node: exp.Expr) -> bool:
    """Whether ``node``'s value is chance, or depends on how Spark splits the work."""
    return isinstance(node, _CHANCE) or (isinstance(node, exp.Anonymous) and str(node.this).lower() in _CHANCE_NAMES)


def _calls(sql: str, dialect: str, test: object) -> list[Call]:
    tree = parse_sql(sql, dialect)
    found = []
    for node in tree.walk():
        if test(node):  # type: ignore[operator]
            line, column = position_of(node, sql)
            found.append(Call(_name(node), line, column))
    return sorted(found, key=lambda c: (c.line or 0, c.column or 0))


def time_calls(sql: str, dialect: str = "spark") -> list[Call]:
    """The calls of ``sql`` that read the clock, in the order they are written."""
    return _calls(sql, dialect, is_clock)


def chance_calls(sql: str, dialect: str = "spark") -> list[Call]:
    """The calls of ``sql`` whose value is chance, in the order they are written."""
    return _calls(sql, dialect, is_chance)


def is_unknown(node: exp.Expr) -> bool:
    """Whether ``node`` calls a function sqlglot does not know (:class:`exp.Anonymous`) and that
    is not one of the clock's or chance's, which Spark has built in."""
    return isinstance(node, exp.Anonymous) and str(node.this).lower() not in _CLOCK_NAMES | _CHANCE_NAMES


def unknown_calls(sql: str, dialect: str = "spark") -> list[Call]:
    """The calls of ``sql`` of functions sqlglot does not know (:func:`is_unknown`), in the order
    they are written, each named as written with its database (``db.f``) where it has one: only
    Spark can say whether each exists (built in, or registered)."""
    tree = parse_sql(sql, dialect)
    qualified = {id(node.expression): f"{node.this.sql(dialect=dialect)}.{_name(node.expression)}"
                 for node in tree.find_all(exp.Dot) if isinstance(node.expression, exp.Anonymous)}
    out = []
    for node in tree.walk():
        if is_unknown(node):
            line, column = position_of(node.parent if id(node) in qualified else node, sql)
            out.append(Call(qualified.get(id(node), _name(node)), line, column))
    return sorted(out, key=lambda c: (c.line or 0, c.column or 0))


def reads_clock(expression: exp.Expr) -> bool:
    """Whether a bound expression reads the clock."""
    return any(is_clock(n) for n in expression.walk())


def at_time(expression: exp.Expr, now: dt.datetime) -> exp.Expr:
    """``expression`` with the clock stopped at ``now``: ``current_timestamp()`` and ``now()`` are
    the timestamp ``now``, ``localtimestamp()`` the same wall time without a zone, and
    ``current_date()`` its date (a copy; ``expression`` is left as it is)."""
    stamp = now.isoformat(sep=" ")

    def stop(node: exp.Expr) -> exp.Expr:
        if not is_clock(node):
            return node
        name = _name(node)
        if name in ("current_date", "curdate"):
            return exp.cast(exp.Literal.string(now.date().isoformat()), exp.DataType.build("date"))
        if name == "localtimestamp":
            return exp.cast(exp.Literal.string(stamp), exp.DataType.build("timestamp_ntz", dialect="spark"))
        return exp.cast(exp.Literal.string(stamp), exp.DataType.build("timestamp", dialect="spark"))

    return expression.copy().transform(stop)


def sql_at_time(sql: str, dialect: str, now: dt.datetime) -> str:
    """``sql`` as Spark SQL with the clock stopped at ``now`` (what the result at that time point
    is by definition: :func:`at_time`)."""
    tree = parse_sql(sql, dialect)
    return at_time(tree, now).sql(dialect="spark")
