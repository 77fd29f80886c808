"""Ingesting a source's interval into the job's landing folder, and reading it back.

At time point ``t_i`` the runtime *lands* each source's interval ``i``: the rows of the source
that belong to ``(t_{i-1}, t_i]``, written once to ``landing/<source>/i=NNN/`` with two columns
of tempura's own:

- ``__tp``: the interval's index ``i`` (so that ``SD[a,b]`` is ``a < __tp <= b`` over the
  landing, whatever the source's arrival column's type);
- ``__op``: ``'D'`` for a deletion, ``'I'`` otherwise, for a source that deletes (change data,
  or a periodic range query's window, whose leaving rows are deletions).

Every fragment, batch or streaming, reads sources only through the landing, so no plan sees a
row before its time point, and a simulated replay is faithful for every method. Which rows
belong to interval ``i``:

- ``arrival: {column: c}``: rows with ``t_{i-1} < c <= t_i`` (``t_0`` is the cycle's origin);
- ``arrival: {by: file}``: every row of the files first found at ``t_i``;
- **late rows**, in files first found at ``t_i`` but arriving at or before ``t_{i-1}``, go to
  interval ``i`` under ``late: next``, or to ``rejected/<source>/i=NNN/`` under ``late: reject``;
- **range** ``(t - L, t]``: at ``t_1`` the rows of the first window; at ``t_i`` the rows arriving in
  ``(t_{i-1}, t_i]`` are insertions, and the landed rows whose window ends in ``(t_{i-1}, t_i]``
  (arrival ``+ L``) are deletions.

Before anything is written, each new file's schema is compared with the source's: a file that
adds, drops or retypes a column stops the time point with an error naming the file and the
columns, and nothing is committed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from tempura.errors import ExecutionError
from tempura.runtime.executor import spark_error_message
from tempura.runtime.files import uri
from tempura.runtime.sources import SourceData, _time_literal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

TP = "__tp"
OP = "__op"
FILE = "__file"


@dataclass(frozen=True)
class Feed:
    """How one source reaches a standing query."""

    name: str  # the catalog (table) name, lower case
    location: str  # where its files are (a path or URI)
    format: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)
    schema: Mapping[str, str] | None = None  # declared column types
    arrival_column: str | None = None  # None: by file
    op_column: str | None = None
    delete_values: tuple[str, ...] = ("D",)
    window: dt.timedelta | int | None = None  # a range query's window length

    @property
    def deletes(self) -> bool:
        """Whether its landing carries deletions."""
        return self.op_column is not None or self.window is not None

    @property
    def hidden(self) -> tuple[str, ...]:
        """Its columns a query does not see: tempura's, and a change-data source's op and
        arrival columns."""
        own = (TP, OP) if self.deletes else (TP,)
        if self.op_column is not None and self.arrival_column is not None:
            return own + (self.op_column, self.arrival_column)
        return own


@dataclass
class Landed:
    """What ingesting one interval of one source found and wrote."""

    source: str
    index: int
    rows: int = 0
    deletions: int = 0
    late: int = 0  # late rows taken into this interval (late: next)
    rejected: int = 0  # late rows set aside (late: reject)
    new_files: list[tuple[str, int, int]] = field(default_factory=list)
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "deletions": self.deletions, "late": self.late, "rejected": self.rejected,
                "new_files": len(self.new_files), "path": self.path}


def read_source(spark: SparkSession, feed: Feed, paths: Sequence[str] | None = None) -> DataFrame:
    """The source's files (all, or ``paths``) as Spark reads them, with each row's file."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    reader = spark.read.format(feed.format).options(**dict(feed.options))
    if feed.schema:
        reader = reader.schema(", ".join(f"`{c}` {t}" for c, t in feed.schema.items()))
    try:
        frame = reader.load(list(paths) if paths is not None else uri(feed.location))
        return frame.withColumn(FILE, F.input_file_name())
    except PySparkException as error:
        raise ExecutionError(f"source '{feed.name}': cannot read {feed.location}: {spark_error_message(error)}") from None


def check_schema(spark: SparkSession, feed: Feed, expected: StructType, files: Sequence[str]) -> None:
    """Raise :class:`ExecutionError` naming the first of ``files`` whose columns differ from
    ``expected`` (names, and types where the format stores them)."""
    from pyspark.errors import PySparkException

    typed = feed.format in ("parquet", "orc")
    want = {f.name.lower(): f.dataType.simpleString() for f in expected.fields if f.name != FILE}
    for path in files:
        try:
            found = spark.read.format(feed.format).options(**dict(feed.options)).load(path).schema
        except PySparkException as error:
            raise ExecutionError(f"source '{feed.name}': cannot read {path}: {spark_error_message(error)}") from None
        have = {f.name.lower(): f.dataType.simpleString() for f in found.fields}
        added = sorted(set(have) - set(want))
        missing = sorted(set(want) - set(have))
        retyped = sorted(c for c in set(have) & set(want) if typed and have[c] != want[c])
        if added or missing or retyped:
            parts = ([f"adds {', '.join(added)}"] if added else []) + ([f"lacks {', '.join(missing)}"] if missing else [])
            parts += [f"{c} is {have[c]}, not {want[c]}" for c in retyped]
            raise ExecutionError(
                f"source '{feed.name}': schema drift in {path}: {'; '.join(parts)} (nothing was committed; "
                f"fix or remove the file and run again)"
            )


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _shift(value: Any, window: dt.timedelta | int) -> Any:
    return value - window  # a time point minus the window length: where the window starts


def interval_rows(
    feed: Feed,
    source: DataFrame,
    new_files: set[str],
    origin: Any,
    values: Sequence[Any],
    index: int,
    late: str,
    landed: DataFrame | None,
) -> tuple[DataFrame, DataFrame | None]:
    """The rows of interval ``index`` (with ``__tp`` and, for deleting feeds, ``__op``), and the
    late rows (``None`` when none can be): set aside under ``late: reject``, taken into the
    interval under ``late: next``.

    ``source``: the source's rows with their files; ``new_files``: the files first found now;
    ``landed``: the rows landed at earlier intervals (for a range query's deletions)."""
    from pyspark.sql import functions as F

    start = values[index - 2] if index > 1 else origin
    end = values[index - 1]
    is_new = _col(FILE).isin(sorted(new_files)) if new_files else F.lit(False)
    late_found: DataFrame | None = None
    if feed.arrival_column is None:  # by file: a file's rows arrive when it is first found
        rows = source.where(is_new)
    else:
        arrival = _col(feed.arrival_column)
        floor = start
        if feed.window is not None:
            floor = _shift(end, feed.window) if index == 1 else start
        on_time = arrival <= _time_literal(end)
        if floor is not None:
            on_time = on_time & (arrival > _time_literal(floor))
        if index == 1 or floor is None:
            rows = source.where(on_time)
        else:
            # a late row: in a new file, arriving at or before t_{i-1} (and still inside the cycle,
            # or the window)
            oldest = origin if feed.window is None else _shift(end, feed.window)
            late_rows = is_new & (arrival <= _time_literal(floor))
            if oldest is not None:
                late_rows = late_rows & (arrival > _time_literal(oldest))
            if late == "next":
                rows = source.where(on_time | late_rows)
            else:
                rows = source.where(on_time)
            if new_files:
                late_found = source.where(late_rows).drop(FILE)
    out = rows.withColumn(TP, F.lit(index).cast("int"))
    if feed.deletes:
        op = F.lit("I")
        if feed.op_column is not None:
            deletion = F.coalesce(_col(feed.op_column).isin(list(feed.delete_values)), F.lit(False))
            op = F.when(deletion, F.lit("D")).otherwise(F.lit("I"))
        out = out.withColumn(OP, op)
    out = out.drop(FILE)
    if feed.window is not None and landed is not None and index > 1 and feed.arrival_column is not None:
        leaving = _col(feed.arrival_column)
        low, high = _shift(start, feed.window), _shift(end, feed.window)
        gone = landed.where((_col(OP) == "I") & (leaving > _time_literal(low)) & (leaving <= _time_literal(high)))
        out = out.unionByName(gone.withColumn(TP, F.lit(index).cast("int")).withColumn(OP, F.lit("D")))
    return out, late_found


def landing_data(spark: SparkSession, feed: Feed, folders: Sequence[str], schema: StructType, k: int) -> SourceData:
    """The landed intervals ``folders`` of ``feed`` as a :class:`SourceData` whose time points
    are the interval indices ``1..k`` (``__tp``)."""
    frame = spark.read.schema(schema).parquet(*folders) if folders else spark.createDataFrame([], schema)
    return SourceData(feed.name, frame, TP, OP if feed.deletes else None, ("D",), tuple(range(1, k + 1)),
                      hidden=feed.hidden)


def landed_schema(feed: Feed, source_schema: StructType) -> StructType:
    """The schema of the landing: the source's columns, ``__tp`` and (deleting feeds) ``__op``."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    fields = [f for f in source_schema.fields if f.name != FILE] + [StructField(TP, IntegerType(), False)]
    if feed.deletes:
        fields.append(StructField(OP, StringType(), False))
    return StructType(fields)


__all__ = ["FILE", "OP", "TP", "Feed", "Landed", "check_schema", "interval_rows", "landed_schema", "landing_data",
           "read_source"]
