"""Default statistics for a table nobody has analysed: rows guessed from the size of its files.

The guess divides the bytes on disk, times a format's typical expansion into rows in memory,
by the row width the column types imply. Column statistics stay unknown (the estimator then uses
its default selectivities), and every estimate built on a default says so in its notes.
"""

from __future__ import annotations

from tempura.catalog import TableSource
from tempura.stats.model import ColumnStats, TableStats, kind_of, step_of
from tempura.stats.relation import ROW_OVERHEAD, type_width

# In-memory bytes per byte on disk: columnar files are compressed, JSON repeats its keys.
EXPANSION = {"parquet": 3.0, "orc": 3.0, "csv": 1.0, "json": 0.5}
UNKNOWN_SIZE_ROWS = 1000.0


def default_table_stats(source: TableSource, schema: dict[str, str], file_bytes: float | None) -> TableStats:
    """Statistics for ``source`` when none were collected."""
    width = ROW_OVERHEAD + sum(type_width(t) for t in schema.values())
    if file_bytes is None:
        rows = UNKNOWN_SIZE_ROWS
        size = rows * width
    else:
        size = file_bytes * EXPANSION.get(source.format, 1.0)
        rows = max(round(size / width), 1.0) if file_bytes > 0 else 0.0
    columns = {name: ColumnStats(kind=kind_of(t), step=step_of(t)) for name, t in schema.items()}
    return TableStats(rows=float(rows), bytes=float(size), columns=columns, source="default", file_bytes=file_bytes or 0.0)
