"""The arrival model: when each source's rows arrive within a cycle, and how many are deletions.

For every source the model holds the share of the source's *cycle rows* that arrives in each
interval. The cycle rows are the rows (change records, for a source with deletions) whose
arrival is at or before the last time point ``t_k``. Interval ``i`` is ``(t_{i-1}, t_i]``, and
interval 1 is everything up to ``t_1``, because version 0 is empty (``docs/SEMANTICS.md``). The
shares of one source sum to 1, so ``SD[i,j]`` of a base table holds about
``fraction(source, i, j)`` of the rows of its snapshot ``SS[k]``.

The model also holds, per interval, the share of those rows that are deletions. It is ``None``
when a source may delete but nobody knows how often (a spec that declares change data and an
expected arrival, but no measurement). Such a source is never treated as insert-only.

A model comes from the spec's ``expected`` key (:meth:`SourceArrival.from_fractions`,
:meth:`SourceArrival.from_counts`) or from the data's arrival-column statistics
(:func:`measure`, one Spark aggregate per source). Models are immutable values.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from tempura.errors import TempuraError
from tempura.sql.names import quote_identifier
from tempura.tvr.time import TimePoints, TimeValue

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# Shares are floats computed from counts or typed by people; a sum within this of 1 is 1.
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SourceArrival:
    """How one source's cycle rows spread over the intervals ``1..k``.

    - ``fractions[i-1]``: share of the cycle rows arriving in interval ``i`` (they sum to 1);
    - ``deletions[i-1]``: share of interval ``i``'s rows that are deletions; ``None`` when the
      source may delete but the share is unknown;
    - ``rows[i-1]``: the counted rows of interval ``i``, when the model was counted.
    """

    fractions: tuple[float, ...]
    deletions: tuple[float, ...] | None
    rows: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.fractions:
            raise TempuraError("an arrival model needs at least one interval")
        if any(not math.isfinite(f) or f < 0 for f in self.fractions):
            raise TempuraError(f"arrival fractions must be finite and non-negative: {list(self.fractions)}")
        if abs(math.fsum(self.fractions) - 1.0) > _TOLERANCE:
            raise TempuraError(f"arrival fractions of the cycle must sum to 1: {list(self.fractions)}")
        if self.deletions is not None:
            self._check_length("deletion shares", self.deletions)
            if any(not 0.0 <= d <= 1.0 for d in self.deletions):
                raise TempuraError(f"deletion shares must lie in [0, 1]: {list(self.deletions)}")
        if self.rows is not None:
            self._check_length("row counts", self.rows)
            if any(r < 0 for r in self.rows):
                raise TempuraError(f"row counts must not be negative: {list(self.rows)}")

    def _check_length(self, what: str, values: Sequence[object]) -> None:
        if len(values) != len(self.fractions):
            raise TempuraError(f"{len(values)} {what} for {len(self.fractions)} intervals")

    @property
    def k(self) -> int:
        """How many intervals (time points) the model covers."""
        return len(self.fractions)

    @classmethod
    def uniform(cls, k: int) -> SourceArrival:
        """Equal shares in every interval, no deletions."""
        if k < 1:
            raise TempuraError(f"an arrival model needs at least one interval, not {k}")
        return cls(tuple(1.0 / k for _ in range(k)), (0.0,) * k)

    @classmethod
    def from_fractions(cls, fractions: Sequence[float], deletes: bool | Sequence[float] = False) -> SourceArrival:
        """From the share of *all* the source's rows arriving in each interval.

        The shares may sum to less than 1 (the rest arrives after ``t_k``); they are scaled to
        the cycle. ``deletes`` is ``False`` (insert-only), ``True`` (deletions of unknown share)
        or the share of deletions per interval.
        """
        if not fractions:
            raise TempuraError("an arrival model needs at least one interval")
        total = math.fsum(fractions)
        if any(not math.isfinite(f) or f < 0 for f in fractions):
            raise TempuraError(f"arrival fractions must be finite and non-negative: {list(fractions)}")
        if total > 1.0 + _TOLERANCE:
            raise TempuraError(f"arrival fractions sum to {total:g}, more than 1: {list(fractions)}")
        if total <= 0.0:
            raise TempuraError(f"arrival fractions must not all be 0: {list(fractions)}")
        scaled = tuple(f / total for f in fractions)
        return cls(scaled, _deletion_shares(deletes, len(fractions)))

    @classmethod
    def from_counts(cls, rows: Sequence[int], deletes: Sequence[int] | None = None) -> SourceArrival:
        """From counted rows per interval and, optionally, how many of them are deletions.

        A source with no rows in the cycle gets equal shares: no data says otherwise.
        """
        counts = tuple(int(r) for r in rows)
        deleted = tuple(int(d) for d in deletes) if deletes is not None else (0,) * len(counts)
        if len(deleted) != len(counts):
            raise TempuraError(f"{len(deleted)} deletion counts for {len(counts)} intervals")
        if any(r < 0 for r in counts) or any(d < 0 for d in deleted):
            raise TempuraError(f"row counts must not be negative: {list(counts)}, {list(deleted)}")
        if any(d > r for d, r in zip(deleted, counts)):
            raise TempuraError(f"more deletions than rows in an interval: {list(deleted)} of {list(counts)}")
        total = sum(counts)
        if total == 0:
            return cls(SourceArrival.uniform(len(counts)).fractions, (0.0,) * len(counts), counts)
        fractions = tuple(r / total for r in counts)
        shares = tuple(d / r if r else 0.0 for d, r in zip(deleted, counts))
        return cls(fractions, shares, counts)

    def fraction(self, start: int, end: int) -> float:
        """Share of the cycle rows in versions ``(start, end]``: intervals ``start+1..end``."""
        _check_versions(start, end, self.k)
        if start == 0 and end == self.k:
            return 1.0
        if self.rows is not None and sum(self.rows) > 0:
            return sum(self.rows[start:end]) / sum(self.rows)
        return min(1.0, math.fsum(self.fractions[start:end]))

    def deletion_fraction(self, start: int, end: int) -> float | None:
        """Share of the rows in versions ``(start, end]`` that are deletions (``None``: unknown)."""
        _check_versions(start, end, self.k)
        if self.deletions is None:
            return None
        arriving = math.fsum(self.fractions[start:end])
        if arriving == 0.0:
            return 0.0
        deleted = math.fsum(f * d for f, d in zip(self.fractions[start:end], self.deletions[start:end]))
        return min(1.0, deleted / arriving)

    @property
    def insert_only(self) -> bool:
        """Whether the source is known to deliver no deletions in this cycle."""
        return self.deletions is not None and all(d == 0.0 for d in self.deletions)

    def to_json(self) -> dict[str, Any]:
        return {
            "fractions": list(self.fractions),
            "deletions": list(self.deletions) if self.deletions is not None else None,
            "rows": list(self.rows) if self.rows is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceArrival:
        deletions = data.get("deletions")
        rows = data.get("rows")
        return cls(
            tuple(float(f) for f in data["fractions"]),
            tuple(float(d) for d in deletions) if deletions is not None else None,
            tuple(int(r) for r in rows) if rows is not None else None,
        )


def _deletion_shares(deletes: bool | Sequence[float], k: int) -> tuple[float, ...] | None:
    if deletes is True:
        return None
    if deletes is False:
        return (0.0,) * k
    return tuple(float(d) for d in deletes)


def _check_versions(start: int, end: int, k: int) -> None:
    if not 0 <= start <= end <= k:
        raise TempuraError(f"versions ({start}, {end}] are not within the cycle's versions 0..{k}")


@dataclass(frozen=True, init=False)
class ArrivalModel:
    """The arrival of every source of a standing query over one cycle of ``k`` time points.

    Source names are case-insensitive (stored lower-case, as the catalog stores table names).
    """

    k: int
    arrivals: tuple[tuple[str, SourceArrival], ...]

    def __init__(
        self, k: int, arrivals: Mapping[str, SourceArrival] | Iterable[tuple[str, SourceArrival]] = ()
    ) -> None:
        items = list(arrivals.items()) if isinstance(arrivals, Mapping) else list(arrivals)
        if k < 1:
            raise TempuraError(f"an arrival model needs at least one time point, not {k}")
        by_name: dict[str, SourceArrival] = {}
        for name, arrival in items:
            key = name.lower()
            if key in by_name:
                raise TempuraError(f"source '{name}' appears twice in the arrival model")
            if arrival.k != k:
                raise TempuraError(f"source '{name}': arrival over {arrival.k} intervals, the cycle has {k}")
            by_name[key] = arrival
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "arrivals", tuple(sorted(by_name.items())))

    @classmethod
    def uniform(cls, sources: Iterable[str], k: int) -> ArrivalModel:
        """Every source's rows spread evenly over the ``k`` intervals, without deletions."""
        return cls(k, [(name, SourceArrival.uniform(k)) for name in sources])

    @classmethod
    def from_fractions(
        cls, fractions: Mapping[str, Sequence[float]], deletes: Mapping[str, bool | Sequence[float]] | None = None
    ) -> ArrivalModel:
        """One :meth:`SourceArrival.from_fractions` per source; all lists have the same length."""
        deletes = deletes or {}
        arrivals = {name: SourceArrival.from_fractions(f, deletes.get(name, False)) for name, f in fractions.items()}
        return cls(_common_k(arrivals), arrivals)

    @classmethod
    def from_counts(
        cls, rows: Mapping[str, Sequence[int]], deletes: Mapping[str, Sequence[int]] | None = None
    ) -> ArrivalModel:
        """One :meth:`SourceArrival.from_counts` per source; all lists have the same length."""
        deletes = deletes or {}
        arrivals = {name: SourceArrival.from_counts(r, deletes.get(name)) for name, r in rows.items()}
        return cls(_common_k(arrivals), arrivals)

    @property
    def sources(self) -> tuple[str, ...]:
        """The (lower-case) names of the sources the model covers."""
        return tuple(name for name, _ in self.arrivals)

    def __contains__(self, source: object) -> bool:
        return isinstance(source, str) and source.lower() in self.sources

    def source(self, name: str) -> SourceArrival:
        """The arrival of source ``name``; an unknown source is an error, never a guess."""
        key = name.lower()
        for source, arrival in self.arrivals:
            if source == key:
                return arrival
        known = ", ".join(self.sources) or "none"
        raise TempuraError(f"no arrival model for source '{name}' (the model covers: {known})")

    def with_source(self, name: str, arrival: SourceArrival) -> ArrivalModel:
        """A copy in which source ``name`` arrives as ``arrival`` (added or replaced)."""
        others = [(source, a) for source, a in self.arrivals if source != name.lower()]
        return ArrivalModel(self.k, others + [(name, arrival)])

    def fraction(self, source: str, start: int, end: int) -> float:
        """Share of ``source``'s cycle rows in versions ``(start, end]``; ``(0, k]`` is 1."""
        return self.source(source).fraction(start, end)

    def deletion_fraction(self, source: str, start: int, end: int) -> float | None:
        """Share of ``source``'s rows in versions ``(start, end]`` that are deletions, if known."""
        return self.source(source).deletion_fraction(start, end)

    def insert_only(self, source: str) -> bool:
        """Whether ``source`` is known to deliver only insertions during the cycle."""
        return self.source(source).insert_only

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "sources": {name: arrival.to_json() for name, arrival in self.arrivals}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ArrivalModel:
        sources = data.get("sources", {})
        return cls(int(data["k"]), {name: SourceArrival.from_json(a) for name, a in sources.items()})


def _common_k(arrivals: Mapping[str, SourceArrival]) -> int:
    lengths = {a.k for a in arrivals.values()}
    if len(lengths) != 1:
        detail = ", ".join(f"{name}: {a.k}" for name, a in arrivals.items())
        raise TempuraError(f"sources need one entry per time point, and the counts differ ({detail or 'no sources'})")
    return lengths.pop()


def measure(
    spark: SparkSession,
    df: DataFrame,
    arrival_column: str,
    time_points: TimePoints,
    op_column: str | None = None,
    delete_values: Sequence[str] = ("D",),
) -> SourceArrival:
    """Count ``df``'s rows per interval, and its deletions, with one Spark aggregate query.

    A row falls in interval ``i`` when ``t_{i-1} < arrival <= t_i``; rows that arrive after
    ``t_k`` or have no arrival time are not part of the cycle. A row is a deletion when its
    ``op_column`` holds one of ``delete_values``; without ``op_column`` the source is insert-only.
    """
    from pyspark.sql import functions as F

    for column in (arrival_column, op_column):
        if column is not None and column.lower() not in {c.lower() for c in df.columns}:
            raise TempuraError(f"column '{column}' is not among the source's columns: {', '.join(df.columns)}")
    interval = _interval_case(F.col(quote_identifier(arrival_column)), time_points)
    if op_column is None:
        deleted = F.lit(0)
    else:
        is_delete = F.col(quote_identifier(op_column)).isin(list(delete_values))
        deleted = F.when(is_delete, 1).otherwise(0)
    counted = (
        df.select(interval.alias("_interval"), deleted.alias("_deleted"))
        .where(F.col("_interval").isNotNull())
        .groupBy("_interval")
        .agg(F.count(F.lit(1)).alias("_rows"), F.sum("_deleted").alias("_deletes"))
    )
    try:
        result = counted.collect()
    except Exception as exc:  # Spark raises analysis errors with long JVM traces
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TempuraError(f"cannot measure arrival on column '{arrival_column}': {first}") from None
    rows = [0] * time_points.k
    deletes = [0] * time_points.k
    for record in result:
        rows[record["_interval"] - 1] = int(record["_rows"])
        deletes[record["_interval"] - 1] = int(record["_deletes"] or 0)
    return SourceArrival.from_counts(rows, deletes)


def _interval_case(arrival: Column, time_points: TimePoints) -> Column:
    """``CASE WHEN arrival <= t_1 THEN 1 WHEN arrival <= t_2 THEN 2 … END`` (NULL after ``t_k``)."""
    from pyspark.sql import functions as F

    def arrived_by(index: int) -> Column:
        return arrival <= F.expr(sql_literal(time_points.value(index)))

    case = F.when(arrived_by(1), 1)
    for index in time_points.indices[1:]:
        case = case.when(arrived_by(index), index)
    return case


def sql_literal(value: TimeValue) -> str:
    """A time point as a Spark SQL literal, read in the session's time zone like the data.

    >>> sql_literal(dt.datetime(2026, 11, 22, 6))
    "TIMESTAMP '2026-11-22 06:00:00'"
    """
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TempuraError(f"a time point must be a timestamp, a date or a number, not {value!r}")
    return repr(value)
