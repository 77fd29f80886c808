"""Proven facts about what a plan reads: arrival bounds, column ranges and empty groups.

A source that arrives by a column the query can see (``arrival: {column: c}``, an insert-only
source) gives every read of it a fact, not an estimate, because the landing puts a row in the
interval its arrival value falls in (:mod:`tempura.runtime.ingest`):

- every row of ``SS[v]`` and of ``SD[u,v]`` has ``t_0 < c <= t_v`` (``t_0``: the cycle's origin;
  rows arriving at or before it belong to an earlier cycle);
- every row of ``SD[u,v]`` has ``c > t_u`` as well when rows arrive on time: under ``late: reject``
  and outside a range query's window (under ``late: next`` a late row lands in a later interval
  with its own, earlier, arrival value; a window's leaving rows are deletions of old rows).

:class:`ArrivalBounds` states these facts per read; this module knows nothing of the memo. The
estimator (:mod:`tempura.infer.estimate`) narrows the arrival column's distribution to them (a
read of the last interval holds no early dates), and the prover (:mod:`tempura.infer.prover`)
carries them up through the memo, with the ranges that filters add, to prove groups empty: a
filter ``o_orderdate < '1995-03-15'`` over the orders that arrived in ``(1997-05-03, 1999-02-12]``
selects nothing, so the join of that delta with a whole snapshot of line items is empty too. The
search implements a proven-empty group as an empty relation at no cost, which is exact whatever
the statistics say. Facts are about non-null values (a NULL fails every comparison), so they
hold on the padded side of an outer join too.

*Keys that arrive together.* A source may declare a key (``key: o_orderkey``: each value lands
once in a cycle) and another source may declare that its rows land with the row they reference
(``arrival: {with: {orders: l_orderkey}}``: a line item lands in the interval its order lands
in). Then a read over the intervals ``(u, v]`` holds, in the key column and in the referencing
column, only keys that landed in ``(u, v]``: a *key span* of the key's domain. Spans are carried
up like ranges, and a join equating two columns of one domain meets their spans; when they do
not overlap the join is empty. So the term ``ΔL ⋈ O_{v-1}`` of a join's delta is proven empty,
and of ``Δ(O ⋈ L)`` only ``ΔO ⋈ ΔL`` is left to compute (``tvr-delta-join-keyed``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, TypeVar

from sqlglot import exp

from tempura.algebra import (
    Scan,
    column_name,
    conjuncts,
)
from tempura.stats.model import Kind, kind_of
from tempura.stats.values import NotConstant, coerce, constant, encode_date, encode_timestamp
from tempura.tvr.operators import SourceRead
from tempura.tvr.time import TimeValue


@dataclass(frozen=True)
class Interval:
    """The values a column's non-null values lie in, on the statistics' number line (numbers,
    dates as days, timestamps as seconds); a ``None`` end is unbounded."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    @property
    def empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        return self.low > self.high or (self.low == self.high and (self.low_open or self.high_open))

    def meet(self, other: Interval) -> Interval:
        """Both at once (the intersection)."""
        low, low_open = _end(self.low, self.low_open, other.low, other.low_open, larger=True, narrow=True)
        high, high_open = _end(self.high, self.high_open, other.high, other.high_open, larger=False, narrow=True)
        return Interval(low, high, low_open, high_open)

    def join(self, other: Interval) -> Interval:
        """Either (the hull of the union)."""
        low, low_open = _end(self.low, self.low_open, other.low, other.low_open, larger=False, narrow=False)
        high, high_open = _end(self.high, self.high_open, other.high, other.high_open, larger=True, narrow=False)
        return Interval(low, high, low_open, high_open)


def _end(a: float | None, a_open: bool, b: float | None, b_open: bool, larger: bool, narrow: bool) -> tuple[float | None, bool]:
    """One end of a meet (``narrow``: an unbounded end yields to a bound one) or of a hull (an
    unbounded end wins): the ``larger`` or smaller value; at a tie a meet is open if either end
    is, a hull only if both are."""
    if a is None or b is None:
        if not narrow:
            return None, False
        return (b, b_open) if a is None else (a, a_open)
    if a == b:
        return a, (a_open or b_open) if narrow else (a_open and b_open)
    chosen = max(a, b) if larger else min(a, b)
    return chosen, a_open if chosen == a else b_open


Facts = dict[str, Interval]
"""Proven ranges of a relation's columns, by column name."""

Keys = dict[tuple[str, str], Interval]
"""Proven key spans: ``(column, domain) -> the intervals (as indices, ``(u, v]``) in which every
non-null value of the column landed as a key of the domain (``"orders.o_orderkey"``)."""

_ANY_SPAN = Interval()


def equated(condition: exp.Expr | None, null_safe: bool = False) -> list[tuple[str, str]]:
    """The pairs of columns ``condition``'s conjuncts equate (``a = b``; ``a <=> b`` instead when
    ``null_safe``: equal, or both NULL)."""
    if condition is None:
        return []
    pairs = []
    for part in conjuncts(condition):
        node = part.unnest()
        if isinstance(node, exp.NullSafeEQ if null_safe else exp.EQ):
            left, right = column_name(node.this), column_name(node.expression)
            if left is not None and right is not None:
                pairs.append((left, right))
    return pairs


def equate_keys(keys: Keys, pairs: Iterable[tuple[str, str]]) -> Keys:
    """``keys`` once each equated pair of columns shares its spans: a value in both columns
    landed where both say, for each domain both columns have."""
    out = dict(keys)
    for a, b in pairs:
        for domain in {d for c, d in out if c == a} & {d for c, d in out if c == b}:
            span = out[(a, domain)].meet(out[(b, domain)])
            out[(a, domain)] = out[(b, domain)] = span
    return out


K = TypeVar("K")


def rejects_null(condition: exp.Expr) -> set[str]:
    """The columns a row passing ``condition`` holds a value in: those a conjunct compares with
    ``=`` and those it tests with ``IS NOT NULL``."""
    out = {c for pair in equated(condition) for c in pair}
    for part in conjuncts(condition):
        node = part.unnest()
        tested = node.this.unnest() if isinstance(node, exp.Not) else None
        if isinstance(tested, exp.Is) and isinstance(tested.expression, exp.Null):
            name = column_name(tested.this)
            if name is not None:
                out.add(name)
    return out


def hull(a: Mapping[K, Interval], b: Mapping[K, Interval]) -> dict[K, Interval]:
    """Either set of facts: the hull of the intervals of a name both have (the rows of a merge of
    two relations by name)."""
    return {name: interval.join(b[name]) for name, interval in a.items() if name in b}


def meet(a: Mapping[K, Interval], b: Mapping[K, Interval]) -> dict[K, Interval]:
    """Both sets of facts at once: the intervals of a name both have are met."""
    out = dict(a)
    for name, interval in b.items():
        out[name] = out[name].meet(interval) if name in out else interval
    return out


def encode_time(value: TimeValue, kind: Kind) -> float | None:
    """A time point on the number line of a column of domain ``kind``, or ``None`` when the
    two do not compare simply. A date column against a timestamp time point compares at the
    date's midnight, so ``c <= t`` and ``c > t`` both hold exactly as of ``t``'s date."""
    if kind == "date" and isinstance(value, dt.date):
        day = value.date() if isinstance(value, dt.datetime) else value
        return encode_date(day)
    if kind == "timestamp" and isinstance(value, dt.datetime):
        return encode_timestamp(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


@dataclass(frozen=True)
class SourceBound:
    """One source's arrival column (as the source names it), the cycle's time points ``t_1..t_k``
    and origin ``t_0`` (``None``: no earlier data is excluded; every landed row arrived after
    it), and whether a delta's rows all arrived after its start (on time: ``late: reject``, no
    window, insert-only)."""

    column: str
    values: tuple[TimeValue, ...]
    origin: TimeValue | None = None
    on_time: bool = True

    def point(self, index: int) -> TimeValue | None:
        """``t_index``; ``t_0`` is the origin."""
        return self.values[index - 1] if index >= 1 else self.origin


Lag = dt.timedelta | int | float
"""How long after the row it references a row may land (``arrival.within``): a duration, or a
number on integer time points."""


@dataclass(frozen=True)
class KeyRule:
    """One declared key: its domain (``"orders.o_orderkey"``), the source and column holding it,
    and the columns of other sources that land with it, as ``(source, column)``; ``within``
    gives, for some of those, the most time after its key a row may land (``arrival.within``:
    with or after it, rather than in the same interval)."""

    domain: str
    source: str
    column: str
    referencing: tuple[tuple[str, str], ...] = ()
    within: tuple[tuple[tuple[str, str], Lag], ...] = ()

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """Every ``(source, column)`` holding keys of the domain: the key's own, then the rest."""
        return ((self.source, self.column), *self.referencing)

    def lag(self, source: str, column: str) -> Lag | None:
        """How long after its key a row of ``source`` holding it in ``column`` may land (``None``:
        in the same interval)."""
        return next((lag for at, lag in self.within if at == (source, column)), None)


def reach(values: Sequence[TimeValue], origin: TimeValue | None, lag: Lag | None) -> tuple[int, ...]:
    """Per interval ``j`` (``1..k``), the largest ``i < j`` with ``t_i <= t_{j-1} - lag``
    (``t_0``: ``origin``; 0 when none is): a row landing in ``(t_{j-1}, t_j]`` at most ``lag``
    after the row it references, and not before it, references one that landed after
    ``t_{j-1} - lag``, so in an interval of ``(reach_j, j]``. Without a lag, ``j - 1``."""
    if lag is None:
        return tuple(range(len(values)))
    points: list[TimeValue | None] = [origin, *values]
    out = []
    for j in range(1, len(values) + 1):
        bound = minus(points[j - 1], lag)
        out.append(max((i for i in range(j) if bound is not None and at_or_before(points[i], bound)), default=0))
    return tuple(out)


def minus(value: TimeValue | None, lag: Lag) -> TimeValue | None:
    """``value - lag``, a date taken at its midnight; ``None`` when the two do not subtract."""
    if value is None:
        return None
    if isinstance(lag, dt.timedelta):
        if isinstance(value, dt.datetime):
            return value - lag
        if isinstance(value, dt.date):
            return dt.datetime.combine(value, dt.time()) - lag
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value - lag
    return None


def at_or_before(point: TimeValue | None, bound: TimeValue) -> bool:
    """Whether ``point`` is at or before ``bound`` (a date as its midnight beside a timestamp; no
    point is before every time; values that do not compare are not)."""
    if point is None:
        return True  # no origin: the cycle's first interval starts before any time
    if isinstance(bound, dt.datetime) and isinstance(point, dt.date) and not isinstance(point, dt.datetime):
        point = dt.datetime.combine(point, dt.time())
    if isinstance(point, dt.datetime) and isinstance(bound, dt.date) and not isinstance(bound, dt.datetime):
        bound = dt.datetime.combine(bound, dt.time())
    try:
        return bool(point <= bound)  # type: ignore[operator]
    except TypeError:
        return False


class ArrivalBounds:
    """The arrival facts of every source read (see the module docstring), the intervals known to
    have landed no rows (``empty``: source -> interval indices), whose reads are empty whatever
    the source's arrival, and the key domains of the sources' columns (``keys``: source ->
    column -> domain), for the sources whose keys land once and with the rows referencing them."""

    def __init__(self, sources: Mapping[str, SourceBound], empty: Mapping[str, Iterable[int]] | None = None,
                 keys: Mapping[str, Mapping[str, str]] | None = None,
                 expected_empty: Mapping[str, Iterable[int]] | None = None,
                 reach: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
                 lags: Mapping[tuple[str, str], tuple[str, str, Lag]] | None = None) -> None:
        self.sources = {name.lower(): bound for name, bound in sources.items()}
        self.landed_empty = {name.lower(): frozenset(found) for name, found in (empty or {}).items() if found}
        self.expected_empty = {name.lower(): frozenset(found) for name, found in (expected_empty or {}).items() if found}
        self.empty = {name: self.landed_empty.get(name, frozenset()) | self.expected_empty.get(name, frozenset())
                      for name in {*self.landed_empty, *self.expected_empty}}
        self.keys = {name.lower(): {c.lower(): d for c, d in columns.items()} for name, columns in (keys or {}).items()
                     if columns}
        # per source and key column landing within a lag of its key (``arrival.within``), the
        # interval before the first whose keys a row landing in interval j may hold, per j
        self.reach = {name.lower(): {c.lower(): tuple(r) for c, r in columns.items()} for name, columns in (reach or {}).items()
                      if columns}
        # per referencing (source, column) landing within a lag of its key: the key's source and
        # column, and the lag (``arrival.within``)
        self.lags = {(source.lower(), column.lower()): (owner.lower(), key.lower(), lag)
                     for (source, column), (owner, key, lag) in (lags or {}).items()}

    def __bool__(self) -> bool:
        return bool(self.sources) or bool(self.empty) or bool(self.keys)

    def read_keys(self, read: SourceRead | Scan) -> Keys:
        """The key spans of a read's columns: the intervals it covers (``(start, end]``; a
        snapshot's from 0); a template scan's are unbounded (every interval)."""
        table = read.table.lower() if isinstance(read, Scan) else read.scan.table.lower()
        columns = self.keys.get(table)
        if not columns:
            return {}
        if isinstance(read, Scan):  # a template scan: every interval
            return {(c.field.name, columns[c.source.lower()]): _ANY_SPAN for c in read.columns if c.source.lower() in columns}
        return {(c.field.name, columns[c.source.lower()]): self.span(table, c.source, read.start, read.end)
                for c in read.scan.columns if c.source.lower() in columns}

    def span(self, table: str, column: str, start: int, end: int) -> Interval:
        """The intervals in which the keys held by ``column`` of the rows of ``table`` landed in
        ``(start, end]`` landed: the same intervals, or from further back for a column landing
        within a lag of its key."""
        reach = self.reach.get(table.lower(), {}).get(column.lower())
        low = reach[start] if reach is not None and start < len(reach) else start
        return Interval(float(low), float(end), low_open=True)

    def landing(self, table: str, column: str, start: int, end: int, keys: Interval) -> tuple[int, int] | None:
        """The narrowest intervals ``(s, e]`` within ``(start, end]`` whose rows of ``table`` may
        hold in ``column`` a key that landed in ``keys``; ``None`` when no interval may (rows of
        interval ``j`` hold keys landed in ``(reach_j, j]``, both ends growing with ``j``)."""
        found = [j for j in range(start + 1, end + 1) if not self.span(table, column, j - 1, j).meet(keys).empty]
        return (found[0] - 1, found[-1]) if found else None

    def read_empty(self, read: SourceRead, landed: bool = False) -> bool:
        """Whether every interval ``read`` covers landed no rows, or is declared to land none and
        has not landed yet (``landed``: landed no rows, counting no declaration)."""
        empty = (self.landed_empty if landed else self.empty).get(read.scan.table.lower())
        if not empty or read.end < 1:
            return False
        first = read.start + 1
        return all(i in empty for i in range(first, read.end + 1))

    def fact(self, read: SourceRead) -> tuple[str, Interval] | None:
        """The column (as the plan names it) and range every row of ``read`` has, if any."""
        bound = self.sources.get(read.scan.table.lower())
        if bound is None or read.end < 1 or read.end > len(bound.values):
            return None
        column = next((c for c in read.scan.columns if c.source.lower() == bound.column.lower()), None)
        if column is None:
            return None  # the query does not read the arrival column
        kind = kind_of(column.field.type)
        high = encode_time(bound.values[read.end - 1], kind)
        if high is None:
            return None
        start = bound.origin
        if bound.on_time and read.start >= 1:
            start = bound.values[read.start - 1]
        low = None if start is None else encode_time(start, kind)
        return column.field.name, Interval(low, high, low_open=True)

    def predicate(self, read: SourceRead) -> tuple[str, exp.Expr] | None:
        """The fact of ``read`` as its column and a SQL condition over it (for the estimator)."""
        found = self.fact(read)
        if found is None:
            return None
        name, interval = found
        column = exp.column(name)
        kind = kind_of(read.scan.schema.field(name).type)
        condition: exp.Expr = exp.LTE(this=column, expression=_literal(interval.high, kind))
        if interval.low is not None:
            condition = exp.and_(exp.GT(this=column.copy(), expression=_literal(interval.low, kind)), condition)
        return name, condition


def _literal(value: float | None, kind: Kind) -> exp.Expr:
    assert value is not None
    if kind == "date":
        day = dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
        return exp.cast(exp.Literal.string(day.isoformat()), "date")
    if kind == "timestamp":
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=value)
        return exp.cast(exp.Literal.string(moment.isoformat(sep=" ")), "timestamp")
    return exp.Literal.number(value if not float(value).is_integer() else int(value))


_FLIPPED: dict[type[exp.Expr], type[exp.Expr]] = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE,
                                                 exp.EQ: exp.EQ}


def predicate_facts(condition: exp.Expr, kinds: Mapping[str, Kind]) -> Facts:
    """The ranges a row passing ``condition`` has: from its conjuncts that compare a column with a
    constant (``<``, ``<=``, ``>``, ``>=``, ``=``, ``BETWEEN``, ``IN`` of constants)."""
    facts: Facts = {}
    for part in conjuncts(condition):
        found = _conjunct_fact(part.unnest(), kinds)
        if found is not None:
            facts = meet(facts, {found[0]: found[1]})
    return facts


def _value(node: exp.Expr, kind: Kind) -> float | None:
    try:
        raw, _ = constant(node)
        value = coerce(raw, kind)
    except NotConstant:
        return None
    return value if isinstance(value, float) and not isinstance(value, bool) else None


def _column(node: exp.Expr, kinds: Mapping[str, Kind]) -> str | None:
    """The column ``node`` reads as is: a bare column, or one cast to its own date or timestamp
    domain (``CAST(o_orderdate AS DATE)``), which changes no value."""
    while isinstance(node, exp.Cast):
        inner = column_name(node.this)
        target = kind_of(node.to.sql(dialect="spark"))
        if inner is not None and target in ("date", "timestamp") and kinds.get(inner) == target:
            return inner
        if not isinstance(node.this, exp.Cast):
            return None
        node = node.this
    return column_name(node)


def _conjunct_fact(node: exp.Expr, kinds: Mapping[str, Kind]) -> tuple[str, Interval] | None:
    if isinstance(node, exp.Between):
        name = _column(node.this, kinds)
        kind = kinds.get(name or "")
        if name is None or kind not in ("number", "date", "timestamp"):
            return None
        low, high = _value(node.args["low"], kind), _value(node.args["high"], kind)
        return None if low is None or high is None else (name, Interval(low, high))
    if isinstance(node, exp.In) and not node.args.get("query"):
        name = _column(node.this, kinds)
        kind = kinds.get(name or "")
        if name is None or kind not in ("number", "date", "timestamp") or not node.expressions:
            return None
        values = [_value(v, kind) for v in node.expressions]
        if any(v is None for v in values):
            return None
        known = [v for v in values if v is not None]
        return name, Interval(min(known), max(known))
    op = type(node)
    if op not in _FLIPPED:
        return None
    assert isinstance(node, exp.Binary)
    left, right = node.this, node.expression
    name = _column(left, kinds)
    if name is None:
        name, right, op = _column(right, kinds), left, _FLIPPED[op]
    kind = kinds.get(name or "")
    if name is None or kind not in ("number", "date", "timestamp"):
        return None
    value = _value(right, kind)
    if value is None:
        return None
    if op is exp.EQ:
        return name, Interval(value, value)
    if op in (exp.LT, exp.LTE):
        return name, Interval(None, value, high_open=op is exp.LT)
    return name, Interval(value, None, low_open=op is exp.GT)


__all__ = ["ArrivalBounds", "Facts", "Interval", "KeyRule", "Keys", "SourceBound", "at_or_before", "encode_time", "equated", "minus", "predicate_facts"]
