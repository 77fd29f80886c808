"""The statistics model: what tempura knows about a table and its columns.

The shape follows Spark's ``ANALYZE TABLE`` statistics: per table, rows and bytes; per column,
distinct count, null count, min, max, average and maximum length, and an optional equi-height
histogram. Two additions serve the estimator:

- ``unique``: the column holds no duplicate non-null values (checked exactly when the stats are
  collected). Key/foreign-key reasoning and functional dependencies start from it.
- ``domain``: in a derived relation, how many distinct values the column could hold before
  predicates on *other* columns or joins thinned it out (its base table's distinct count). A
  join of two independently thinned sides matches a key with probability ``V/domain``, not 1.
- ``origin`` and ``origin_rows``: in a derived relation, which scan the column comes from and
  that table's rows, so that several equalities between the same two tables are estimated as
  one multi-column key.
- ``sample``: for string columns, a random sample of values, on which LIKE patterns are
  tried (as PostgreSQL tries them on its most common values and histogram).
- ``lineage``: the base column the values come from (``table.column``), or ``min:``/``max:``
  of one for a per-group extreme (with ``group_size``, the average rows per group); ``x = MIN(x)``
  then keeps one row per group.
- ``kind``: the value domain (number, date, timestamp, string, boolean, other). Orderable
  domains keep ``min``/``max`` and histogram bounds as floats: numbers as themselves, dates as
  days since 1970-01-01, timestamps as seconds since the epoch. Strings keep no bounds.

The same :class:`ColumnStats` describes derived relations, so every estimate has one shape.
Counts are floats there, because estimates are fractional.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

Kind = Literal["number", "date", "timestamp", "string", "boolean", "other"]
StatsSource = Literal["analyze", "aggregate", "default", "injected", "sketch"]

ORDERABLE: frozenset[str] = frozenset({"number", "date", "timestamp"})


def kind_of(type_name: str) -> Kind:
    """The value domain of a Spark type string (``bigint``, ``decimal(15,2)``, ``date``, …)."""
    t = type_name.lower().strip()
    if t.startswith(("decimal", "numeric")) or t in {
        "tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte", "float", "double", "real",
    }:
        return "number"
    if t == "date":
        return "date"
    if t.startswith("timestamp"):
        return "timestamp"
    if t.startswith(("string", "varchar", "char", "text")):
        return "string"
    if t in ("boolean", "bool"):
        return "boolean"
    return "other"


def step_of(type_name: str) -> float:
    """The gap between adjacent values of a discrete domain (0 for a continuous one).

    Integers and dates step by 1, ``decimal(p,s)`` by 10^-s. Range selectivities use it so that
    ``x <= v`` and ``x < v`` differ by one value's share, as they do on real data.
    """
    t = type_name.lower().strip()
    if t in {"tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte", "date"}:
        return 1.0
    if t.startswith(("decimal", "numeric")) and "," in t:
        scale = int(t.split(",")[1].rstrip(") "))
        return 10.0**-scale
    if t.startswith(("decimal", "numeric")):
        return 1.0
    return 0.0


@dataclass(frozen=True)
class HistogramBin:
    """Values in ``[lo, hi]``: ``rows`` non-null rows holding ``ndv`` distinct values."""

    lo: float
    hi: float
    ndv: float
    rows: float


@dataclass(frozen=True)
class Histogram:
    """An equi-height histogram over an orderable column (bins in ascending order)."""

    bins: tuple[HistogramBin, ...]

    @property
    def rows(self) -> float:
        return sum(b.rows for b in self.bins)

    @property
    def ndv(self) -> float:
        return sum(b.ndv for b in self.bins)

    def to_json(self) -> list[list[float]]:
        return [[b.lo, b.hi, b.ndv, b.rows] for b in self.bins]

    @classmethod
    def from_json(cls, data: list[list[float]]) -> Histogram:
        return cls(tuple(HistogramBin(float(lo), float(hi), float(ndv), float(rows)) for lo, hi, ndv, rows in data))


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of one column. ``None`` means unknown."""

    kind: Kind = "other"
    ndv: float | None = None
    nulls: float | None = None
    min: float | None = None
    max: float | None = None
    avg_len: float | None = None
    max_len: float | None = None
    histogram: Histogram | None = None
    unique: bool = False
    step: float = 0.0
    domain: float | None = None
    origin: str | None = None
    origin_rows: float | None = None
    sample: tuple[str, ...] | None = None
    lineage: str | None = None
    group_size: float | None = None

    def replace(self, **changes: Any) -> ColumnStats:
        return dataclasses.replace(self, **changes)

    @property
    def has_range(self) -> bool:
        return self.kind in ORDERABLE and self.min is not None and self.max is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for name in ("ndv", "nulls", "min", "max", "avg_len", "max_len"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.unique:
            out["unique"] = True
        if self.step:
            out["step"] = self.step
        if self.histogram is not None:
            out["histogram"] = self.histogram.to_json()
        if self.sample is not None:
            out["sample"] = list(self.sample)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ColumnStats:
        def num(name: str) -> float | None:
            value = data.get(name)
            return None if value is None else float(value)

        histogram = data.get("histogram")
        return cls(
            kind=data.get("kind", "other"),
            ndv=num("ndv"),
            nulls=num("nulls"),
            min=num("min"),
            max=num("max"),
            avg_len=num("avg_len"),
            max_len=num("max_len"),
            histogram=Histogram.from_json(histogram) if histogram else None,
            unique=bool(data.get("unique", False)),
            step=float(data.get("step", 0.0)),
            sample=tuple(str(v) for v in data["sample"]) if data.get("sample") is not None else None,
        )


@dataclass(frozen=True)
class TableStats:
    """Statistics of one table, as collected (or defaulted) for a particular set of files.

    ``fingerprint`` identifies the files the statistics describe; ``stale`` is set when they
    are read back and the files have changed since (the estimator then scales them).
    """

    rows: float
    bytes: float
    columns: Mapping[str, ColumnStats] = field(default_factory=dict)
    source: StatsSource = "analyze"
    fingerprint: str = ""
    file_bytes: float = 0.0
    collected_at: str = ""
    stale: bool = False
    sketch: Mapping[str, Any] | None = None  # mergeable sketches it was read from (tempura.stats.sketch)
    # rows and deletions per interval of one cycle that the files held when first collected:
    # {"cycle": label, "rows": [...], "deletions": [...]}
    arrival: Mapping[str, Any] | None = None

    @property
    def is_default(self) -> bool:
        return self.source == "default"

    def column(self, name: str) -> ColumnStats | None:
        return self.columns.get(name.lower())

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "bytes": self.bytes,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "file_bytes": self.file_bytes,
            "collected_at": self.collected_at,
            "columns": {name: c.to_json() for name, c in self.columns.items()},
            **({"sketch": dict(self.sketch)} if self.sketch is not None else {}),
            **({"arrival": dict(self.arrival)} if self.arrival is not None else {}),
        }

    def scaled(self, rows: float, **changes: Any) -> TableStats:
        """These statistics for ``rows`` rows of the same kind: bytes and nulls in proportion;
        a column's distinct count capped by the rows, and grown with them where the column is a
        key (unique, or with a distinct count of at least :data:`KEY_LIKE` of its non-null rows:
        a key's values grow with its rows, a category's do not)."""
        if self.rows <= 0 or rows == self.rows:
            return dataclasses.replace(self, **changes) if changes else self
        ratio = rows / self.rows
        columns = {name: _scaled_column(c, ratio, self.rows, rows) for name, c in self.columns.items()}
        return dataclasses.replace(self, rows=rows, bytes=self.bytes * ratio, columns=columns, **changes)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableStats:
        return cls(
            rows=float(data["rows"]),
            bytes=float(data["bytes"]),
            columns={name.lower(): ColumnStats.from_json(c) for name, c in data.get("columns", {}).items()},
            source=data.get("source", "analyze"),
            fingerprint=str(data.get("fingerprint", "")),
            file_bytes=float(data.get("file_bytes", 0.0)),
            collected_at=str(data.get("collected_at", "")),
            sketch=data.get("sketch"),
            arrival=data.get("arrival"),
        )


KEY_LIKE = 0.9  # a column with at least this share of distinct values among its non-null rows


def _scaled_column(column: ColumnStats, ratio: float, before: float, rows: float) -> ColumnStats:
    ndv = column.ndv
    nulls = column.nulls * ratio if column.nulls is not None else None
    if ndv is not None:
        nonnull = before - (column.nulls or 0.0)
        if column.unique:
            ndv = rows - (nulls or 0.0)
        elif ratio > 1 and nonnull > 0 and ndv >= KEY_LIKE * nonnull:
            ndv = min(ndv * ratio, rows)
        else:
            ndv = min(ndv, rows)
    return column.replace(ndv=ndv, nulls=nulls)
