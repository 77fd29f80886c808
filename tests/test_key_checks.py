"""Checks of declared keys as intervals land (:func:`tempura.runtime.keys.violations`), on Spark:
a key lands once and is never NULL, and the rows landing with it reference a key of their own
interval (never NULL either: the planner takes both columns as non-null)."""

from __future__ import annotations

from typing import Any, Sequence

import pytest

from tempura.runtime.keys import violations
from tempura.tvr.bounds import KeyRule

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

RULE = KeyRule("orders.o_orderkey", "orders", "o_orderkey", (("lineitem", "l_orderkey"),))


def _reader(spark: Any, landed: dict[str, list[tuple[Any, int]]]) -> Any:
    """Rows ``(key, interval)`` per source, read as the runner reads landed intervals."""

    def read(source: str, intervals: Sequence[int]) -> Any:
        column = "o_orderkey" if source == "orders" else "l_orderkey"
        rows = [(k,) for k, i in landed[source] if i in set(intervals)]
        return spark.createDataFrame(rows, f"{column.upper()} bigint")  # columns match case-insensitively

    return read


@pytest.mark.parametrize("orders, items, interval, found", [
    ([(1, 1), (2, 2), (2, 2)], [(1, 1), (2, 2), (2, 2)], 2, None),  # a key may repeat within its interval
    ([(1, 1), (2, 2), (1, 2)], [(2, 2)], 2, "orders.o_orderkey = 1 landed at t2 and in an earlier interval"),
    ([(1, 1), (None, 2)], [], 2, "orders.o_orderkey is NULL in a row landed at t2: a key is never NULL"),
    ([(1, 1), (2, 2)], [(1, 2)], 2, "lineitem.l_orderkey = 1 landed at t2 without the orders row holding that key in the same interval"),
    ([(1, 1), (2, 2)], [(2, 2), (None, 2)], 2, "lineitem.l_orderkey is NULL in a row landed at t2: rows landing with orders.o_orderkey hold a key"),
    ([(1, 1)], [(None, 2)], 1, None),  # only the interval checked counts
])
def test_each_broken_declaration_is_named(spark: Any, orders: list[tuple[Any, int]], items: list[tuple[Any, int]],
                                          interval: int, found: str | None) -> None:
    got = violations([RULE], _reader(spark, {"orders": orders, "lineitem": items}), interval)
    assert got == ({} if found is None else {"orders.o_orderkey": found})
