"""Checking a change feed's interval before it lands.

A change feed (``changes: {op_column, insert_values, delete_values, deletes}``) says of each row
whether it inserts or deletes a row. Before interval ``i`` of such a source is written to the
landing (:mod:`tempura.runtime.ingest`), the runner checks it here:

- :func:`check_ops`: every op value is one of ``insert_values`` or ``delete_values``; any other
  value, NULL included, is an :class:`~tempura.errors.ExecutionError` naming the source, the
  file, the value and the row.
- :func:`settle_deletions`: per distinct row (its *data columns*: every column but the op and
  arrival columns and tempura's own), the insertions minus the deletions landed through interval
  ``i`` never go below 0 — a deletion removes a row inserted in an earlier interval of the
  cycle or in the same one. The intervals before ``i`` passed this check, so only the rows
  interval ``i`` deletes can go below: those are counted over the earlier landed intervals (a
  null-safe semi-join, since a row's columns may be NULL) and interval ``i``. Under ``deletes:
  strict`` a row deleted more often than it is there is an error naming the source, the file
  and the row; under ``deletes: lenient`` that many of its deletions are dropped from the
  landing, and counted (``Landed.absent_deletions``).

The snapshot a reference reads from the source's own files applies the same rule
(:func:`tempura.runtime.sources.source_snapshot`), so that the two agree.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from tempura.errors import ExecutionError
from tempura.runtime.ingest import FILE, OP, Feed
from tempura.sql.names import quote_identifier

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_MULT, _NET, _EXCESS, _RANK = "__mult", "__net", "__excess", "__rank"


def data_columns(feed: Feed, columns: Sequence[str]) -> list[str]:
    """The columns of ``columns`` that make a row what it is: not the op and arrival columns,
    nor tempura's own."""
    hidden = {c.lower() for c in feed.hidden} | {FILE.lower()}
    return [c for c in columns if c.lower() not in hidden]


def check_ops(feed: Feed, rows: DataFrame) -> None:
    """Raise :class:`ExecutionError` when a row of ``rows`` (the interval, with its file) has an
    op value that is neither a declared insertion nor a deletion."""
    assert feed.op_column is not None
    op = _col(feed.op_column)
    known = list(feed.insert_values) + list(feed.delete_values)
    found = rows.where(op.isNull() | ~op.isin(known)).limit(1).collect()
    if not found:
        return
    row = found[0].asDict()
    value = row[next(c for c in row if c.lower() == feed.op_column.lower())]
    raise ExecutionError(
        f"source '{feed.name}': {row[FILE]}: {feed.op_column} is {_literal(value)}, neither an insertion "
        f"({', '.join(map(repr, feed.insert_values))}) nor a deletion ({', '.join(map(repr, feed.delete_values))}), "
        f"in the row ({describe(row, data_columns(feed, list(row)))}) (nothing was committed; fix or remove the file "
        f"and run again)"
    )


def settle_deletions(feed: Feed, rows: DataFrame, earlier: DataFrame | None, index: int) -> tuple[DataFrame, int]:
    """``rows`` (interval ``index``, with ``__op`` and its files) to land, and how many of its
    deletions were dropped for removing a row not there (``deletes: lenient``); under ``strict``
    such a deletion raises :class:`ExecutionError`. ``earlier``: the landed intervals before
    ``index`` (``None`` at the first)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    data = data_columns(feed, rows.columns)
    q = [_col(c) for c in data]
    deleting = _col(OP) == "D"
    touched = rows.where(deleting).select(*q).distinct()
    this = rows.select(*q, F.when(deleting, -1).otherwise(1).cast("bigint").alias(_MULT),
                       F.when(deleting, _col(FILE)).alias(FILE))
    if earlier is not None:
        before = earlier.select(*q, F.when(deleting, -1).otherwise(1).cast("bigint").alias(_MULT))
        relevant = before.alias("b").join(touched.alias("t"), _same(data, "b", "t"), "left_semi")
        this = this.unionByName(relevant.withColumn(FILE, F.lit(None).cast("string")))
    short = (this.groupBy(*q).agg(F.sum(_col(_MULT)).alias(_NET), F.min(_col(FILE)).alias(FILE))
             .where(_col(_NET) < 0))
    if feed.deletion_policy != "lenient":
        found = short.limit(1).collect()
        if found:
            row = found[0].asDict()
            too_many = -int(row[_NET])
            raise ExecutionError(
                f"source '{feed.name}': {row[FILE]}: deletes a row that is not there ({describe(row, data)}): "
                f"{too_many} deletion{'s' if too_many != 1 else ''} more than its insertions through t{index} "
                f"(deletes: strict; nothing was committed; fix the file, or set deletes: lenient to drop such deletions)"
            )
        return rows, 0
    excess = short.select(*q, (-_col(_NET)).alias(_EXCESS))
    dropped = excess.agg(F.sum(_col(_EXCESS))).collect()[0][0] or 0
    if not dropped:
        return rows, 0
    order = [_col(FILE)] + [_col(c) for c in rows.columns if c not in data and c != FILE]
    ranked = rows.withColumn(_RANK, F.when(deleting, F.row_number().over(Window.partitionBy(*q, _col(OP)).orderBy(*order))))
    joined = ranked.alias("r").join(excess.alias("e"), _same(data, "r", "e"), "left")
    kept = joined.where(~(F.col(f"r.{quote_identifier(OP)}") == "D")
                        | (F.col(f"r.{quote_identifier(_RANK)}") > F.coalesce(F.col(f"e.{quote_identifier(_EXCESS)}"), F.lit(0))))
    return kept.select(*[F.col(f"r.{quote_identifier(c)}").alias(c) for c in rows.columns]), int(dropped)


def describe(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    """``columns`` of ``row`` as ``name=value, ...``."""
    return ", ".join(f"{c}={_literal(row[c])}" for c in columns)


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    return repr(value) if isinstance(value, str) else str(value)


def _col(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(quote_identifier(name))


def _same(columns: Sequence[str], left: str, right: str) -> Column:
    """Every one of ``columns`` equal (NULL equal to NULL) between the frames aliased ``left``
    and ``right``."""
    from pyspark.sql import functions as F

    pairs = [F.col(f"{left}.{quote_identifier(c)}").eqNullSafe(F.col(f"{right}.{quote_identifier(c)}")) for c in columns]
    return functools.reduce(operator.and_, pairs) if pairs else F.lit(True)


__all__ = ["check_ops", "data_columns", "describe", "settle_deletions"]
