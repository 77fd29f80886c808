"""Data of the ``sales_returns_seed`` scenario: a day of sales and returns at the golden example's
proportions (4/7 of the sales and 1/3 of the returns by noon).

Scale 1 is 1,000,000 sales over 20 categories and 100,000 returns of them. A sale arrives in
the morning with probability 4/7, else in the afternoon, uniformly within its half of the day. A
return arrives after its sale and at most 12 hours later, within the day: 7/12 of the morning
sales' returns arrive by noon (1/3 of all returns), the others and every afternoon sale's return
in the afternoon. Values come from hashes of the row number, so a scale always generates the
same rows.

    python -m scenarios.sales_returns_seed.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAY = "TIMESTAMP '2026-11-22 00:00:00'"
HALF = 43200  # seconds in half a day: t1 is noon


def _at(seconds: str) -> str:
    return f"{DAY} + make_interval(0, 0, 0, 0, 0, 0, CAST({seconds} AS INT))"


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write ``data/sales`` and ``data/returns`` (parquet) under ``out``; returns row counts."""
    sales_rows = max(14, int(1_000_000 * scale))
    every = 10  # one sale in ten is returned
    u = "(pmod(hash(id, 3), 1000003) / 1000003.0)"  # uniform in [0, 1)
    second = (f"CASE WHEN {u} < 4.0 / 7 THEN 1 + ({u} * 7 / 4) * {HALF - 1} "
              f"ELSE {HALF} + 1 + (({u} - 4.0 / 7) * 7 / 3) * {HALF - 1} END")
    sales = spark.range(sales_rows).selectExpr(
        "concat('o', id) AS o_id",
        "concat('c', pmod(hash(id, 1), 20)) AS category",
        "CAST(10 + pmod(hash(id, 2), 490) AS BIGINT) AS price",
        f"CAST({second} AS INT) AS second",
    )
    sales.selectExpr("o_id", "category", "price", f"{_at('second')} AS arrived_at") \
        .write.mode("overwrite").parquet(str(out / "data" / "sales"))
    v = "(pmod(hash(o_id, 5), 1000003) / 1000003.0)"  # uniform in [0, 1): where in its window
    w = "(pmod(hash(o_id, 6), 1000003) / 1000003.0)"  # by noon or not, for a morning sale
    # by noon: (second, noon]; after noon: (max(second, noon), min(second + 12h, midnight)]
    late_from = f"greatest(second, {HALF})"
    late_to = f"least(second + {HALF}, {2 * HALF})"
    returned = (
        sales.where(f"pmod(hash(o_id, 4), {every}) = 0")
        .selectExpr(
            "o_id",
            "CAST(1 + pmod(hash(o_id, 7), 50) AS BIGINT) AS cost",
            f"CASE WHEN second <= {HALF} AND {w} < 7.0 / 12 THEN second + 1 + {v} * ({HALF} - second - 1) "
            f"ELSE {late_from} + 1 + {v} * ({late_to} - {late_from} - 1) END AS at_second",
        )
        .selectExpr("o_id", "cost", f"{_at('at_second')} AS arrived_at")
    )
    returned.write.mode("overwrite").parquet(str(out / "data" / "returns"))
    return {"sales": sales_rows, "returns": spark.read.parquet(str(out / "data" / "returns")).count()}


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
