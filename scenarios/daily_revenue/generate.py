"""Data of the ``daily_revenue`` scenario: a day of orders, booked at an even rate.

Scale 1 is 2,000,000 orders (about 500,000 booked in each 6-hour interval) over 40 categories,
placed on one of the 30 days before they are booked, 3% of them cancelled. Values come from
hashes of the row number, so a scale always generates the same rows.

    python -m scenarios.daily_revenue.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAY = "TIMESTAMP '2026-11-22 00:00:00'"


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write ``data/orders`` (parquet) under ``out``; returns its row count."""
    rows = max(40, int(2_000_000 * scale))
    orders = spark.range(rows).selectExpr(
        "id AS order_id",
        "concat('k', pmod(hash(id, 1), 40)) AS category",
        "CAST(pmod(hash(id, 2), 50000) AS DECIMAL(12, 2)) / 100 + 1 AS amount",
        "IF(pmod(hash(id, 3), 100) < 3, 'cancelled', 'booked') AS status",
        f"{DAY} + make_interval(0, 0, 0, 0, 0, 0, CAST(86399.0 * pmod(hash(id, 4), 1000003) / 1000003.0 + 1 AS INT))"
        " AS booked_at",
    ).selectExpr("*", "date_sub(CAST(booked_at AS DATE), CAST(pmod(hash(order_id, 5), 30) AS INT)) AS order_day")
    orders.write.mode("overwrite").parquet(str(out / "data" / "orders"))
    return {"orders": rows}


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
