"""Statistics of a derived relation (:class:`RelStats`) and the column-level arithmetic on them.

Every estimate has one shape: rows, average row size (so bytes), per-column statistics, the
functional dependencies the estimator can prove, and notes on what it had to assume (a table
without statistics, a predicate it could not read). The memo derives one ``RelStats`` per group.

Column arithmetic kept here:

- the uniform histogram that stands in for a missing one (Hive seed: buckets from min, max and
  distinct count), so range and equality estimates follow one code path;
- range fractions and narrowing of min, max, distinct count and histogram (Spark seed);
- Cardenas' formula for the distinct values that survive when a relation keeps a fraction of
  its rows, for columns a predicate does not touch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from tempura.stats.model import ColumnStats, Histogram, HistogramBin

ROW_OVERHEAD = 8.0

FIXED_WIDTH = {"number": 8.0, "date": 4.0, "timestamp": 8.0, "boolean": 1.0}
DEFAULT_STRING_WIDTH = 20.0


def type_width(type_name: str) -> float:
    """Bytes a value of a Spark type takes in a row (strings: a default average)."""
    t = type_name.lower()
    if t in ("tinyint", "byte", "boolean"):
        return 1.0
    if t in ("smallint", "short"):
        return 2.0
    if t in ("int", "integer", "date", "float", "real"):
        return 4.0
    if t.startswith(("decimal", "numeric")):
        precision = int(t.split("(")[1].split(",")[0].rstrip(")")) if "(" in t else 10
        return 8.0 if precision <= 18 else 16.0
    if t in ("bigint", "long", "double", "timestamp", "timestamp_ntz"):
        return 8.0
    return DEFAULT_STRING_WIDTH


def column_width(stats: ColumnStats | None, type_name: str) -> float:
    """Average bytes of one value: measured average length when known, else the type's width."""
    if stats is not None and stats.avg_len is not None:
        return stats.avg_len + (4.0 if stats.kind == "string" else 0.0)
    return type_width(type_name)


def cardenas(ndv: float, rows: float, kept: float) -> float:
    """Distinct values left when ``kept`` of ``rows`` rows survive a selection that is
    independent of the column: ``d·(1 − (1 − kept/rows)^(rows/d))``."""
    if ndv <= 0 or rows <= 0:
        return 0.0
    if kept >= rows:
        return ndv
    if kept <= 0:
        return 0.0
    fraction = kept / rows
    per_value = max(rows / ndv, 1.0)
    # 1 − (1 − f)^p, computed without losing a tiny f to rounding
    survive = -math.expm1(per_value * math.log1p(-fraction)) if fraction < 1.0 else 1.0
    return max(min(ndv * survive, kept), min(1.0, kept))


def uniform_histogram(stats: ColumnStats, rows: float) -> Histogram | None:
    """The column's histogram, or the uniform one built from min, max and distinct count."""
    if stats.histogram is not None:
        return stats.histogram
    if not stats.has_range:
        return None
    assert stats.min is not None and stats.max is not None
    nonnull = max(rows - (stats.nulls or 0.0), 0.0)
    ndv = stats.ndv if stats.ndv is not None else nonnull
    return Histogram((HistogramBin(stats.min, stats.max, max(ndv, 1.0), nonnull),))


def _bin_fraction_below(b: HistogramBin, value: float, inclusive: bool, step: float) -> float:
    """Share of a bin's rows below ``value`` (or at most, when ``inclusive``), values spread
    uniformly over ``[lo, hi + step)``."""
    upper = value + step if inclusive else value
    width = b.hi + step - b.lo
    if width <= 0:  # a single-valued bin
        return 1.0 if (b.lo < value or (inclusive and b.lo <= value)) else 0.0
    return min(max((upper - b.lo) / width, 0.0), 1.0)


def fraction_below(hist: Histogram, value: float, inclusive: bool, step: float) -> float:
    """Share of the histogram's rows with a value ``< value`` (``<=`` when ``inclusive``)."""
    total = hist.rows
    if total <= 0:
        return 0.0
    below = sum(b.rows * _bin_fraction_below(b, value, inclusive, step) for b in hist.bins)
    return min(max(below / total, 0.0), 1.0)


def fraction_equal(hist: Histogram, value: float) -> float:
    """Share of the histogram's rows equal to ``value``: each bin holding it contributes its
    rows divided by its distinct values."""
    total = hist.rows
    if total <= 0:
        return 0.0
    hits = [b for b in hist.bins if b.lo <= value <= b.hi]
    if not hits:
        return 0.0
    # A value that spans several bins (a frequent value) is counted in each of them.
    return min(sum(b.rows / max(b.ndv, 1.0) for b in hits) / total, 1.0)


def restrict_histogram(hist: Histogram, lo: float | None, hi: float | None, step: float) -> Histogram:
    """The part of ``hist`` inside ``[lo, hi]`` (either bound may be open-ended)."""
    bins = []
    for b in hist.bins:
        new_lo = b.lo if lo is None else max(b.lo, lo)
        new_hi = b.hi if hi is None else min(b.hi, hi)
        if new_lo > new_hi:
            continue
        width = b.hi + step - b.lo
        share = 1.0 if width <= 0 else min(max((new_hi + step - new_lo) / width, 0.0), 1.0)
        bins.append(HistogramBin(new_lo, new_hi, max(b.ndv * share, 1.0), b.rows * share))
    return Histogram(tuple(bins))


def scale_column(stats: ColumnStats, rows: float, kept: float) -> ColumnStats:
    """A column not named by a predicate, after the relation keeps ``kept`` of ``rows`` rows."""
    if rows <= 0 or kept >= rows:
        return stats
    share = kept / rows
    ndv = None if stats.ndv is None else cardenas(stats.ndv, max(rows - (stats.nulls or 0.0), 0.0), kept * (1 - _null_share(stats, rows)))
    histogram = None
    if stats.histogram is not None:
        histogram = Histogram(
            tuple(HistogramBin(b.lo, b.hi, cardenas(b.ndv, b.rows, b.rows * share), b.rows * share) for b in stats.histogram.bins)
        )
    return stats.replace(
        ndv=ndv,
        nulls=None if stats.nulls is None else stats.nulls * share,
        histogram=histogram,
    )


def _null_share(stats: ColumnStats, rows: float) -> float:
    if stats.nulls is None or rows <= 0:
        return 0.0
    return min(stats.nulls / rows, 1.0)


def null_fraction(stats: ColumnStats | None, rows: float) -> float:
    """Share of rows where the column is null (0 when unknown)."""
    return 0.0 if stats is None else _null_share(stats, rows)


@dataclass(frozen=True)
class RelStats:
    """The estimated statistics of a relation (a plan node, or a memo group).

    ``fds`` maps a column to the columns it functionally determines (single-column
    determinants only): a unique key determines its table's columns, and an equi-join makes
    its two key columns determine each other.

    ``max_rows`` is an upper bound on the rows, proven rather than estimated
    (:mod:`tempura.stats.bounds`): it holds however wrong the estimate's assumptions are.
    Infinite when nothing bounds the relation (a join of two tables on a key neither side is
    known to be unique on).
    """

    rows: float
    row_size: float
    columns: Mapping[str, ColumnStats]
    fds: Mapping[str, frozenset[str]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    max_rows: float = math.inf

    @property
    def bytes(self) -> float:
        return self.rows * self.row_size

    @property
    def max_bytes(self) -> float:
        """An upper bound on the size (the bound on rows at the estimated row size)."""
        return math.inf if math.isinf(self.max_rows) else max(self.max_rows, self.rows) * self.row_size

    @property
    def assumptions(self) -> tuple[str, ...]:
        """The notes that say the estimate rests on defaults (no statistics for a table, a
        default selectivity), not on measurements."""
        return tuple(n for n in self.notes if not is_stale_note(n))

    def column(self, name: str) -> ColumnStats | None:
        return self.columns.get(name)

    def ndv(self, name: str) -> float | None:
        """Distinct non-null values of a column, never above the row count."""
        stats = self.columns.get(name)
        if stats is None or stats.ndv is None:
            return None
        return min(stats.ndv, self.rows)

    def closure(self, names: Iterable[str]) -> set[str]:
        """Every column determined by ``names`` (including themselves)."""
        seen = set(names)
        todo = list(seen)
        while todo:
            for dependent in self.fds.get(todo.pop(), ()):
                if dependent not in seen:
                    seen.add(dependent)
                    todo.append(dependent)
        return seen


STALE_NOTE = "are stale (its files changed): scaled to the file size"


def stale_note(table: str) -> str:
    """The note on a table whose statistics describe older files (measured, then scaled)."""
    return f"statistics for table {table} {STALE_NOTE}"


def is_stale_note(note: str) -> bool:
    return note.endswith(STALE_NOTE)


def merge_notes(*groups: Iterable[str]) -> tuple[str, ...]:
    """Notes of several inputs, each once, in first-seen order."""
    out: list[str] = []
    for group in groups:
        for note in group:
            if note not in out:
                out.append(note)
    return tuple(out)


def restrict_fds(fds: Mapping[str, frozenset[str]], keep: set[str], closure_of: RelStats) -> dict[str, frozenset[str]]:
    """Dependencies among the columns in ``keep``, following chains through dropped columns."""
    out: dict[str, frozenset[str]] = {}
    for name in keep:
        if name in fds:
            deps = frozenset(closure_of.closure([name]) & keep) - {name}
            if deps:
                out[name] = deps
    return out


def log2(value: float) -> float:
    return math.log2(value) if value > 1 else 0.0
