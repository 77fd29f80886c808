"""Collecting statistics through Spark.

Each catalog table is declared as an external table of Spark's session catalog, in the database
``tempura_stats``, over the same files (``CREATE TABLE … USING <format> LOCATION …``). Then
``ANALYZE TABLE … COMPUTE STATISTICS FOR ALL COLUMNS`` computes rows, bytes and per-column
distinct count (HyperLogLog++), nulls, min, max, average and maximum length, and equi-height
histograms when ``spark.sql.statistics.histogram.enabled`` is on. The results are read back with
``DESCRIBE TABLE EXTENDED``.

Where ANALYZE cannot serve (a column type it skips, a table it refuses), the same statistics come
from one aggregate query. Either way, columns whose distinct count is close to their non-null
row count are checked exactly (``COUNT(DISTINCT …)``): a column marked unique is one.

The analysed tables stay in the session catalog, so that Spark's own cost-based optimizer can
be compared against tempura's estimates in the same session.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import TYPE_CHECKING, Callable

from tempura.catalog import Catalog, TableSource
from tempura.errors import CatalogError
from tempura.sql.names import quote_identifier
from tempura.stats.model import ColumnStats, Histogram, HistogramBin, Kind, TableStats, kind_of, step_of
from tempura.stats.store import StatsStore, file_state
from tempura.stats.values import NotConstant, encode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ProgressCallback = Callable[[str, int, int], None]

STATS_DATABASE = "tempura_stats"
HISTOGRAM_BINS = 64
NDV_MAX_ERROR = 0.02  # HyperLogLog++ relative error (Spark's default is 0.05)
SAMPLE_SIZE = 300  # values kept per string column, for LIKE estimates
SAMPLE_SEED = 7
UNIQUE_CHECK_RATIO = 0.9  # check exactly when ndv >= this share of non-null rows

_PLAIN = re.compile(r"[A-Za-z0-9_]+")
_STAT_ROW = re.compile(r"^\s*([\d.]+)\s+bytes(?:,\s*([\d.]+)\s+rows)?", re.IGNORECASE)
_BIN_ROW = re.compile(r"lower_bound:\s*(\S+),\s*upper_bound:\s*(\S+),\s*distinct_count:\s*(\d+)")
_HEIGHT_ROW = re.compile(r"height:\s*([\d.eE+-]+),\s*num_of_bins:\s*(\d+)")


quote = quote_identifier


def qualified(table: str) -> str:
    """The statistics database's table for source ``table``: under its own name when Spark's
    catalog takes it, else under a name derived from it (a catalog table name cannot hold a
    backtick, even quoted)."""
    name = table if _PLAIN.fullmatch(table) else "t_" + hashlib.sha1(table.encode("utf-8")).hexdigest()[:16]
    return f"{quote(STATS_DATABASE)}.{quote(name)}"


def register_external(spark: SparkSession, source: TableSource, columns: dict[str, str]) -> str:
    """Declare ``source`` as an external table of the session catalog (a catalog table whose
    files only the table reads: a temporary view of it); returns its name."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(STATS_DATABASE)}")
    name = qualified(source.name)
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    if source.table is not None and not source.format:
        view = quote(f"stats_{source.name}")
        source.reader(spark).createOrReplaceTempView(view)
        return view
    column_list = ""
    if source.format in ("csv", "json"):
        column_list = " (" + ", ".join(f"{quote(c)} {t}" for c, t in columns.items()) + ")"
    options = ""
    if source.options:
        options = " OPTIONS (" + ", ".join(f"{quote(k)} '{_escape(str(v))}'" for k, v in source.options.items()) + ")"
    spark.sql(f"CREATE TABLE {name}{column_list} USING {source.format}{options} LOCATION '{_escape(source.path)}'")
    return name


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _describe(spark: SparkSession, sql: str) -> list[tuple[str, str]]:
    return [(str(r[0]).strip(), "" if r[1] is None else str(r[1]).strip()) for r in spark.sql(sql).collect()]


def _parse_value(text: str, kind: Kind) -> float | None:
    if not text or text.upper() == "NULL":
        return None
    try:
        value = encode(text, kind)
    except NotConstant:
        return None
    return value if isinstance(value, float) else None


def _histogram_bound(text: str, kind: Kind) -> float:
    """Spark prints histogram bounds as doubles: days for dates, microseconds for timestamps."""
    value = float(text)
    return value / 1e6 if kind == "timestamp" else value


def read_column_stats(spark: SparkSession, table: str, column: str, type_name: str) -> ColumnStats | None:
    """One column's statistics from ``DESCRIBE TABLE EXTENDED``; ``None`` if it has none."""
    rows = _describe(spark, f"DESCRIBE TABLE EXTENDED {table} {quote(column)}")
    info = {k: v for k, v in rows if not k.startswith("bin_")}
    if info.get("distinct_count", "NULL").upper() == "NULL" and info.get("num_nulls", "NULL").upper() == "NULL":
        return None
    kind = kind_of(type_name)

    def number(key: str) -> float | None:
        value = info.get(key, "NULL")
        return None if value.upper() == "NULL" else float(value)

    histogram = None
    bins = [_BIN_ROW.search(v) for k, v in rows if k.startswith("bin_")]
    height = _HEIGHT_ROW.search(info.get("histogram", ""))
    if height and bins and all(bins):
        per_bin = float(height.group(1))
        histogram = Histogram(
            tuple(
                HistogramBin(_histogram_bound(m.group(1), kind), _histogram_bound(m.group(2), kind), float(m.group(3)), per_bin)
                for m in bins
                if m is not None
            )
        )
    return ColumnStats(
        kind=kind,
        ndv=number("distinct_count"),
        nulls=number("num_nulls"),
        min=_parse_value(info.get("min", ""), kind),
        max=_parse_value(info.get("max", ""), kind),
        avg_len=number("avg_col_len"),
        max_len=number("max_col_len"),
        histogram=histogram,
        step=step_of(type_name),
    )


def read_table_size(spark: SparkSession, table: str) -> tuple[float, float] | None:
    """``(rows, bytes)`` from the ``Statistics`` row of ``DESCRIBE TABLE EXTENDED``."""
    for key, value in _describe(spark, f"DESCRIBE TABLE EXTENDED {table}"):
        if key == "Statistics":
            match = _STAT_ROW.match(value)
            if match and match.group(2) is not None:
                return float(match.group(2)), float(match.group(1))
    return None


def aggregate_stats(spark: SparkSession, table: str, columns: dict[str, str]) -> tuple[float, dict[str, ColumnStats]]:
    """Row count and column statistics from one aggregate query (no histograms)."""
    exprs = ["COUNT(*) AS `__rows`"]
    for i, (name, type_name) in enumerate(columns.items()):
        c = quote(name)
        kind = kind_of(type_name)
        exprs.append(f"APPROX_COUNT_DISTINCT({c}, {NDV_MAX_ERROR}) AS `d{i}`")
        exprs.append(f"COUNT({c}) AS `n{i}`")
        if kind in ("number", "date", "timestamp"):
            exprs.append(f"MIN({c}) AS `lo{i}`")
            exprs.append(f"MAX({c}) AS `hi{i}`")
        if kind == "string":
            exprs.append(f"AVG(OCTET_LENGTH({c})) AS `al{i}`")
            exprs.append(f"MAX(OCTET_LENGTH({c})) AS `ml{i}`")
    row = spark.sql(f"SELECT {', '.join(exprs)} FROM {table}").collect()[0].asDict()
    rows = float(row["__rows"])
    out: dict[str, ColumnStats] = {}
    for i, (name, type_name) in enumerate(columns.items()):
        kind = kind_of(type_name)
        lo, hi = row.get(f"lo{i}"), row.get(f"hi{i}")
        out[name] = ColumnStats(
            kind=kind,
            ndv=float(row[f"d{i}"]),
            nulls=rows - float(row[f"n{i}"]),
            min=None if lo is None else _as_float(encode(lo, kind)),
            max=None if hi is None else _as_float(encode(hi, kind)),
            avg_len=None if row.get(f"al{i}") is None else float(row[f"al{i}"]),
            max_len=None if row.get(f"ml{i}") is None else float(row[f"ml{i}"]),
            step=step_of(type_name),
        )
    return rows, out


def _as_float(value: object) -> float | None:
    return value if isinstance(value, float) else None


def check_unique(spark: SparkSession, table: str, columns: dict[str, ColumnStats], rows: float) -> dict[str, ColumnStats]:
    """Exact distinct counts for the columns that may be keys; marks the unique ones."""
    candidates = [
        name
        for name, c in columns.items()
        if c.ndv is not None and rows > 0 and c.ndv >= UNIQUE_CHECK_RATIO * (rows - (c.nulls or 0.0)) and c.kind != "boolean"
    ]
    if not candidates:
        return columns
    exprs = [f"COUNT(DISTINCT {quote(c)}) AS `u{i}`, COUNT({quote(c)}) AS `n{i}`" for i, c in enumerate(candidates)]
    row = spark.sql(f"SELECT {', '.join(exprs)} FROM {table}").collect()[0].asDict()
    out = dict(columns)
    for i, name in enumerate(candidates):
        distinct, nonnull = float(row[f"u{i}"]), float(row[f"n{i}"])
        out[name] = columns[name].replace(ndv=distinct, unique=distinct == nonnull and nonnull > 0)
    return out


def sample_strings(spark: SparkSession, table: str, columns: dict[str, ColumnStats], rows: float) -> dict[str, ColumnStats]:
    """A seeded random sample of each string column's non-null values."""
    names = [name for name, c in columns.items() if c.kind == "string"]
    if not names or rows <= 0:
        return columns
    fraction = min(1.0, 3.0 * SAMPLE_SIZE / rows)
    frame = spark.table(table).select(*[quote(n) for n in names]).sample(False, fraction, seed=SAMPLE_SEED)
    picked = frame.limit(SAMPLE_SIZE).collect()
    out = dict(columns)
    for i, name in enumerate(names):
        values = tuple(str(r[i]) for r in picked if r[i] is not None)
        if values:
            out[name] = columns[name].replace(sample=values)
    return out


def analyze_table(
    spark: SparkSession, source: TableSource, columns: dict[str, str], histograms: bool = True
) -> TableStats:
    """Statistics of one table, through ANALYZE (or the aggregate query where it cannot serve)."""
    source = source.located(spark)
    state = file_state(source, spark)
    name = register_external(spark, source, columns)
    method: str = "analyze"
    previous = spark.conf.get("spark.sql.statistics.histogram.enabled", "false") or "false"
    spark.conf.set("spark.sql.statistics.histogram.enabled", "true" if histograms else "false")
    spark.conf.set("spark.sql.statistics.histogram.numBins", str(HISTOGRAM_BINS))
    spark.conf.set("spark.sql.statistics.ndv.maxError", str(NDV_MAX_ERROR))
    try:
        spark.sql(f"ANALYZE TABLE {name} COMPUTE STATISTICS FOR ALL COLUMNS")
        size = read_table_size(spark, name)
        if size is None:
            raise RuntimeError("ANALYZE left no row count")
        rows, table_bytes = size
        stats: dict[str, ColumnStats] = {}
        missing: dict[str, str] = {}
        for column, type_name in columns.items():
            found = read_column_stats(spark, name, column, type_name)
            if found is None:
                missing[column] = type_name
            else:
                stats[column] = found
        if missing:
            _, extra = aggregate_stats(spark, name, missing)
            stats.update(extra)
    except Exception as error:  # ANALYZE refused the table: fall back to one aggregate query
        if isinstance(error, CatalogError):
            raise
        method = "aggregate"
        try:
            rows, stats = aggregate_stats(spark, name, columns)
        except Exception as failure:  # Spark's errors carry JVM traces: keep their first line
            first = str(failure).strip().splitlines()[0] if str(failure).strip() else type(failure).__name__
            raise CatalogError(f"table '{source.name}': cannot collect statistics: {first}") from None
        table_bytes = state.bytes if state is not None else 0.0
    finally:
        spark.conf.set("spark.sql.statistics.histogram.enabled", previous)
    stats = check_unique(spark, name, stats, rows)
    stats = sample_strings(spark, name, stats, rows)
    return TableStats(
        rows=rows,
        bytes=table_bytes,
        columns={c: stats[c] for c in columns if c in stats},
        source=method,  # type: ignore[arg-type]
        fingerprint=state.digest if state is not None else "",
        file_bytes=state.bytes if state is not None else 0.0,
        collected_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )


def analyze_tables(
    spark: SparkSession,
    catalog: Catalog,
    tables: list[str],
    store: StatsStore,
    histograms: bool = True,
    progress: ProgressCallback | None = None,
) -> dict[str, TableStats]:
    """Analyse ``tables`` and store their statistics; ``progress(table, done, total)`` is called
    before each table and once at the end."""
    sources = [catalog.table(t) for t in tables]
    schemas = catalog.schemas(spark)
    results: dict[str, TableStats] = {}
    for i, source in enumerate(sources):
        if progress is not None:
            progress(source.name, i, len(sources))
        stats = analyze_table(spark, source, schemas[source.name], histograms)
        store.save(source.name, stats)
        results[source.name] = stats
    if progress is not None:
        progress("", len(sources), len(sources))
    return results
