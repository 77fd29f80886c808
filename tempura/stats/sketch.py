"""Statistics kept up to date from the delta alone: mergeable sketches of each column.

A standing query's sources grow at every time point. Analysing a source whole again each time
costs what the history costs, so a job's statistics are instead *maintained*:

- **The first collection** is one aggregate pass over the source's files
  (:func:`collect_sketch`), the same aggregate the landing computes.
- **Each landed interval** is sketched as a by-product of landing it: the aggregate is observed
  on the rows being written (:func:`observe_sketch`, Spark's ``DataFrame.observe``), so the
  new rows are read once, for the landing and its statistics together.
- **The two are merged** (:meth:`TableSketch.merged`), and the merged sketch becomes the
  source's statistics (:meth:`TableSketch.to_stats`).

Per column the sketch holds counts, min and max, string lengths, a HyperLogLog sketch of its
distinct values (Spark's ``hll_sketch_agg``, merged with ``hll_union``) and a KLL quantile
sketch of an orderable column's values (``kll_sketch_agg_double``, merged with
``kll_sketch_merge_double``), from which an equi-height histogram is read. The two sketches
cover only the columns a query's estimates compare rows on (:mod:`tempura.stats.needs`), and a
large interval's quantiles, and a column of few values' distinct values, are drawn from a
sample (:class:`Sample`). Merging runs as a
query over literals that Spark folds to constants: no job, no data read.

**Deletions** (a change feed's ``D`` rows) adjust the counts exactly: the rows, and each
column's nulls, lose the deleted rows'. Sketches cannot forget a value, so a deleted row's value
stays in the distinct count, the quantiles and the range: those stay upper bounds (the distinct
count is capped by the rows), a conservative error that grows with the share of deletions.

The sketch records the files it covers, so a landing of files the first collection already read
adds nothing again (and a time point run again after a crash does not count its files twice).
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Collection, Iterable, Mapping, Sequence

from tempura.sql.names import quote_identifier
from tempura.stats.model import ORDERABLE, ColumnStats, Histogram, HistogramBin, Kind, TableStats, kind_of, step_of
from tempura.stats.footers import KnownCounts
from tempura.stats.values import encode

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

HLL_LG_K = 12  # 4,096 buckets: about 1.6% relative error
HISTOGRAM_BINS = 64


@dataclass(frozen=True)
class ColumnSketch:
    """One column's mergeable statistics: counts of the rows inserted (``count``: non-null,
    ``nulls``) and deleted (``deleted_nulls``), range, string lengths and two sketches."""

    type_name: str
    count: int = 0
    nulls: int = 0
    deleted_nulls: int = 0
    min: float | None = None
    max: float | None = None
    length_sum: float = 0.0
    max_len: float | None = None
    hll: bytes | None = None
    kll: bytes | None = None

    @property
    def kind(self) -> Kind:
        return kind_of(self.type_name)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type_name, "count": self.count, "nulls": self.nulls,
                               "deleted_nulls": self.deleted_nulls, "length_sum": self.length_sum}
        for name in ("min", "max", "max_len"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("hll", "kll"):
            value = getattr(self, name)
            if value is not None:
                out[name] = base64.b64encode(value).decode("ascii")
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ColumnSketch:
        def blob(name: str) -> bytes | None:
            return base64.b64decode(data[name]) if data.get(name) else None

        def num(name: str) -> float | None:
            return None if data.get(name) is None else float(data[name])

        return cls(str(data["type"]), int(data.get("count", 0)), int(data.get("nulls", 0)),
                   int(data.get("deleted_nulls", 0)), num("min"), num("max"), float(data.get("length_sum", 0.0)),
                   num("max_len"), blob("hll"), blob("kll"))


@dataclass(frozen=True)
class TableSketch:
    """A source's mergeable statistics: rows inserted and deleted, each column's sketch, and the
    files whose rows they cover."""

    inserted: int = 0
    deleted: int = 0
    columns: Mapping[str, ColumnSketch] = field(default_factory=dict)
    files: frozenset[str] = frozenset()

    @property
    def rows(self) -> int:
        return max(0, self.inserted - self.deleted)

    def to_json(self) -> dict[str, Any]:
        return {"inserted": self.inserted, "deleted": self.deleted, "files": sorted(self.files),
                "columns": {name: c.to_json() for name, c in self.columns.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableSketch:
        return cls(int(data.get("inserted", 0)), int(data.get("deleted", 0)),
                   {name: ColumnSketch.from_json(c) for name, c in data.get("columns", {}).items()},
                   frozenset(str(f) for f in data.get("files", [])))

    def merged(self, other: TableSketch, spark: SparkSession) -> TableSketch:
        """This sketch and ``other``'s (of other rows) as one: counts added, ranges widened,
        sketches unioned (Spark folds the union of two literals to a constant)."""
        names = [n for n in {**self.columns, **other.columns}]
        unions: list[str] = []
        args: dict[str, Any] = {}
        for i, name in enumerate(names):
            a, b = self.columns.get(name), other.columns.get(name)
            for what, merge in (("hll", "hll_union({a}, {b}, TRUE)"), ("kll", "kll_sketch_merge_double({a}, {b})")):
                x, y = getattr(a, what, None), getattr(b, what, None)
                if x is not None and y is not None:
                    args[f"{what}a{i}"], args[f"{what}b{i}"] = x, y
                    unions.append(merge.format(a=f":{what}a{i}", b=f":{what}b{i}") + f" AS `{what}{i}`")
        folded = spark.sql(f"SELECT {', '.join(unions)}", args=args).collect()[0].asDict() if unions else {}
        columns: dict[str, ColumnSketch] = {}
        for i, name in enumerate(names):
            a, b = self.columns.get(name), other.columns.get(name)
            if a is None or b is None:
                either = a or b
                if either is not None:
                    columns[name] = either
                continue
            columns[name] = ColumnSketch(
                a.type_name, a.count + b.count, a.nulls + b.nulls, a.deleted_nulls + b.deleted_nulls,
                _pick(min, a.min, b.min), _pick(max, a.max, b.max), a.length_sum + b.length_sum,
                _pick(max, a.max_len, b.max_len),
                bytes(folded[f"hll{i}"]) if f"hll{i}" in folded else _lone(a, b, "hll"),
                bytes(folded[f"kll{i}"]) if f"kll{i}" in folded else _lone(a, b, "kll"))
        return TableSketch(self.inserted + other.inserted, self.deleted + other.deleted, columns,
                           self.files | other.files)

    def to_stats(self, spark: SparkSession, fingerprint: str = "", file_bytes: float = 0.0,
                 table_bytes: float = 0.0) -> TableStats:
        """The statistics the estimator reads, carrying this sketch: distinct counts from the HLL
        sketches (capped by the rows), an equi-height histogram from each KLL sketch.
        ``table_bytes``: the bytes of the files covered (else the rows at the columns' widths)."""
        rows = self.rows
        names = list(self.columns)
        exprs: list[str] = []
        args: dict[str, Any] = {}
        ranks = ", ".join(f"{i / HISTOGRAM_BINS:.6f}" for i in range(HISTOGRAM_BINS + 1))
        for i, name in enumerate(names):
            c = self.columns[name]
            if c.hll is not None:
                args[f"h{i}"] = c.hll
                exprs.append(f"hll_sketch_estimate(:h{i}) AS `d{i}`")
            if c.kll is not None:
                args[f"k{i}"] = c.kll
                exprs.append(f"kll_sketch_get_quantile_double(:k{i}, array({ranks})) AS `q{i}`")
        found = spark.sql(f"SELECT {', '.join(exprs)}", args=args).collect()[0].asDict() if exprs else {}
        columns: dict[str, ColumnStats] = {}
        for i, name in enumerate(names):
            c = self.columns[name]
            nulls = float(max(0, c.nulls - c.deleted_nulls))
            nonnull = max(0.0, rows - nulls)
            ndv = None if f"d{i}" not in found else float(min(found[f"d{i}"], nonnull))
            if ndv is not None and nonnull > 0:
                ndv = max(1.0, ndv)
            histogram = _histogram(found.get(f"q{i}"), nonnull, ndv) if c.kind in ORDERABLE else None
            columns[name] = ColumnStats(
                kind=c.kind, ndv=ndv, nulls=nulls, min=c.min, max=c.max,
                avg_len=c.length_sum / c.count if c.kind == "string" and c.count else None,
                max_len=c.max_len if c.kind == "string" else None, histogram=histogram, step=step_of(c.type_name))
        size = table_bytes or float(rows) * sum(_width(c) for c in self.columns.values())
        return TableStats(rows=float(rows), bytes=size, columns=columns, source="sketch",
                          fingerprint=fingerprint, file_bytes=file_bytes,
                          collected_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                          sketch=self.to_json())


def _lone(a: ColumnSketch, b: ColumnSketch, what: str) -> bytes | None:
    """The one sketch ``what`` of two columns' where only one has it: kept when the other covers
    no value (a sketch of nothing), else unknown (a column sketched for counts and range only, by
    :func:`sketch_columns`'s ``distributions``, has no distinct values to merge with)."""
    x, y = getattr(a, what), getattr(b, what)
    if x is not None and y is None:
        return x if b.count == 0 else None
    if y is not None and x is None:
        return y if a.count == 0 else None
    return None


def _pick(choose: Any, a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return choose(values) if values else None


def _width(c: ColumnSketch) -> float:
    if c.kind == "string":
        return 8.0 + (c.length_sum / c.count if c.count else 20.0)
    return 8.0


def _histogram(quantiles: Iterable[float] | None, rows: float, ndv: float | None) -> Histogram | None:
    """Equi-height bins between consecutive quantiles, each holding an equal share of ``rows``;
    a bin's distinct values an equal share of ``ndv`` (at most its rows)."""
    if quantiles is None or rows <= 0:
        return None
    bounds = [float(q) for q in quantiles if q is not None and math.isfinite(float(q))]
    if len(bounds) < 2:
        return None
    per_bin = rows / (len(bounds) - 1)
    distinct = min(per_bin, (ndv or per_bin * (len(bounds) - 1)) / (len(bounds) - 1))
    return Histogram(tuple(HistogramBin(lo, hi, max(1.0, distinct), per_bin) for lo, hi in zip(bounds, bounds[1:])))


def _ordered(column: Column, kind: Kind) -> Column | None:
    """``column`` on the statistics' number line as a double (days for a date, seconds for a
    timestamp), for the quantile sketch; ``None`` for an unordered kind."""
    from pyspark.sql import functions as F

    if kind == "number":
        return column.cast("double")
    if kind == "date":
        return F.unix_date(column).cast("double")
    if kind == "timestamp":
        return (F.unix_micros(column.cast("timestamp")) / 1e6).cast("double")
    return None


def sketch_columns(columns: Mapping[str, str], keep: Column | None = None, deleted: Column | None = None,
                   distributions: Collection[str] | None = None, sample: Sample | None = None,
                   known: Collection[str] = ()) -> list[Column]:
    """The aggregate that sketches ``columns`` (name: Spark type) over the rows ``keep`` selects
    (all when ``None``); ``deleted``: the condition of a deletion among them (a change feed's
    ``D`` rows), counted apart and left out of the sketches. Without either, no row is tested.
    ``distributions``: the columns whose distinct values and quantiles are sketched (all when
    ``None``); the others get their counts, range and lengths only
    (:func:`tempura.stats.needs.compared_columns` says which a query's estimates read).
    ``sample``: the quantiles, and the distinct values of its columns of few values, are
    sketched over a random share of the rows only (:class:`Sample`); counts and ranges never.
    ``known``: columns whose counts and range are known already (from the files' footers,
    :mod:`tempura.stats.footers`), which the aggregate leaves out."""
    from pyspark.sql import functions as F

    kept = keep if keep is not None else F.lit(True)
    inserted = (kept & ~deleted if keep is not None else ~deleted) if deleted is not None else keep

    def only(value: Column) -> Column:  # ``value`` for the inserted rows, NULL for others
        return F.when(inserted, value) if inserted is not None else value

    out = [F.count(only(F.lit(1))).alias("__inserted")]
    out.append(F.count(F.when(kept & deleted, F.lit(1))).alias("__deleted") if deleted is not None
               else F.lit(0).alias("__deleted"))
    drawn = sample.drawn() if sample is not None else None
    for i, (name, type_name) in enumerate(columns.items()):
        column = F.col(quote_identifier(name))
        kind = kind_of(type_name)
        value = only(column)
        ordered = _ordered(column, kind)
        if name not in known:
            out.append(F.count(value).alias(f"n{i}"))
            out.append(F.count(F.when(inserted & column.isNull() if inserted is not None else column.isNull(),
                                      F.lit(1))).alias(f"z{i}"))
            out.append((F.count(F.when(kept & deleted & column.isNull(), F.lit(1))) if deleted is not None
                        else F.lit(0)).alias(f"y{i}"))
            if ordered is not None:
                out.append(F.min(value).alias(f"lo{i}"))
                out.append(F.max(value).alias(f"hi{i}"))
        if distributions is None or name in distributions:
            if type_name.lower() in ("int", "integer", "bigint", "long", "string"):
                distinct = column
            elif type_name.lower() in ("smallint", "tinyint", "short", "byte"):
                distinct = column.cast("int")
            else:  # every other type by its hash (a NULL hashes too: kept out below)
                distinct = F.when(column.isNotNull(), F.xxhash64(column))
            if drawn is not None and sample is not None and name in sample.few:
                distinct = F.when(drawn, distinct)
            out.append(F.hll_sketch_agg(only(distinct), HLL_LG_K).alias(f"h{i}"))
            if ordered is not None:
                out.append(F.kll_sketch_agg_double(only(F.when(drawn, ordered) if drawn is not None else ordered))
                           .alias(f"k{i}"))
        if kind == "string":
            out.append(F.sum(F.octet_length(value)).alias(f"ls{i}"))
            out.append(F.max(F.octet_length(value)).alias(f"lm{i}"))
    return out


SAMPLE_ROWS = 65_536  # rows a sampled sketch draws: quantiles within about 0.4%, below the KLL sketch's own error
FEW_VALUES = 0.01  # a column "of few values": distinct values at most this share of the rows
DRAWN = "__drawn"  # whether a row is in a sketch's sample


@dataclass(frozen=True)
class Sample:
    """A random share ``fraction`` of a sketch's rows, over which quantiles are sketched, and
    the distinct values of the columns ``few``: those the statistics so far found few values
    in (at most :data:`FEW_VALUES` of the rows). A sample of :data:`SAMPLE_ROWS` rows sees every
    value that one row in 10,000 holds, with a chance of missing it below 0.2%; a column of
    many values (a key) is sketched over every row, as a sample would undercount it."""

    fraction: float
    few: frozenset[str] = frozenset()
    seed: int = 7

    def drawn(self) -> Column | None:
        """Whether a row is in the sample (``None``: every row is): the column :meth:`draw` adds."""
        from pyspark.sql import functions as F

        return None if self.fraction >= 1.0 else F.col(DRAWN)

    def draw(self, frame: DataFrame) -> DataFrame:
        """``frame`` with the column :meth:`drawn` reads. It is drawn in a projection of its own:
        a random number is not an expression Spark lets an observation evaluate."""
        from pyspark.sql import functions as F

        return frame if self.fraction >= 1.0 else frame.withColumn(DRAWN, F.rand(self.seed) < F.lit(self.fraction))

    @classmethod
    def for_rows(cls, expected: float, stats: TableStats | None) -> Sample | None:
        """The sample for a sketch of about ``expected`` rows of a source whose statistics so
        far are ``stats``; ``None`` when every row is sketched (few rows, or no statistics)."""
        if stats is None or expected <= SAMPLE_ROWS:
            return None
        few = frozenset(name for name, c in stats.columns.items()
                        if c.ndv is not None and stats.rows > 0 and c.ndv <= FEW_VALUES * stats.rows)
        return cls(SAMPLE_ROWS / expected, few)


def read_sketch(values: Mapping[str, Any], columns: Mapping[str, str], files: Iterable[str] = (),
                known: Mapping[str, KnownCounts] | None = None) -> TableSketch:
    """The :class:`TableSketch` of one :func:`sketch_columns` aggregate's result row (and the
    counts and ranges ``known`` without it)."""
    out = {}
    values = dict(values)
    for i, (name, type_name) in enumerate(columns.items()):
        kind = kind_of(type_name)
        told = (known or {}).get(name)
        if told is not None:
            values.update({f"n{i}": told.count, f"z{i}": told.nulls, f"y{i}": 0})
            if told.min is not None and told.max is not None:
                values.update({f"lo{i}": told.min, f"hi{i}": told.max})

        def number(key: str) -> float | None:
            value = values.get(key)
            if value is None:
                return None
            encoded = encode(value, kind)
            return encoded if isinstance(encoded, float) else None

        hll, kll = values.get(f"h{i}"), values.get(f"k{i}")
        out[name.lower()] = ColumnSketch(
            type_name, int(values.get(f"n{i}") or 0), int(values.get(f"z{i}") or 0), int(values.get(f"y{i}") or 0),
            number(f"lo{i}"), number(f"hi{i}"), float(values.get(f"ls{i}") or 0.0),
            None if values.get(f"lm{i}") is None else float(values[f"lm{i}"]),
            bytes(hll) if hll is not None and values.get(f"n{i}") else None,
            bytes(kll) if kll is not None and values.get(f"n{i}") else None)
    return TableSketch(int(values.get("__inserted") or 0), int(values.get("__deleted") or 0), out, frozenset(files))


def collect_sketch(frame: DataFrame, columns: Mapping[str, str], files: Iterable[str] = (),
                   deleted: Column | None = None, intervals: Sequence[Column] = (),
                   distributions: Collection[str] | None = None) -> tuple[TableSketch, list[tuple[int, int]]]:
    """The sketch of ``frame``'s ``columns`` in one aggregate pass (a source's first collection);
    and, in the same pass, the rows and deletions matching each of ``intervals`` (conditions)."""
    from pyspark.sql import functions as F

    counts = []
    for i, inside in enumerate(intervals):
        counts.append(F.count(F.when(inside, F.lit(1))).alias(f"__in{i}"))
        counts.append((F.count(F.when(inside & deleted, F.lit(1))) if deleted is not None else F.lit(0)).alias(f"__del{i}"))
    row = frame.agg(*sketch_columns(columns, deleted=deleted, distributions=distributions), *counts).collect()[0].asDict()
    found = [(int(row[f"__in{i}"] or 0), int(row[f"__del{i}"] or 0)) for i in range(len(intervals))]
    return read_sketch(row, columns, files), found


class ObservedSketch:
    """A sketch computed while Spark reads a frame for another purpose (writing a landed
    interval, or a fragment reading it): :meth:`attach` adds the aggregate to the frame as an
    observation; once a job has run it, :meth:`result` reads it. ``name`` tells it from the
    other sketches one plan may observe (one per source)."""

    def __init__(self, columns: Mapping[str, str], files: Iterable[str], keep: Column | None = None,
                 deleted: Column | None = None, distributions: Collection[str] | None = None,
                 sample: Sample | None = None, name: str = "tempura_sketch",
                 known: Mapping[str, KnownCounts] | None = None) -> None:
        from pyspark.sql import Observation

        self.known = dict(known or {})  # columns whose counts and range the files' footers told
        self.columns = dict(columns)
        self.files = frozenset(files)
        self.keep, self.deleted = keep, deleted
        self.distributions, self.sample = distributions, sample
        self.name = name
        self.observation = Observation(name)
        self.attached = False

    def attach(self, frame: DataFrame) -> DataFrame:
        """``frame``, observed; an observation is made on one frame only, so a second
        ``frame`` is returned as it is."""
        if self.attached:
            return frame
        self.attached = True
        drawn = self.sample.draw(frame) if self.sample is not None else frame
        observed = drawn.observe(
            self.observation, *sketch_columns(self.columns, self.keep, self.deleted, self.distributions, self.sample,
                                              known=set(self.known)))
        return observed.drop(DRAWN) if DRAWN in observed.columns else observed

    def done(self, wait: float = 0.0) -> bool:
        """Whether a job has run the observation (waiting up to ``wait`` seconds: Spark reports
        it from its listener thread, just after the job). One attached to a frame no job ran
        never is: :meth:`result` would wait for it for ever."""
        if not self.attached or self.observation._jo is None:
            return False
        future = self.observation._jo.future()
        deadline = time.monotonic() + wait
        while not future.isCompleted():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def again(self) -> ObservedSketch:
        """The same sketch, not yet attached: to observe on a pass of its own."""
        return ObservedSketch(self.columns, self.files, self.keep, self.deleted, self.distributions, self.sample,
                              self.name, self.known)

    def result(self) -> TableSketch:
        return read_sketch(self.observation.get, self.columns, self.files, self.known)

