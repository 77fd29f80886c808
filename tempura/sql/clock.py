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


_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


@dataclass(frozen=True)
class NowWindow:
    """A window relative to now in a query: the rows of ``table`` whose ``column`` is within
    ``length`` of the clock, and the query without that condition (``sql``, in its dialect)."""

    table: str
    column: str
    length: dt.timedelta
    sql: str
    line: int | None = None
    position: int | None = None

    def describe(self) -> str:
        return f"the window {self.table}.{self.column} > now() - INTERVAL …"


def _interval(node: exp.Expr) -> dt.timedelta | None:
    """A fixed-length ``INTERVAL`` literal (seconds to weeks) as a duration; months and years,
    whose length varies, are not."""
    if not isinstance(node, exp.Interval):
        return None
    value, unit = node.this, node.args.get("unit")
    text = value.this if isinstance(value, exp.Literal) else None
    if text is None:
        return None
    words = str(text).split()
    if unit is None and len(words) == 2:  # INTERVAL '2 hours'
        text, name = words
    elif unit is not None and len(words) == 1:
        name = unit.name
    else:
        return None
    seconds = _SECONDS.get(name.lower().rstrip("s"))
    try:
        amount = float(text)
    except ValueError:
        return None
    return dt.timedelta(seconds=amount * seconds) if seconds is not None and amount > 0 else None


def _is_now(node: exp.Expr) -> bool:
    return is_clock(node) and _name(node) in ("now", "current_timestamp")


def now_window(sql: str, dialect: str, arrival: dict[str, str]) -> NowWindow | None:
    """The query's window relative to now, if it is one a range query keeps: a single ``SELECT``
    over one table (``arrival`` maps each table to its arrival column) whose ``WHERE`` has a
    conjunct ``column > now() - INTERVAL …`` (or ``now() - INTERVAL … < column``) over that
    table's arrival column, a fixed length, and no other reading of the clock. ``None``
    otherwise (such a query is recomputed at every time point)."""
    try:
        tree = parse_sql(sql, dialect).copy()
    except Exception:  # a query that does not parse: loading it says so
        return None
    if not isinstance(tree, exp.Select) or len(list(tree.find_all(exp.Select))) != 1 or tree.args.get("joins"):
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    where = tree.args.get("where")
    if not isinstance(table, exp.Table) or where is None:
        return None
    name = table.name.lower()
    column = arrival.get(name)
    if column is None:
        return None
    names = {name, table.alias_or_name.lower()}
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    found: list[tuple[exp.Expr, dt.timedelta]] = []
    for condition in conjuncts:
        if isinstance(condition, exp.GT):
            side, bound = condition.this, condition.expression
        elif isinstance(condition, exp.LT):
            side, bound = condition.expression, condition.this
        else:
            continue
        if not (isinstance(side, exp.Column) and side.name.lower() == column.lower()
                and (not side.table or side.table.lower() in names)):
            continue
        if isinstance(bound, exp.Sub) and _is_now(bound.this) and (length := _interval(bound.expression)) is not None:
            found.append((condition, length))
    if len(found) != 1:
        return None
    condition, length = found[0]
    inside = {id(n) for n in condition.walk()}
    if any(is_clock(n) and id(n) not in inside for n in tree.walk()):
        return None
    line, position = position_of(condition, sql)
    rest = [c for c in conjuncts if c is not condition]
    tree.set("where", exp.Where(this=exp.and_(*rest)) if rest else None)
    return NowWindow(name, column, length, tree.sql(dialect=dialect), line, position)
