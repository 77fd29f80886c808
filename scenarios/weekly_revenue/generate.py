"""Data of the ``weekly_revenue`` scenario: two weeks of orders and the customers placing them.

Scale 1 is 1,000,000 orders (from 2026-11-01 to 2026-11-15, busier on weekdays) by 50,000
customers in 8 regions. Values come from hashes of the row number, so a scale always generates
the same rows.

    python -m scenarios.weekly_revenue.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FIRST = "TIMESTAMP '2026-11-01 00:00:00'"


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write ``data/orders`` and ``data/customers`` (parquet) under ``out``; returns row counts."""
    orders_rows = max(20, int(1_000_000 * scale))
    customers_rows = max(8, orders_rows // 20)
    customers = spark.range(customers_rows).selectExpr(
        "id AS customer_id",
        "concat('r', pmod(hash(id, 1), 8)) AS region",
        "concat('customer ', id) AS name",
    )
    customers.coalesce(1).write.mode("overwrite").parquet(str(out / "data" / "customers"))
    # the second of the fortnight an order is placed; a weekend day gets half a weekday's orders
    orders = spark.range(orders_rows).selectExpr(
        "id AS order_id",
        f"pmod(hash(id, 2), {customers_rows}) AS customer_id",
        "CAST(5 + pmod(hash(id, 3), 495) AS BIGINT) AS amount",
        "pmod(hash(id, 4), 14) AS day",
        "pmod(hash(id, 5), 86400) AS second",
        "pmod(hash(id, 6), 2) AS coin",
    ).where("coin = 0 OR pmod(day, 7) NOT IN (0, 6)").selectExpr(
        "order_id", "customer_id", "amount",
        f"{FIRST} + make_interval(0, 0, 0, CAST(day AS INT), 0, 0, CAST(second AS INT) + 1) AS placed_at",
    )
    orders.coalesce(2).write.mode("overwrite").parquet(str(out / "data" / "orders"))
    return {"orders": spark.read.parquet(str(out / "data" / "orders")).count(), "customers": customers_rows}


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
