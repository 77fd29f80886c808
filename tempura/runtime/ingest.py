"""Ingesting a source's interval into the job's landing folder, and reading it back.

At time point ``t_i`` the runtime *lands* each source's interval ``i``: the rows of the source
that belong to ``(t_{i-1}, t_i]``, written once to ``landing/<source>/i=NNN/`` with two columns
of tempura's own:

- ``__tp``: the interval's index ``i`` (so that ``SD[a,b]`` is ``a < __tp <= b`` over the
  landing, whatever the source's arrival column's type);
- ``__op``: ``'D'`` for a deletion, ``'I'`` otherwise, for a source that deletes (change data,
  or a periodic range query's window, whose leaving rows are deletions).

Every fragment, batch or streaming, reads sources only through the landing, so no plan sees a
row before its time point, and a simulated replay is faithful for every method.

An interval that is exactly some whole files of an append-only parquet source (every row of the
files first found at ``t_i`` arrives in ``(t_{i-1}, t_i]``, none is late or without an arrival)
is **linked**, not written: its folder holds hard links to those files (byte copies where the
file system has no links), and ``__tp`` is read from the folder's name (:func:`with_interval`).
The pass that finds this out is the one read of the new files: it counts the rows and sketches
them for the statistics. Any other interval is written, as below. Which rows
belong to interval ``i``:

- ``arrival: {column: c}``: rows with ``t_{i-1} < c <= t_i`` (``t_0`` is the cycle's origin);
- ``arrival: {by: file}``: every row of the files first found at ``t_i``;
- **late rows**, in files first found at ``t_i`` but arriving at or before ``t_{i-1}``, go to
  interval ``i`` under ``late: next``, or to ``rejected/<source>/i=NNN/`` under ``late: reject``;
- rows of files first found at ``t_i`` whose arrival is NULL belong to no interval: they are
  counted and set aside under ``rejected/<source>/i=NNN/`` too (:func:`null_arrival_rows`);
- **range** ``(t - L, t]``: at ``t_1`` the rows of the first window; at ``t_i`` the rows arriving in
  ``(t_{i-1}, t_i]`` are insertions, and the landed rows whose window ends in ``(t_{i-1}, t_i]``
  (arrival ``+ L``) are deletions.

Before anything is written, each new file of Spark's file formats (parquet, CSV, JSON, ORC: not
a format some jar adds, nor a Hive text table) is read on its own (:func:`file_schemas`): a file
Spark cannot read as the source's format (a corrupt file, a CSV file among parquet ones) stops
the time point with an error naming the source and the file; then its schema is compared with
the source's committed one (:func:`check_schema`). Under ``schema: strict`` a file that adds,
drops or retypes a column stops the time point with an error naming the file and the columns;
under ``schema: add_columns`` only a column the query reads that the file lacks, or holds as a
type Spark's rules do not widen to or from the committed one, does: added columns are left
out, and a widened column is read as the wider type (:func:`wider_type`). Either way nothing
is committed. A change feed's interval is checked before it lands as well
(:mod:`tempura.runtime.changes`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, NoReturn, Sequence

from tempura.catalog import FILE_FORMATS, read_catalog_table, reader_error
from tempura.errors import CatalogError, ExecutionError
from tempura.runtime.executor import spark_error_message
from tempura.runtime.files import uri
from tempura.runtime.sources import SourceData, _time_literal
from tempura.sql.names import quote_identifier
from tempura.tvr.layout import Layout

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructField, StructType

TP = "__tp"
OP = "__op"
FILE = "__file"
# Formats whose files store their columns' types: a file of one is checked by names and types.
TYPED_FORMATS = ("parquet", "orc")


@dataclass(frozen=True)
class Feed:
    """How one source reaches a standing query."""

    name: str  # the catalog (table) name, lower case
    location: str  # where its files are (a path or URI; a catalog table's: its location)
    format: str = "parquet"  # how one of its files reads ("" for a catalog table only Spark's table reads)
    options: Mapping[str, str] = field(default_factory=dict)
    schema: Mapping[str, str] | None = None  # declared column types
    arrival_column: str | None = None  # None: by file
    op_column: str | None = None
    delete_values: tuple[str, ...] = ("D",)
    window: dt.timedelta | int | None = None  # a range query's window length
    insert_values: tuple[str, ...] = ("I",)  # a change feed's op values marking an insertion
    deletion_policy: str = "strict"  # a change feed's deletion of an absent row: "strict" (error) or "lenient"
    table: str | None = None  # a table of Spark's catalog, read through the catalog
    partition_columns: tuple[str, ...] = ()  # a catalog table's, which its files do not hold
    schema_policy: str = "strict"  # how a new file's columns may differ: "strict" or "add_columns"

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
    rejected: int = 0  # rows set aside: late rows (late: reject) and those with a NULL arrival
    new_files: list[tuple[str, int, int]] = field(default_factory=list)
    path: str = ""
    null_arrival: int = 0  # rows of new files whose arrival is NULL (set aside, counted in ``rejected``)
    malformed: int = 0  # rows of new files Spark's reader found malformed (a text format's), as it reads them
    malformed_example: str = ""  # the first of them: its file and its text
    absent_deletions: int = 0  # deletions of absent rows dropped (a change feed under ``deletes: lenient``)
    check_cpu_seconds: float = 0.0  # executor CPU of checking a change feed's interval
    layout: Layout | None = None  # hash-bucketed by a key (tempura.runtime.layout), or as it came
    cpu_seconds: float = 0.0  # executor CPU of landing it: reading the source, writing the interval (and rows set aside)
    bytes_read: int = 0  # bytes the landing read from the source's files
    open_files: list[str] | None = None  # files read that hold rows of later intervals (None: every file is read)
    linked: bool = False  # its folder links the source's files (no __tp column) rather than holding written rows

    def to_json(self) -> dict[str, Any]:
        out = {"rows": self.rows, "deletions": self.deletions, "late": self.late, "rejected": self.rejected,
               "null_arrival": self.null_arrival, "absent_deletions": self.absent_deletions,
               "check_cpu_seconds": self.check_cpu_seconds, "cpu_seconds": self.cpu_seconds,
               "bytes_read": self.bytes_read, "new_files": len(self.new_files), "path": self.path,
               **({"linked": True} if self.linked else {}),
               **({"malformed": self.malformed, "malformed_example": self.malformed_example} if self.malformed else {})}
        return {**out, "layout": self.layout.to_json()} if self.layout is not None else out


def _spark_errors() -> tuple[type[Exception], ...]:
    """What Spark raises for a file it cannot read: converted errors, and the JVM's own."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return PySparkException, Py4JJavaError


def read_source(spark: SparkSession, feed: Feed, paths: Sequence[str] | None = None,
                columns: StructType | None = None) -> DataFrame:
    """The source's files (all, or ``paths``) as Spark reads them, with each row's file; a catalog
    table through the catalog, its files listed afresh. ``columns``: the columns every file of a
    typed format (parquet, ORC) is known to have, names and types, which Spark then takes instead
    of reading a footer for them; ignored for other formats, whose types Spark infers from data."""

    if feed.table is not None and paths is None:
        try:
            frame = read_catalog_table(spark, feed.table, f"source '{feed.name}'")
        except CatalogError as error:
            raise ExecutionError(str(error)) from None
        return with_file(frame)
    reader = spark.read.format(feed.format).options(**dict(feed.options))
    if feed.schema:
        reader = reader.schema(", ".join(f"{quote_identifier(c)} {t}" for c, t in feed.schema.items()))
    elif columns is not None and feed.format in TYPED_FORMATS:
        reader = reader.schema(columns)
    try:
        frame = reader.load(list(paths) if paths is not None else uri(feed.location))
        return with_file(frame)
    except _spark_errors() as error:
        missing = reader_error(error, feed.format)  # a format no jar on the classpath provides
        why = missing if "not on the classpath" in missing else spark_error_message(error)
        raise ExecutionError(f"source '{feed.name}': cannot read {feed.location}: {why}") from None


def with_file(frame: DataFrame) -> DataFrame:
    """``frame`` with each row's file (``__file``), named as the file system's listing names it.

    Taken from the file source's ``_metadata.file_path``, a column of the scan: deterministic, so
    the optimizer still pushes a filter on the data columns (an interval's arrival bounds) into
    the reader, where parquet skips the row groups outside it, and a filter on the file prunes
    files. ``input_file_name()`` would stop both: a filter is not pushed beneath a
    nondeterministic projection. It is the fallback for a relation without file metadata (a Hive
    text table) or with a column of that name."""
    from pyspark.sql import functions as F

    named = None
    if "_metadata" not in frame.columns:
        try:
            named = frame.select("*", F.col("_metadata.file_path").alias(FILE))
        except _spark_errors():  # no file metadata
            pass
    if named is None:
        named = frame.withColumn(FILE, F.input_file_name())
    # A reader names a local file file:/x, the file system's listing file:///x.
    return named.withColumn(FILE, F.regexp_replace(F.col(FILE), "^file:/(?!/)", "file:///"))


def file_schemas(spark: SparkSession, feed: Feed, files: Sequence[str]) -> dict[str, StructType]:
    """Each of ``files`` read on its own as the source's format: its columns. Raises
    :class:`ExecutionError` naming the source and the first file Spark cannot read so (a corrupt
    file, or one of another format), in one line.

    A file whose footer cannot be read is skipped by Spark's reader here (``ignoreCorruptFiles``),
    so that it surfaces as a schema nothing could be inferred from instead of a failed task and
    the JVM's stack trace on standard error."""
    out: dict[str, StructType] = {}
    if feed.format not in FILE_FORMATS:  # a catalog table whose files only the table reads (a Hive
        return out  # text table), or a format not read file by file (Delta): read whole only
    for path in files:
        footer = local_parquet_columns(feed, path)
        if footer is not None:
            out[path] = footer
            continue
        reader = spark.read.format(feed.format).options(**dict(feed.options)).option("ignoreCorruptFiles", "true")
        try:
            found = reader.load(path).schema
        except _spark_errors() as error:
            raise ExecutionError(f"source '{feed.name}': cannot read {path} as {feed.format}: "
                                 f"{_unreadable(error)} (nothing was committed; fix or remove the file and run again)") from None
        if not found.fields:
            raise ExecutionError(f"source '{feed.name}': cannot read {path} as {feed.format}: it holds no columns "
                                 f"(nothing was committed; fix or remove the file and run again)")
        out[path] = found
    return out


def local_parquet_columns(feed: Feed, path: str) -> StructType | None:
    """The columns of a local parquet file as Spark reads them, from its footer alone (pyarrow:
    no Spark job); ``None`` for another format, a file elsewhere, or a type Spark has no name
    for (then Spark reads it). A footer that cannot be read raises :class:`ExecutionError`."""
    if feed.format != "parquet" or feed.options or not path.startswith("file:"):
        return None
    from urllib.parse import urlparse

    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    import pyarrow as pa
    from pyspark.sql.types import TimestampType

    local = urlparse(path).path
    try:
        metadata = pq.read_metadata(local)
        schema = metadata.schema.to_arrow_schema()
    except Exception as error:  # a damaged or truncated file, or one of another format
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ExecutionError(f"source '{feed.name}': cannot read {path} as parquet: {first} (nothing was "
                             f"committed; fix or remove the file and run again)") from None
    if any(pa.types.is_nested(f.type) for f in schema):
        return None  # Spark's reading of nested types is its own to say
    physical = {metadata.schema.column(i).path: metadata.schema.column(i).physical_type
                for i in range(len(metadata.schema))}
    fields = []
    try:
        for f in schema:
            if pa.types.is_timestamp(f.type) and physical.get(f.name) == "INT96":
                fields.append(StructField(f.name, TimestampType(), f.nullable))  # Spark's own timestamps
            else:
                fields.append(StructField(f.name, from_arrow_type(f.type), f.nullable))
    except Exception:  # a type only Spark's reader maps
        return None
    return StructType(fields)


@dataclass(frozen=True)
class FileArrivals:
    """What one file's arrival column holds: its rows, how many have no arrival, and the
    earliest and latest arrival (microseconds since the epoch, UTC; ``None`` without one)."""

    rows: int
    nulls: int
    earliest: int | None
    latest: int | None


def local_arrivals(feed: Feed, path: str, column: str | None, kind: DataType | None, zone: str) -> FileArrivals | None:
    """How many rows the local parquet file ``path`` holds, and, with ``column`` (the source's
    arrival column, of Spark type ``kind``), the range of its arrivals (a date as the instant its
    day begins in the session's time ``zone``, as Spark compares a date with a timestamp): read
    on the driver with pyarrow (the footer, and that one column), no Spark job. ``None`` where this cannot be
    told as Spark would read it (a file elsewhere, another format, an arrival of another type,
    or a timestamp Spark reads without a time zone), and Spark reads the file instead."""
    if feed.format != "parquet" or feed.options or not path.startswith("file:"):
        return None
    from urllib.parse import urlparse

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyspark.sql.types import DateType, TimestampType

    try:
        opened = pq.ParquetFile(urlparse(path).path, coerce_int96_timestamp_unit="us")
        if column is None:
            return FileArrivals(opened.metadata.num_rows, 0, None, None)
        names = [f.name for f in opened.schema_arrow if f.name.lower() == column.lower()]
        if len(names) != 1:
            return None
        values = opened.read(columns=names, use_threads=False).column(0)
    except Exception:  # a damaged file: Spark's read says what is wrong with it
        return None
    rows, nulls = len(values), values.null_count
    if isinstance(kind, TimestampType) and pa.types.is_timestamp(values.type) and values.type.unit != "ns":
        physical = opened.metadata.schema.column(opened.schema_arrow.get_field_index(names[0])).physical_type
        if values.type.tz is None and physical != "INT96":
            return None  # a local timestamp (not adjusted to UTC): Spark's reading of it is its own
        micros = pc.cast(values, pa.timestamp("us", tz="UTC")).cast(pa.int64())
    elif isinstance(kind, DateType) and pa.types.is_date32(values.type):
        micros = values.cast(pa.int32())  # days: turned into instants below, in the session's zone
    else:
        return None
    if rows == nulls:
        return FileArrivals(rows, nulls, None, None)
    found = pc.min_max(micros).as_py()
    low, high = int(found["min"]), int(found["max"])
    if isinstance(kind, DateType):
        epoch = dt.date(1970, 1, 1)
        low_at, high_at = (instant(epoch + dt.timedelta(days=d), zone) for d in (low, high))
        if low_at is None or high_at is None:
            return None
        low, high = low_at, high_at
    return FileArrivals(rows, nulls, low, high)


def instant(value: Any, zone: str) -> int | None:
    """``value`` (a time point's value) as microseconds since the epoch, UTC, read as Spark reads
    the literal in the session's time ``zone`` (a date: the start of its day); ``None`` for a
    number, a zone Python does not know, or a wall time the zone skips or repeats."""
    from zoneinfo import ZoneInfo

    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is None:
        try:
            where = ZoneInfo(zone)
        except Exception:  # an offset such as +02:00, or a name this Python lacks
            return None
        early, late = value.replace(tzinfo=where, fold=0), value.replace(tzinfo=where, fold=1)
        if early.utcoffset() != late.utcoffset():
            return None
        value = early
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _unreadable(error: Exception) -> str:
    text = spark_error_message(error)
    if "UNABLE_TO_INFER_SCHEMA" in text:  # every file skipped as corrupt: no footer Spark could read
        return "not a readable file of that format (corrupt, or of another format)"
    return text


def check_schema(feed: Feed, expected: StructType, found: Mapping[str, StructType], spark: SparkSession | None = None,
                 reads: Callable[[], Collection[str] | None] | None = None) -> StructType:
    """The columns to read the source's files with: ``expected`` (without ``__file``), as each
    of the files ``found`` (each with its columns, :func:`file_schemas`) may differ from it.
    Raises :class:`ExecutionError`, in one line naming the source, the file and the columns, at
    the first file that may not.

    Under ``schema: strict`` a file may not differ at all (names, and types where the format
    stores them). Under ``add_columns`` (``spark`` at hand) a file may add columns (not read),
    lack a column the query does not read, and hold a column as another type where Spark's
    rules (:func:`wider_type`) widen the two: the column is read as the wider one. A column the
    query reads that a file lacks, or holds as a type neither widens to, stops it; one it does
    not read is left out of the reading. ``reads``: the columns the query reads, lower case
    (``None``: every column), asked only when a file differs."""
    typed = feed.format in TYPED_FORMATS
    reading = {f.name.lower(): f for f in expected.fields if f.name != FILE}
    want = {name: f.dataType for name, f in reading.items() if name not in feed.partition_columns}
    lenient = feed.schema_policy == "add_columns" and spark is not None
    read: list[Collection[str] | None] = []  # the query's columns, once asked

    def is_read(column: str) -> bool:
        if not read:
            read.append(reads() if reads is not None else None)
        return read[0] is None or column in read[0]

    def stop(path: str, what: str) -> NoReturn:
        raise ExecutionError(f"source '{feed.name}': schema drift in {path}: {what} (nothing was committed; "
                             f"fix or remove the file and run again)")

    for path, schema in found.items():
        have = {f.name.lower(): f.dataType for f in schema.fields}
        added = sorted(set(have) - set(want))
        missing = sorted(set(want) - set(have))
        retyped = sorted(c for c in set(have) & set(want) if typed and have[c].simpleString() != want[c].simpleString())
        if not lenient:
            if added or missing or retyped:
                parts = ([f"adds {', '.join(added)}"] if added else []) + ([f"lacks {', '.join(missing)}"] if missing else [])
                parts += [f"{c} is {have[c].simpleString()}, not {want[c].simpleString()}" for c in retyped]
                stop(path, "; ".join(parts))
            continue
        assert spark is not None
        for column in missing:
            if is_read(column):
                stop(path, f"lacks {column} ({want[column].simpleString()}), which the query reads")
        for column in retyped:
            if column not in reading:
                continue  # left out of the reading by an earlier file
            current = reading[column].dataType
            wider = wider_type(spark, current, have[column])
            if wider is not None:
                reading[column] = replace_type(reading[column], wider)
            elif is_read(column):
                stop(path, f"{column} is {have[column].simpleString()}, not {want[column].simpleString()}, which the "
                           f"query reads, and Spark widens neither to the other")
            else:
                del reading[column]  # not read: its values are not needed
    from pyspark.sql.types import StructType

    return StructType(list(reading.values()))


def replace_type(column: StructField, kind: DataType) -> StructField:
    """``column`` holding ``kind`` (nullable: a file that holds the narrower type may hold NULLs)."""
    from pyspark.sql.types import StructField

    return StructField(column.name, kind, True, column.metadata)


def wider_type(spark: SparkSession, a: DataType, b: DataType) -> DataType | None:
    """The type Spark widens ``a`` and ``b`` to, when both up-cast to it safely: its own rules
    (``TypeCoercion.findWiderTypeWithoutStringPromotionForTwo``: ``int`` and ``bigint`` to
    ``bigint``, ``float`` and ``double`` to ``double``, decimals to one holding both), with no
    promotion to text; ``None`` when there is none (``int`` and ``string``, ``boolean`` and
    ``int``)."""
    from pyspark.sql.types import _parse_datatype_json_string

    jvm = spark._jvm
    assert jvm is not None
    analysis = jvm.org.apache.spark.sql.catalyst.analysis
    coercion = getattr(getattr(analysis, "TypeCoercion$"), "MODULE$")
    cast = jvm.org.apache.spark.sql.catalyst.expressions.Cast
    parse = spark._jsparkSession.parseDataType
    left, right = parse(a.json()), parse(b.json())
    found = coercion.findWiderTypeWithoutStringPromotionForTwo(left, right)
    if not found.isDefined():
        return None
    wide = found.get()
    if not (cast.canUpCast(left, wide) and cast.canUpCast(right, wide)):
        return None
    return _parse_datatype_json_string(wide.json())


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(quote_identifier(name))


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
    keep_file: bool = False,
) -> tuple[DataFrame, DataFrame | None]:
    """The rows of interval ``index`` (with ``__tp`` and, for deleting feeds, ``__op``), and the
    late rows (``None`` when none can be): set aside under ``late: reject``, taken into the
    interval under ``late: next``.

    ``source``: the source's rows with their files; ``new_files``: the files first found now;
    ``landed``: the rows landed at earlier intervals (for a range query's deletions);
    ``keep_file``: keep each row's file (``__file``, NULL for a window's leaving rows), for the
    checks that name it. A change feed's op value marks a deletion if it is one of the delete
    values, else an insertion: :func:`tempura.runtime.changes.check_ops` rejects other values."""
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
    if not keep_file:
        out = out.drop(FILE)
    if feed.window is not None and landed is not None and index > 1 and feed.arrival_column is not None:
        leaving = _col(feed.arrival_column)
        low, high = _shift(start, feed.window), _shift(end, feed.window)
        gone = landed.where((_col(OP) == "I") & (leaving > _time_literal(low)) & (leaving <= _time_literal(high)))
        gone = gone.withColumn(TP, F.lit(index).cast("int")).withColumn(OP, F.lit("D"))
        if keep_file:
            gone = gone.withColumn(FILE, F.lit(None).cast("string"))
        # the landing may keep fewer columns than the source has: the leaving rows have the
        # landed ones, the only ones written
        out = out.unionByName(gone, allowMissingColumns=True)
    return out, late_found


MALFORMED = "__malformed"
TEXT_FORMATS = ("csv", "json")


def malformed_rows(spark: SparkSession, feed: Feed, paths: Sequence[str]) -> tuple[int, str]:
    """How many rows of ``paths`` Spark's reader finds malformed, and the first of them (its file
    and text): a value that does not parse as its declared type, a row short of fields. Spark
    reads such a row with NULL where a value did not parse (its ``PERMISSIVE`` mode, the
    default); this counts them, for the run to say so. Only a text format with declared columns
    read permissively has such rows; others give ``(0, "")``."""
    from pyspark.sql import functions as F

    mode = str(dict(feed.options).get("mode", "PERMISSIVE")).upper()
    if feed.format not in TEXT_FORMATS or not feed.schema or mode != "PERMISSIVE" or not paths:
        return 0, ""
    columns = ", ".join(f"{quote_identifier(c)} {t}" for c, t in feed.schema.items())
    reader = spark.read.format(feed.format).options(**dict(feed.options)).option("columnNameOfCorruptRecord", MALFORMED)
    frame = with_file(reader.schema(f"{columns}, {MALFORMED} STRING").load(list(paths)))
    # every column read: Spark parses only the columns a query needs, and finds a row malformed by
    # those alone (nor does it read a file for the corrupt column alone)
    every = F.hash(*[_col(c) for c in feed.schema])  # needs each value: the optimizer prunes none
    bad = F.col(MALFORMED).isNotNull()
    found = frame.agg(F.count(F.when(bad, F.lit(1))).alias("n"), F.max(every).alias("read"),
                      F.first(F.when(bad, F.concat(F.col(FILE), F.lit(": "), F.col(MALFORMED))), ignorenulls=True)
                      .alias("example"))
    row = found.collect()[0]
    return int(row["n"]), str(row["example"] or "")


def null_arrival_rows(feed: Feed, source: DataFrame, new_files: set[str]) -> DataFrame | None:
    """The rows of the files first found now whose arrival is NULL (``None`` for a source that
    arrives by file, or when no file is new): no interval holds them, so they are set aside.
    Only new files' rows, so that each such row is counted once, when its file is found."""
    if feed.arrival_column is None or not new_files:
        return None
    return source.where(_col(FILE).isin(sorted(new_files)) & _col(feed.arrival_column).isNull()).drop(FILE)


def read_landed(spark: SparkSession, schema: StructType, folders: Sequence[str],
                observe: Mapping[int, Callable[[DataFrame], DataFrame]] | None = None) -> DataFrame:
    """The rows of landed ``folders`` (or of some of their files) with the landing's columns.
    Their files are found recursively, without partition discovery: a folder laid out in
    buckets (:mod:`tempura.runtime.layout`) adds no column, and reads beside one that is not.

    A linked interval's files (the source's own) hold no ``__tp``. Each interval's paths are
    read apart, its ``__tp`` filled in from its folder's name as a constant, and the reads are
    unioned: no row parses a path. Paths that name no interval, or more intervals than
    :data:`APART` (a union that wide costs more to plan than parsing costs), are read in one scan
    through :func:`with_interval`."""
    import functools

    from pyspark.sql import functions as F

    reader = spark.read.schema(schema).option("recursiveFileLookup", "true")
    by_interval: dict[int, list[str]] = {}
    for path in folders:
        found = _INTERVAL_FOLDER.findall(str(path))
        if not found:
            return with_interval(reader.parquet(*folders))
        by_interval.setdefault(int(found[-1]), []).append(str(path))
    if not by_interval or len(by_interval) > APART:
        return with_interval(reader.parquet(*folders))
    parts = [reader.parquet(*paths).withColumn(TP, F.coalesce(F.col(TP), F.lit(index).cast("int")))
             for index, paths in sorted(by_interval.items())]
    if observe:
        parts = [observe[index](part) if index in observe else part
                 for index, part in zip(sorted(by_interval), parts)]
    return functools.reduce(lambda a, b: a.unionByName(b), parts)


_INTERVAL_FOLDER = re.compile(r"/i=(\d+)(?=/|$)")  # a landed interval's folder in a path
APART = 64  # at most this many intervals read apart (a union of one scan each)


def with_interval(frame: DataFrame) -> DataFrame:
    """``frame``, rows of landed folders, with ``__tp`` of the rows of linked intervals (the
    source's files, which hold no such column) taken from their folder's name, ``i=NNN``. A
    written interval's rows keep their own: the name is only parsed where ``__tp`` is NULL."""
    from pyspark.sql import functions as F

    folder = F.regexp_extract(F.col("_metadata.file_path"), r".*/i=(\d+)/", 1).cast("int")
    return frame.withColumn(TP, F.coalesce(F.col(TP), folder))


def landed_rows(spark: SparkSession, schema: StructType, folders: Sequence[str], history: Sequence[str] = (),
                observe: Mapping[int, Callable[[DataFrame], DataFrame]] | None = None) -> DataFrame:
    """The rows of the landed ``folders``, and of the ``history`` folders a carried cycle took
    over (each landed as an interval of an earlier cycle), read as its interval 1; ``observe``
    as :func:`read_landed`'s."""
    from pyspark.sql import functions as F

    parts = [read_landed(spark, schema, folders, observe)] if folders else []
    if history:
        parts.append(read_landed(spark, schema, history).withColumn(TP, F.lit(1).cast("int")))
    if not parts:
        return spark.createDataFrame([], schema)
    return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])


def landing_data(spark: SparkSession, feed: Feed, folders: Sequence[str], schema: StructType, k: int,
                 history: Sequence[str] = (), where: Column | None = None,
                 observe: Mapping[int, Callable[[DataFrame], DataFrame]] | None = None) -> SourceData:
    """The landed intervals ``folders`` of ``feed`` (and a carried cycle's ``history``, as
    interval 1) as a :class:`SourceData` whose time points are the interval indices ``1..k``
    (``__tp``); only its rows that satisfy ``where``, if given; ``observe`` as
    :func:`read_landed`'s."""
    frame = landed_rows(spark, schema, folders, history, observe)
    if where is not None:
        frame = frame.where(where)
    return SourceData(feed.name, frame, TP, OP if feed.deletes else None, ("D",), tuple(range(1, k + 1)),
                      hidden=feed.hidden, checked=True)


def landed_schema(feed: Feed, source_schema: StructType, keep: Collection[str] | None = None) -> StructType:
    """The schema of the landing: the source's columns (those named in ``keep``, lower case, when
    given), ``__tp`` and (deleting feeds) ``__op``."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    fields = [f for f in source_schema.fields if f.name != FILE and (keep is None or f.name.lower() in keep)]
    fields.append(StructField(TP, IntegerType(), False))
    if feed.deletes:
        fields.append(StructField(OP, StringType(), False))
    return StructType(fields)


__all__ = ["FILE", "OP", "TP", "Feed", "Landed", "check_schema", "file_schemas", "interval_rows", "landed_schema",
           "landed_rows", "landing_data", "malformed_rows", "read_landed", "null_arrival_rows", "read_source",
           "replace_type", "wider_type", "with_interval"]
