"""What the measured rounds of every benchmark share: the order contenders take in each round,
and letting one run's leftovers go before the next is measured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def round_order(contenders: Sequence[str], rep: int) -> list[str]:
    """Round ``rep``'s order. With three contenders or more, each runs first in turn (round
    ``rep`` starts with the ``rep``-th), the others follow in the list's cyclic order, reversed in
    odd rounds, so that none always follows the same one (a heavy run leaves work behind —
    garbage, cleanup of its shuffles — that the next one would pay for). No contender runs twice in
    a row across two rounds either: where a round would end with the next round's first, its last
    two swap (a run right after its own would find the JVM warm for it alone). Two contenders keep
    one order, so that they strictly alternate and each always follows the other."""
    n = len(contenders)
    if n < 3:
        return list(contenders)
    first = rep % n
    rest = list(contenders[first + 1:]) + list(contenders[:first])
    if rep % 2:
        rest.reverse()
    if rest[-1] == contenders[(rep + 1) % n]:
        rest[-2], rest[-1] = rest[-1], rest[-2]
    return [contenders[first]] + rest


def settle(spark: SparkSession) -> None:
    """Let the previous run's leftovers go before the next is measured: a full JVM collection."""
    spark.sparkContext._jvm.System.gc()  # type: ignore[union-attr]


__all__ = ["round_order", "settle"]
