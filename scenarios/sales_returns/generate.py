"""Data of the ``sales_returns`` scenario: a day of sales and returns arriving in four intervals.

Scale 1 is 1,000,000 sales over 20 categories and 100,000 returns of earlier sales. Sales
arrive through the day, most of them by 18:00; a return arrives after its sale. Values come from
hashes of the row number, so a scale always generates the same rows.

    python -m scenarios.sales_returns.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAY = "TIMESTAMP '2026-11-22 00:00:00'"


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write ``data/sales`` and ``data/returns`` (parquet) under ``out``; returns row counts."""
    sales_rows = max(10, int(1_000_000 * scale))
    returns_rows = max(1, sales_rows // 10)
    # a sale's second of the day: skewed towards the day's start (u^1.6: about 3/7 by 06:00, 5/6 by 18:00)
    sales = spark.range(sales_rows).selectExpr(
        "concat('o', id) AS o_id",
        "concat('c', pmod(hash(id, 1), 20)) AS category",
        "CAST(10 + pmod(hash(id, 2), 490) AS BIGINT) AS price",
        f"{DAY} + make_interval(0, 0, 0, 0, 0, 0, CAST(86399 * pow(pmod(hash(id, 3), 100000) / 100000.0, 1.6) + 1 AS INT)) AS arrived_at",
    )
    sales.write.mode("overwrite").parquet(str(out / "data" / "sales"))
    sold = spark.read.parquet(str(out / "data" / "sales"))
    returns = (
        sold.where(f"pmod(hash(o_id, 4), {max(1, sales_rows // returns_rows)}) = 0")
        .selectExpr(
            "o_id",
            "CAST(1 + pmod(hash(o_id, 5), 50) AS BIGINT) AS cost",
            "arrived_at + make_interval(0, 0, 0, 0, 0, 0, CAST(pmod(hash(o_id, 6), 43200) AS INT)) AS arrived_at",
        )
        .where(f"arrived_at <= {DAY} + INTERVAL 1 DAY")
    )
    returns.write.mode("overwrite").parquet(str(out / "data" / "returns"))
    return {"sales": sales_rows, "returns": spark.read.parquet(str(out / "data" / "returns")).count()}


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
