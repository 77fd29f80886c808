"""What the measured rounds of every benchmark share: the order contenders take in each round,
and letting one run's leftovers go before the next is measured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def round_order(contenders: Sequence[str], rep: int) -> list[str]:
    """Round ``rep``'s order: the contenders rotated by ``rep``, the ones after the first reversed
    in odd rounds, so that each runs first in turn and none always follows the same one (a heavy
    run leaves work behind — garbage, cleanup of its shuffles — that the next one would pay for)."""
    if not contenders:
        return []
    shift = rep % len(contenders)
    order = list(contenders[shift:]) + list(contenders[:shift])
    return order[:1] + (order[:0:-1] if rep % 2 else order[1:])


def settle(spark: SparkSession) -> None:
    """Let the previous run's leftovers go before the next is measured: a full JVM collection."""
    spark.sparkContext._jvm.System.gc()  # type: ignore[union-attr]


__all__ = ["round_order", "settle"]
