"""Writing a result to a folder in an output format, and reading it back exactly.

``tempura query --out`` and a standing query's deliveries write results with Spark's file
writers, and users (and tempura's own checks) read them back. Spark's defaults change data on
the way: the CSV writer trims leading and trailing white space, writes NULL and the empty string
alike (and a one-column row holding NULL as an empty line, which no CSV reader reads as a row),
and the CSV and JSON writers cut timestamps to milliseconds. :func:`write_output` and
:func:`read_output` own the options that make every format round-trip exactly: what
:func:`write_output` writes, :func:`read_output` reads back, with the result's schema.

- **parquet**, **orc**: Spark's own encoding, exact as it is.
- **json**: one object per line; NULL fields are written (``"c":null``), timestamps with
  microseconds and their zone offset.
- **csv** (RFC 4180): one file in the folder, ``part-00000.csv`` (:data:`CSV_FILE`), written
  by one Spark task and renamed into place, with one header line; quotes inside a value are
  doubled, and a value holding the separator, a quote or a line break is quoted; white space is
  kept as it is. Timestamps have microseconds and their zone offset, dates are ``yyyy-MM-dd``.
  **NULL** is an unquoted empty field and the **empty string** is ``""``. A row of a one-column
  result holding NULL would be an empty line, so a one-column result writes NULL as ``NULL``
  instead; when a one-column string result holds the text ``NULL`` itself, another marker that
  it does not hold (``\\N``, then ``NULL_1``, ...) is used and kept in the folder's hidden file
  ``_null_marker``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempura.errors import ExecutionError
from tempura.runtime.executor import spark_error_message, spark_errors
from tempura.runtime.files import uri

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMATS = ("parquet", "csv", "json", "orc")
SELF_DESCRIBING = ("parquet", "orc")

# Spark's defaults keep milliseconds only; the offset with seconds keeps the historical zone
# offsets (local mean time) a session zone other than UTC can give.
DATETIME_OPTIONS = {
    "dateFormat": "yyyy-MM-dd",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}

CSV_OPTIONS = {
    "header": "true",
    "quote": '"',
    "escape": '"',  # a quote in a value is doubled (RFC 4180), so a backslash is only a backslash
    "ignoreLeadingWhiteSpace": "false",
    "ignoreTrailingWhiteSpace": "false",
    "lineSep": "\n",
    **DATETIME_OPTIONS,
}

CSV_WRITE_OPTIONS = {**CSV_OPTIONS, "nullValue": "", "emptyValue": '""', "quoteAll": "false"}

# multiLine: a quoted value may hold line breaks; FAILFAST: a file that does not parse is an
# error, never rows of NULLs.
CSV_READ_OPTIONS = {**CSV_OPTIONS, "multiLine": "true", "emptyValue": "", "mode": "FAILFAST"}

JSON_WRITE_OPTIONS = {"ignoreNullFields": "false", **DATETIME_OPTIONS}
JSON_READ_OPTIONS = {"mode": "FAILFAST", "allowNonNumericNumbers": "true", **DATETIME_OPTIONS}

# How a one-column CSV writes NULL (an empty field would be an empty line), and the markers it
# falls back to when a string column holds that very text.
NULL_MARKER = "NULL"
MARKER_FILE = "_null_marker"

# The one file of a CSV delivery's folder, named as Spark names the first part of its outputs.
CSV_FILE = "part-00000.csv"


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ExecutionError(f"unknown output format '{fmt}': one of {', '.join(FORMATS)}")


def write_output(frame: DataFrame, target: Path | str, fmt: str = "parquet") -> None:
    """Write ``frame`` to the folder ``target`` (replacing it) in ``fmt`` so that
    :func:`read_output` gives back exactly its rows; Spark's failure becomes an
    :class:`ExecutionError` naming the folder."""
    _check_format(fmt)
    folder = uri(target)
    try:
        if fmt == "csv":
            _write_csv(frame, folder)
        else:
            options = JSON_WRITE_OPTIONS if fmt == "json" else {}
            frame.write.mode("overwrite").format(fmt).options(**options).save(folder)
    except spark_errors() as error:
        message = spark_error_message(error)
        if message.startswith("a malformed row"):  # the input's fault, not the write's
            raise ExecutionError(f"{message}: nothing was committed; fix or remove the row and run again") from None
        raise ExecutionError(f"writing {target} failed: {message}") from None


def read_output(spark: SparkSession, path: Path | str, fmt: str, schema: StructType | None) -> DataFrame:
    """The rows :func:`write_output` wrote to the folder ``path`` in ``fmt``, with ``schema``
    (the written frame's). The formats in :data:`SELF_DESCRIBING` keep the schema in their
    files: for them ``None`` reads it from there."""
    from pyspark.errors import PySparkException

    _check_format(fmt)
    if schema is None and fmt not in SELF_DESCRIBING:
        raise ValueError(f"reading {fmt} needs the result's schema")
    folder = uri(path)
    try:
        if fmt == "csv":
            assert schema is not None
            return _read_csv(spark, folder, schema)
        reader = spark.read.format(fmt).options(**(JSON_READ_OPTIONS if fmt == "json" else {}))
        return (reader if schema is None else reader.schema(schema)).load(folder)
    except PySparkException as error:
        raise ExecutionError(f"reading {path} failed: {spark_error_message(error)}") from None


def _write_csv(frame: DataFrame, folder: str) -> None:
    """The CSV delivery: the folder ``folder`` holding one file, :data:`CSV_FILE`, with one
    header line (and ``_null_marker`` where needed). Spark writes the rows through one task
    (``coalesce(1)``, so it runs on a cluster as on one machine) to a hidden temporary folder
    beside ``folder``; its one part file is renamed to :data:`CSV_FILE` there, and the temporary
    folder is renamed over ``folder``: a reader finds the whole file or the folder before."""
    import uuid

    from pyspark.sql.types import StringType

    from tempura.runtime.files import Files

    files = Files(frame.sparkSession)
    parent, _, name = folder.rstrip("/").rpartition("/")
    temporary = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"
    fields = frame.schema.fields
    try:
        if len(fields) != 1:
            _write_one_csv(frame, temporary, CSV_WRITE_OPTIONS)
        elif not isinstance(fields[0].dataType, StringType):
            # no number, date, timestamp or boolean is written as NULL
            _write_one_csv(frame, temporary, {**CSV_WRITE_OPTIONS, "nullValue": NULL_MARKER})
        else:
            from pyspark import StorageLevel

            kept = frame.persist(StorageLevel.MEMORY_AND_DISK)  # the marker is chosen from the rows written
            try:
                marker = _free_marker(kept)
                _write_one_csv(kept, temporary, {**CSV_WRITE_OPTIONS, "nullValue": marker})
            finally:
                kept.unpersist()
            if marker != NULL_MARKER:
                _write_text(frame.sparkSession, f"{temporary}/{MARKER_FILE}", marker)
        files.delete(folder)
        files.rename(temporary, folder)
    finally:
        files.delete(temporary)  # nothing left behind by a failed write


def _write_one_csv(frame: DataFrame, temporary: str, options: dict[str, str]) -> None:
    """Write ``frame`` to the new folder ``temporary`` as one CSV file named :data:`CSV_FILE`
    (Spark's markers removed)."""
    from tempura.runtime.files import Files

    frame.coalesce(1).write.mode("overwrite").options(**options).csv(temporary)
    files = Files(frame.sparkSession)
    parts = [n for n in files.children(temporary) if n.startswith("part-")]
    if len(parts) != 1:
        raise ExecutionError(f"writing {temporary}: Spark wrote {len(parts)} CSV files, not one")
    files.rename(f"{temporary}/{parts[0]}", f"{temporary}/{CSV_FILE}")
    for marker in files.children(temporary):
        if marker != CSV_FILE:  # _SUCCESS, and the checksums of the part file under its old name
            files.delete(f"{temporary}/{marker}")


def _free_marker(frame: DataFrame) -> str:
    """The first of ``NULL``, ``\\N``, ``NULL_1``, ``NULL_2``, ... that no row of the one string
    column of ``frame`` holds."""
    from pyspark.sql import functions as F

    column = F.col(f"`{frame.columns[0]}`")
    taken = {row[0] for row in frame.where(column.startswith(NULL_MARKER) | (column == "\\N")).distinct().collect()}
    candidates = [NULL_MARKER, "\\N"]
    index = 1
    while candidates[0] in taken:
        candidates.pop(0)
        if not candidates:
            candidates.append(f"{NULL_MARKER}_{index}")
            index += 1
    return candidates[0]


def _read_csv(spark: SparkSession, folder: str, schema: StructType) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    reader = spark.read.options(**CSV_READ_OPTIONS)
    if len(schema.fields) == 1:
        marker = _read_text(spark, f"{folder.rstrip('/')}/{MARKER_FILE}")
        return reader.option("nullValue", NULL_MARKER if marker is None else marker).schema(schema).csv(folder)
    # Spark reads an unquoted empty field as the reader's nullValue, then takes every field equal
    # to it as NULL, quoted or not: it must be a text no string field holds.
    strings = [i for i, f in enumerate(schema.fields) if isinstance(f.dataType, StringType)]
    as_text = StructType([StructField(f"c{i}", StringType()) for i in range(len(schema.fields))])
    sentinel = "\u0000NULL"
    if strings:
        probe = reader.option("nullValue", "").schema(as_text).csv(folder)
        held = [F.col(f"c{i}") for i in strings]
        near = probe.select(F.explode(F.array(*held)).alias("v")).where(F.col("v").startswith(sentinel))
        taken = {row[0] for row in near.distinct().collect()}
        while sentinel in taken:
            sentinel += "\u0000"
    return reader.option("nullValue", sentinel).schema(schema).csv(folder)


def _hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm: Any = spark.sparkContext._jvm
    hadoop = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop


def _write_text(spark: SparkSession, path: str, text: str) -> None:
    fs, p = _hadoop_path(spark, path)
    stream = fs.create(p, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def _read_text(spark: SparkSession, path: str) -> str | None:
    fs, p = _hadoop_path(spark, path)
    if not fs.exists(p):
        return None
    jvm: Any = spark.sparkContext._jvm
    stream = fs.open(p)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


__all__ = ["CSV_FILE", "FORMATS", "SELF_DESCRIBING", "read_output", "write_output"]
