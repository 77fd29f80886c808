"""A source's versions in Spark: the rows that arrived in ``(t_i, t_j]``, as a delta or a snapshot.

A source is a DataFrame whose rows each arrive at one instant, given by its arrival column
(SEMANTICS.md, *Time*). A change-data (CDC) source also has an op column: a row whose op value is
one of the delete values is a deletion, every other row an insertion. This module owns turning a
source into the temporary views that plans read:

- ``SD[i,j]`` (:func:`source_delta`): the rows that arrived in ``(t_i, t_j]`` with the
  multiplicity column ``__m`` (``+1`` per insertion, ``-1`` per deletion), not consolidated;
- ``SS[j]`` (:func:`source_snapshot`): the bag of rows present at version ``j``, insertions minus
  deletions, interval by interval: a deletion of a row that is not there (not inserted in an
  earlier interval, nor in the same one) is an :class:`~tempura.errors.ExecutionError`, or under
  ``deletes: lenient`` removes nothing — as the runtime lands change data
  (:mod:`tempura.runtime.changes`);
- :func:`register_read` registers either under the view a
  :class:`~tempura.tvr.operators.SourceRead` reads (``SourceRead.view``);
- :func:`register_snapshots` registers every source's snapshot under its own table name, so that
  ``spark.sql(original_query)`` is the reference result "as of ``t_j``".

*Data columns* are what a query may read: every column but the op column, and for a CDC source
not the arrival column either (it is change metadata: a deletion carries the deleted row's data
but its own arrival time). For an insert-only source the arrival column is an ordinary column.

Time values are compared with the arrival column as SQL literals; timestamps are read in the
session's time zone, as Spark reads timestamps in files. Spark does all the work: nothing is
collected but the one offending row an error message names.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from tempura.errors import CatalogError, ExecutionError
from tempura.sql.names import quote_identifier
from tempura.tvr.time import TimePoints
from tempura.tvr.zset import MULT

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


@dataclass(frozen=True)
class SourceData:
    """One source of a standing query: its catalog ``table`` name, its rows ``frame``, the column
    each row's arrival time is in, the optional CDC op column with the values that mean
    "delete", and the cycle's time points ``t_1 < … < t_k`` in the arrival column's domain."""

    table: str
    frame: DataFrame = field(compare=False)
    arrival_column: str
    op_column: str | None = None
    delete_values: tuple[Any, ...] = ("D",)
    time_values: tuple[Any, ...] = ()
    hidden: tuple[str, ...] = ()  # further columns a query does not see (change metadata)
    deletion_policy: str = "strict"  # a deletion of an absent row: an error ("strict") or nothing ("lenient")
    checked: bool = False  # its deletions were checked interval by interval as they landed (tempura's landing)
    # The versions whose deletions were found to remove only present rows: each is checked once,
    # however many reads of its snapshot a plan and its reference make.
    present: set[int] = field(default_factory=set, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        columns = {c.lower(): c for c in self.frame.columns}
        for role, name in (("arrival", self.arrival_column), ("op", self.op_column)):
            if name is not None and name.lower() not in columns:
                raise CatalogError(
                    f"source '{self.table}': its {role} column '{name}' is not among its columns ({', '.join(self.frame.columns)})"
                )
        if MULT in columns:
            raise CatalogError(f"source '{self.table}': the column name '{MULT}' is reserved for multiplicities")
        if self.time_values:
            TimePoints(tuple(self.time_values))  # raises unless the time points increase
        # The frame's own spelling, since Spark resolves names case-insensitively but we match them.
        object.__setattr__(self, "arrival_column", columns[self.arrival_column.lower()])
        if self.op_column is not None:
            object.__setattr__(self, "op_column", columns[self.op_column.lower()])

    @property
    def is_cdc(self) -> bool:
        """Whether the source delivers deletions (has an op column)."""
        return self.op_column is not None

    @property
    def data_columns(self) -> tuple[str, ...]:
        """The columns a query may read, in the frame's order (see the module docstring)."""
        hidden = {c.lower() for c in self.hidden}
        if self.is_cdc:
            hidden |= {self.op_column.lower(), self.arrival_column.lower()}  # type: ignore[union-attr]
        return tuple(c for c in self.frame.columns if c.lower() not in hidden)

    @property
    def k(self) -> int:
        """How many time points the cycle has (the newest version)."""
        return len(self.time_values)


def _column(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(quote_identifier(name))


def _time_literal(value: Any) -> Column:
    from pyspark.sql import functions as F

    # A SQL literal, not F.lit: F.lit reads a naive datetime in the Python process's time zone,
    # while timestamps in files are read in the session's.
    if isinstance(value, dt.datetime):
        return F.expr(f"TIMESTAMP '{value.isoformat(sep=' ')}'")
    if isinstance(value, dt.date):
        return F.expr(f"DATE '{value.isoformat()}'")
    return F.lit(value)


def _check_versions(source: SourceData, start: int, end: int) -> None:
    if not 0 <= start <= end <= source.k:
        raise ValueError(
            f"source '{source.table}': versions ({start}, {end}] are not within 0..{source.k} in order"
        )


def arrived(source: SourceData, start: int, end: int) -> DataFrame:
    """All of the source's rows (every column) whose arrival is in ``(t_start, t_end]``."""
    from pyspark.sql import functions as F

    _check_versions(source, start, end)
    if end == 0:
        return source.frame.where(F.lit(False))
    arrival = _column(source.arrival_column)
    window = arrival <= _time_literal(source.time_values[end - 1])
    if start > 0:
        window = window & (arrival > _time_literal(source.time_values[start - 1]))
    return source.frame.where(window)


def _signed(source: SourceData, rows: DataFrame) -> DataFrame:
    """``rows`` as a Z-set: the data columns and ``__m`` (``-1`` for a deletion, else ``+1``)."""
    from pyspark.sql import functions as F

    data = [_column(c) for c in source.data_columns]
    if source.op_column is None:
        return rows.select(*data, F.lit(1).cast("bigint").alias(MULT))
    # A NULL op is no delete value: the row is an insertion.
    deletion = F.coalesce(_column(source.op_column).isin(list(source.delete_values)), F.lit(False))
    mult = F.when(deletion, F.lit(-1)).otherwise(F.lit(1)).cast("bigint")
    return rows.select(*data, mult.alias(MULT))


def source_delta(source: SourceData, start: int, end: int) -> DataFrame:
    """``SD[start,end]``: the rows that arrived in ``(t_start, t_end]`` with ``__m``."""
    return _signed(source, arrived(source, start, end))


def source_snapshot(source: SourceData, version: int) -> DataFrame:
    """``SS[version]``: the bag of rows present as of ``t_version``.

    Per distinct row, interval ``j``'s insertions minus deletions are added to the count of the
    intervals before it; a deletion may remove a row inserted in an earlier interval or in its
    own. A count going below 0 is a deletion of a row that is not there: under ``strict`` an
    :class:`ExecutionError` naming the row, under ``lenient`` the deletions too many remove
    nothing (the count stays 0: ``c_j = max(0, c_{j-1} + Δ_j)``, that is the running sum less
    its lowest point below 0). A source whose deletions were checked as they landed is only
    consolidated: its counts never go below 0, and no Spark job checks them again.
    """
    from pyspark.sql import functions as F

    rows = arrived(source, 0, version)
    data = [_column(c) for c in source.data_columns]
    if source.op_column is None:
        return rows.select(*data)
    if source.checked or version <= 1:
        consolidated = _signed(source, rows).groupBy(*data).agg(F.sum(_column(MULT)).alias(MULT))
        # a landed source's deletions were checked interval by interval, against the rows before each
        if not source.checked and source.deletion_policy == "lenient":
            consolidated = consolidated.withColumn(MULT, F.greatest(_column(MULT), F.lit(0).cast("bigint")))
        elif not source.checked:
            short = consolidated.where(_column(MULT) < 0)
            _check_present(source, version, short.select(*data, F.lit(version).alias(_FIRST), (-_column(MULT)).alias(_EXCESS)))
    else:
        consolidated = _interval_counts(source, rows, version)
    copy = "__copy"
    while copy in source.data_columns:
        copy = "_" + copy
    # Each consolidated row back to as many copies as it has: the bag the snapshot is.
    return (
        consolidated.where(_column(MULT) > 0)
        .select(*data, F.explode(F.sequence(F.lit(1).cast("bigint"), _column(MULT))).alias(copy))
        .select(*data)
    )


_FIRST, _EXCESS, _RUNNING = "__first_short", "__excess", "__running"


def _interval_counts(source: SourceData, rows: DataFrame, version: int) -> DataFrame:
    """Each distinct row's count as of ``version`` (the data columns and ``__m``), from its
    insertions and deletions per interval ``(t_{j-1}, t_j]``, under the source's policy."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    data = [_column(c) for c in source.data_columns]
    arrival = _column(source.arrival_column)
    interval = F.when(arrival <= _time_literal(source.time_values[0]), F.lit(1))
    for j in range(2, version + 1):
        interval = interval.when(arrival <= _time_literal(source.time_values[j - 1]), F.lit(j))
    ivl = "__interval"
    assert source.op_column is not None
    deletion = F.coalesce(_column(source.op_column).isin(list(source.delete_values)), F.lit(False))
    mult = F.when(deletion, F.lit(-1)).otherwise(F.lit(1)).cast("bigint")
    per = rows.select(*data, interval.alias(ivl), mult.alias(MULT)).groupBy(*data, _column(ivl)).agg(
        F.sum(_column(MULT)).alias(MULT))
    so_far = Window.partitionBy(*data).orderBy(_column(ivl)).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    running = per.withColumn(_RUNNING, F.sum(_column(MULT)).over(so_far))
    counts = running.groupBy(*data).agg(
        F.sum(_column(MULT)).alias(MULT),
        F.least(F.min(_column(_RUNNING)), F.lit(0).cast("bigint")).alias(_EXCESS),
        F.min(F.when(_column(_RUNNING) < 0, _column(ivl))).alias(_FIRST),
    )
    if source.deletion_policy != "lenient":
        _check_present(source, version, counts.where(_column(_EXCESS) < 0).select(*data, _column(_FIRST),
                                                                   (-_column(_EXCESS)).alias(_EXCESS)))
        return counts.select(*data, _column(MULT))
    return counts.select(*data, (_column(MULT) - _column(_EXCESS)).alias(MULT))


def _check_present(source: SourceData, version: int, short: DataFrame) -> None:
    """Raise :class:`ExecutionError` naming the first row of ``short`` (the data columns, the
    interval its count first goes below 0 in, and by how much): a deletion of an absent row.
    ``version``: the snapshot ``short`` is of; one found right is not looked at again."""
    if version in source.present:
        return
    missing = short.limit(1).collect()
    if not missing:
        source.present.add(version)
        return
    row = missing[0].asDict()
    described = ", ".join(f"{c}={row[c]!r}" for c in source.data_columns)
    first, excess = int(row[_FIRST]), int(row[_EXCESS])
    raise ExecutionError(
        f"source '{source.table}': a deletion by t{first} ({source.time_values[first - 1]}) removes a row "
        f"that is not present: ({described}) is deleted {excess} more time{'s' if excess != 1 else ''} than inserted"
    )


def register_read(spark: SparkSession, source: SourceData, start: int, end: int, delta: bool, view: str) -> None:
    """Register ``SD[start,end]`` (``delta``), ``SS[end]`` (``start`` 0) or, of a source that
    only inserts, ``SS(start,end]`` (the bag of rows that arrived in ``(t_start, t_end]``) of
    ``source`` as the temporary view ``view``."""
    if not delta and start != 0 and source.op_column is not None:
        raise ValueError(f"source '{source.table}' has deletions: its snapshot starts at version 0, not {start}")
    if delta:
        frame = source_delta(source, start, end)
    elif start:
        frame = arrived(source, start, end).select(*[_column(c) for c in source.data_columns])
    else:
        frame = source_snapshot(source, end)
    frame.createOrReplaceTempView(quote_identifier(view))  # any table name makes a view name


def register_snapshots(spark: SparkSession, sources: Mapping[str, SourceData], version: int) -> None:
    """Register every source's ``SS[version]`` under the source's own table name, so that
    ``spark.sql`` of the original query computes its result as of ``t_version``."""
    for source in sources.values():
        register_read(spark, source, 0, version, False, source.table)
