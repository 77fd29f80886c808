"""Keyed layouts on Spark: landing an interval hash-bucketed, and reading only some buckets.

A laid-out folder holds one sub-folder per non-empty bucket, ``tempura_bucket=<b>/`` (Spark's
``partitionBy``), its rows those whose key hashes to ``b`` (:class:`~tempura.tvr.layout.Layout`:
``pmod(xxhash64(key), N)``, an integer key as ``BIGINT``). A read of the whole folder lists the
bucket folders' files like any other; a **pruned read** passes Spark only the folders of the
buckets a probe's keys fall in (:func:`probe_buckets`, one small job over the probing side), as
leaf folders, so no partition column appears. What it selected against the whole is counted
from the files' sizes (:class:`PrunedRead`), not from Spark's input metrics.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from tempura.errors import ExecutionError
from tempura.runtime.executor import spark_error_message, spark_errors
from tempura.runtime.files import uri
from tempura.runtime.storage import Location
from tempura.sql.names import quote_identifier
from tempura.runtime.sources import _time_literal
from tempura.tvr.layout import BUCKET, Layout, Since, slices_after
from tempura.tvr.time import TimeValue

if TYPE_CHECKING:
    from tempura.runtime.store import JobStore
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

INTEGRAL = ("byte", "short", "integer", "long")


def key_class(dtype: DataType) -> str:
    """What a key hashes as: integers as one class (hashed as ``BIGINT``), every other type as
    itself. A probe prunes only a read whose key is of its own class."""
    name = dtype.typeName()
    return "integer" if name in INTEGRAL else dtype.simpleString()


def bucket_of(column: Column, dtype: DataType, buckets: int) -> Column:
    """The bucket of each value of ``column`` (of type ``dtype``) among ``buckets``."""
    from pyspark.sql import functions as F

    key = column.cast("bigint") if key_class(dtype) == "integer" else column
    return F.pmod(F.xxhash64(key), F.lit(buckets)).cast("int")


def slice_of(column: Column, bounds: Sequence[TimeValue]) -> Column:
    """The time slice of each arrival value of ``column``: how many of ``bounds`` are below it
    (:func:`~tempura.tvr.layout.slice_bounds`)."""
    from pyspark.sql import functions as F

    out = F.lit(0)
    for bound in bounds:
        out = out + F.when(column > _time_literal(bound), 1).otherwise(0)
    return out.cast("int")


def write_laid_out(frame: DataFrame, layout: Layout, target: Location | str,
                   bounds: Sequence[TimeValue] = ()) -> None:
    """Write ``frame`` (replacing ``target``) as parquet, one folder per bucket of ``layout``,
    each bucket's rows in one file; a sliced layout's buckets are the time slices ``bounds``
    split its arrival column into."""
    from pyspark.sql import functions as F

    key = F.col(quote_identifier(layout.column))
    if layout.sliced:
        if len(bounds) != layout.buckets - 1:
            raise ExecutionError(f"a landing in {layout.buckets} time slices needs {layout.buckets - 1} bounds, not {len(bounds)}")
        bucketed = frame.withColumn(BUCKET, slice_of(key, bounds))
    else:
        bucketed = frame.withColumn(BUCKET, bucket_of(key, frame.schema[layout.column].dataType, layout.buckets))
    try:
        bucketed.repartition(F.col(BUCKET)).write.mode("overwrite").partitionBy(BUCKET).parquet(uri(target))
    except spark_errors() as error:
        raise ExecutionError(f"writing {target} failed: {spark_error_message(error)}") from None


def bucket_folder(folder: str, bucket: int) -> str:
    return f"{folder.rstrip('/')}/{BUCKET}={bucket}"


def probe_buckets(keys: DataFrame, column: str, layouts: Iterable[Layout]) -> dict[int, set[int]]:
    """Per bucket count of ``layouts``, the buckets the values of ``keys``' ``column`` fall in
    (one job)."""
    from pyspark.sql import functions as F

    counts = sorted({layout.buckets for layout in layouts})
    dtype = keys.schema[column].dataType
    col = F.col(quote_identifier(column))
    rows = keys.select(*[bucket_of(col, dtype, n).alias(f"b{n}") for n in counts]).distinct().collect()
    return {n: {int(row[f"b{n}"]) for row in rows} for n in counts}


@dataclass
class PrunedRead:
    """What a pruned read selected of a source's landed folders: buckets (or time slices) and bytes."""

    read: str
    column: str
    buckets_read: int = 0
    buckets: int = 0
    bytes_read: int = 0
    bytes: int = 0  # of the whole read: every folder it would read unpruned
    sliced: bool = False  # time slices left out by the arrival bound, rather than buckets by a probe's keys

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Pruning:
    """A pruned read: its key ``column`` (of type ``dtype``), the buckets its probe's keys fall
    in per bucket count (``touched``), and what it selected (``read``). Its rows are those whose
    key falls in a touched bucket under every bucket count in use (:attr:`where`), in every
    interval, laid out or not, so that an insertion and its deletion are kept or left together."""

    column: str
    dtype: DataType
    touched: dict[int, set[int]]
    read: PrunedRead

    def usable(self, layout: Layout | None) -> Layout | None:
        """``layout`` if the read can take only some of its buckets."""
        return layout if layout is not None and layout.hashes(self.column) else None

    @property
    def where(self) -> Column:
        from pyspark.sql import functions as F

        key = F.col(quote_identifier(self.column))
        out = None
        for n, hit in sorted(self.touched.items()):
            term = bucket_of(key, self.dtype, n).isin(sorted(hit)) if hit else F.lit(False)
            out = term if out is None else out & term
        return out if out is not None else F.lit(True)


def select_buckets(folders: Sequence[str], listings: Sequence[Mapping[str, int]], layouts: Sequence[Layout | None],
                   touched: dict[int, set[int]], read: PrunedRead) -> list[str]:
    """The folders to read of ``folders`` (each listed by its entry of ``listings``: files by
    path relative to it, with sizes; laid out by its entry of ``layouts``, or not): a laid-out
    one's touched bucket folders, any other whole; ``read`` counts what they hold."""
    hits = [touched.get(layout.buckets, set()) if layout is not None else None for layout in layouts]
    return select_folders(folders, listings, [x.buckets if x is not None else 0 for x in layouts], hits, read)


def select_folders(folders: Sequence[str], listings: Sequence[Mapping[str, int]], counts: Sequence[int],
                   hits: Sequence[set[int] | None], read: PrunedRead) -> list[str]:
    """The folders to read of ``folders`` (each listed by its entry of ``listings``), each split
    into its entry of ``counts`` buckets (or slices) of which those of ``hits`` are read (``None``:
    the folder whole); ``read`` counts what they hold."""
    out = []
    for folder, listed, count, hit in zip(folders, listings, counts, hits):
        size = sum(listed.values())
        read.bytes += size
        if hit is None:
            out.append(folder)
            read.bytes_read += size
            continue
        read.buckets += count
        per_bucket: dict[str, int] = {}
        for name, length in listed.items():
            top = name.split("/", 1)[0]
            per_bucket[top] = per_bucket.get(top, 0) + length
        for b in sorted(hit):
            if f"{BUCKET}={b}" in per_bucket:
                out.append(bucket_folder(folder, b))
                read.bytes_read += per_bucket[f"{BUCKET}={b}"]
                read.buckets_read += 1
    return out


def pruned_folders(store: JobStore, cycle: str, source: str, first: int, last: int,
                   history: Mapping[str, list[str]] | None, layouts: Mapping[int, Layout],
                   prune: Pruning) -> tuple[list[str], list[str]]:
    """``source``'s landed intervals ``first..last`` in ``cycle`` as a pruned read takes them (its
    laid-out intervals, by ``layouts``, at the touched buckets; the others whole), and a carried
    history's folders (:meth:`~tempura.runtime.store.JobStore.interval_folders`). Rows outside
    the touched buckets are left out by :attr:`Pruning.where`, which the caller applies."""
    folders, taken = store.interval_folders(cycle, source, first, last, history)
    start = last - len(folders) + 1
    chosen = select_buckets(folders, store.interval_files(cycle, source, start, last),
                            [prune.usable(layouts.get(i)) for i in range(start, last + 1)], prune.touched, prune.read)
    return chosen, taken


def sliced_folders(store: JobStore, cycle: str, source: str, first: int, last: int,
                   history: Mapping[str, list[str]] | None, layouts: Mapping[int, Layout],
                   bounds: Mapping[int, Sequence[TimeValue]], since: Since, read: PrunedRead) -> tuple[list[str], list[str]]:
    """``source``'s landed intervals ``first..last`` as a read bounded by ``since`` takes them:
    each interval landed in time slices at the slices that may hold a row arriving after
    ``since.after`` (``bounds``: each interval's slice bounds), the others whole; and a carried
    history's folders. The rows left out match nothing, so no filter is needed."""
    folders, taken = store.interval_folders(cycle, source, first, last, history)
    start = last - len(folders) + 1
    counts, hits = [], []
    for i in range(start, last + 1):
        layout = layouts.get(i)
        sliced = layout is not None and layout.sliced and layout.column == since.column and i in bounds
        counts.append(layout.buckets if layout is not None and sliced else 0)
        hits.append(slices_after(bounds[i], since.after) if sliced else None)
    return select_folders(folders, store.interval_files(cycle, source, start, last), counts, hits, read), taken


__all__ = ["PrunedRead", "Pruning", "pruned_folders", "bucket_folder", "bucket_of", "key_class", "probe_buckets", "select_buckets",
           "select_folders", "slice_of", "sliced_folders", "write_laid_out"]
