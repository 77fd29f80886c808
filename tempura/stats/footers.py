"""A parquet file's column statistics from its footer: what a sketch need not count row by row.

A linked interval's new files are parquet files read as they are (:mod:`tempura.runtime.ingest`).
Their footers hold, for each row group and column, the number of values and of nulls, and
(for most types) the least and greatest value. Summed over the row groups these are exact, so
the sketch observed on the plan's read of the interval (:class:`tempura.stats.sketch.ObservedSketch`)
takes a column's counts and range from here and sketches only what a footer cannot hold: its
distinct values, quantiles and string lengths. A column is taken from the footer only where
every row group has the statistics, and its range only for values Spark orders the same way:
integers, decimals and dates (not floating point, whose NaN Spark orders last and parquet
leaves out, nor timestamps, whose footer values depend on how they were written).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Mapping, Sequence

from tempura.stats.model import kind_of
from tempura.stats.values import encode


@dataclass(frozen=True)
class KnownCounts:
    """One column's counts and range over some files, on the statistics' number line."""

    count: int  # values that are not NULL
    nulls: int
    min: float | None = None
    max: float | None = None


def _ranged(value: object, kind: str) -> bool:
    """Whether a footer's ``value`` is one Spark orders as the column's ``kind`` does."""
    if kind == "number":
        return isinstance(value, (int, Decimal)) and not isinstance(value, bool)
    if kind == "date":
        return isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    return False


def footer_counts(paths: Sequence[str], columns: Mapping[str, str]) -> dict[str, KnownCounts]:
    """Per column of ``columns`` (name: Spark type; matched without regard to case), its counts
    (and, for an orderable kind, its range) over the local parquet files ``paths``, from their
    footers alone; a column is left out where a footer cannot say (a row group without
    statistics, a nested column, a range of another kind). A footer that cannot be read
    leaves every column out."""
    import pyarrow.parquet as pq

    wanted = {name.lower(): name for name in columns}
    totals: dict[str, list[int]] = {}  # name: [values, nulls]
    ranges: dict[str, list[object]] = {}  # name: [least, greatest] (orderable kinds)
    missing: set[str] = set()
    chunks: dict[str, int] = {}  # name: the row groups that hold it (a file may lack a column)
    try:
        footers = [pq.read_metadata(path) for path in paths]
    except Exception:  # a damaged file: Spark's read of it says what is wrong
        return {}
    groups = sum(metadata.num_row_groups for metadata in footers)
    for metadata in footers:
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            for j in range(group.num_columns):
                chunk = group.column(j)
                name = wanted.get(chunk.path_in_schema.lower())
                if name is None or name in missing:
                    continue
                chunks[name] = chunks.get(name, 0) + 1
                stats = chunk.statistics
                if stats is None or not stats.has_null_count:
                    missing.add(name)
                    continue
                kept = totals.setdefault(name, [0, 0])
                kept[0] += chunk.num_values - stats.null_count
                kept[1] += stats.null_count
                kind = kind_of(columns[name])
                if kind not in ("number", "date", "timestamp") or chunk.num_values == stats.null_count:
                    continue
                if not stats.has_min_max or not _ranged(stats.min, kind) or not _ranged(stats.max, kind):
                    missing.add(name)
                    continue
                seen = ranges.get(name)
                low, high = stats.min, stats.max
                ranges[name] = [low, high] if seen is None else [min(seen[0], low), max(seen[1], high)]
    out = {}
    for name, (count, nulls) in totals.items():
        if name in missing or chunks.get(name) != groups:
            continue
        found = ranges.get(name)
        low, high = (encode(found[0], kind_of(columns[name])), encode(found[1], kind_of(columns[name]))) if found \
            else (None, None)
        out[name] = KnownCounts(count, nulls, low if isinstance(low, float) else None,
                                high if isinstance(high, float) else None)
    return out
