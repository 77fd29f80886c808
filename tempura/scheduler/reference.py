"""The answer a standing query owes at a time point, computed the plain way: ``spark.sql``.

:func:`reference` registers each source *as of* ``t_i`` of a cycle under its own table name and
runs the spec's query text through Spark, so every result tempura delivers can be checked
against it. A source as of ``t_i`` is read from the source's own files, not from tempura's
landing:

- ``arrival: {column: c}``: the rows with ``t_0 < c <= t_i`` (``t_0``: the cycle's origin), or
  every row with ``c <= t_i`` for a source that keeps its history (``history: keep``); for a
  periodic range query, ``t_i - length < c <= t_i``;
- ``arrival: {by: file}``: every row of its files (a simulation's replay finds them all at
  ``t_1``);
- change data: insertions minus deletions, interval by interval, a deletion of an absent row
  removing nothing under ``deletes: lenient`` (:func:`tempura.runtime.sources.source_snapshot`).

The clock is at ``t_i`` too: ``current_timestamp()``, ``now()`` and ``current_date()`` are the time
point's time (:mod:`tempura.sql.clock`).

:class:`References` keeps each time point's reference rows once computed, for a caller that checks
several runs of one spec over sources that do not change meanwhile: a simulation delivering
changes (each time point's reference and the one before it), a benchmark's contenders, a test's
methods.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tempura.runtime.executor import spark_rows
from tempura.runtime.sources import SourceData, register_snapshots
from tempura.scheduler.spec import Cycle, Spec, lag_points, with_points
from tempura.sql.names import quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from tempura.tvr.time import TimeValue

_ALWAYS = "__present"


def as_of(spark: SparkSession, spec: Spec, cycle: Cycle, index: int) -> dict[str, SourceData]:
    """Every source of ``spec`` with the rows of ``cycle`` up to ``t_index``, as ``SourceData``."""
    from pyspark.sql import functions as F

    from tempura.runtime.sources import _time_literal

    catalog = spec.catalog()
    values = tuple(cycle.points.values)  # numbered as the runner numbers them
    window = spec.window
    out = {}
    for name, source in spec.sources.items():
        frame = catalog.tables[name].reader(spark)
        hidden: tuple[str, ...] = ()
        if source.arrival.column is None:
            frame = frame.withColumn(_ALWAYS, _time_literal(values[0]))
            arrival, hidden = _ALWAYS, (_ALWAYS,)
        else:
            arrival = source.arrival.column
            floor = values[index - 1] - window if window is not None else spec.origin(name, cycle)  # type: ignore[operator]
            if floor is not None:
                frame = frame.where(F.col(quote_identifier(arrival)) > _time_literal(floor))
        changes = source.changes
        out[name] = SourceData(name, frame, arrival, changes.op_column if changes else None,
                               tuple(changes.delete_values) if changes else ("D",), values, hidden=hidden,
                               deletion_policy=changes.deletes if changes else "strict")
    return out


def reference(spark: SparkSession, spec: Spec, cycle: Cycle, index: int) -> DataFrame:
    """``spark.sql(spec.sql)`` over the sources as of ``t_index`` of ``cycle``, with the clock at
    ``t_index`` (``now()`` is the time point's time, :mod:`tempura.sql.clock`); the query is
    transpiled to Spark SQL by sqlglot when the spec's dialect is another."""
    import sqlglot

    from tempura.sql.clock import sql_at_time, time_calls

    register_snapshots(spark, as_of(spark, spec, cycle, index), index)
    now = cycle.points.value(index) if time_calls(spec.sql, spec.dialect) else None  # the runner's numbering
    if isinstance(now, dt.datetime):
        text = sql_at_time(spec.sql, spec.dialect, now)
    else:
        text = spec.sql if spec.dialect == "spark" else sqlglot.transpile(spec.sql, read=spec.dialect, write="spark")[0]
    return spark.sql(text)


@dataclass(frozen=True)
class Owed:
    """A time point's reference: its rows and their schema."""

    rows: list[tuple[Any, ...]]
    schema: StructType


class References:
    """The reference of each time point of one spec, computed when first asked for. The sources
    must not change while it is in use: it is for checking several runs over the same data."""

    def __init__(self, spark: SparkSession, spec: Spec) -> None:
        self.spark, self.spec = spark, spec
        self._owed: dict[tuple[str, TimeValue], Owed] = {}

    def at(self, spec: Spec, cycle: Cycle, index: int) -> Owed:
        """The reference of ``spec`` (the one this was made for, or one loaded from the same spec
        file) as of ``t_index`` of ``cycle``."""
        if (_unchosen(spec), spec.sql, spec.folder) != (_unchosen(self.spec), self.spec.sql, self.spec.folder):
            raise ValueError(f"references kept for spec '{self.spec.name}' asked for spec '{spec.name}'")
        key = (cycle.label, cycle.points.value(index))  # by value: a target_lag spec's points are chosen per run
        if key not in self._owed:
            frame = reference(self.spark, spec, cycle, index)
            self._owed[key] = Owed(spark_rows(frame), frame.schema)
        return self._owed[key]


def _unchosen(spec: Spec) -> object:
    """The spec's model with a ``target_lag`` schedule's points as loaded, whichever were chosen."""
    schedule = spec.model.schedule
    if schedule.target_lag is None:
        return spec.model
    return spec.model.model_copy(update={"schedule": with_points(schedule, lag_points(schedule))})


__all__ = ["Owed", "References", "as_of", "reference"]
