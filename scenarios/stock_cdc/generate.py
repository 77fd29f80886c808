"""Data of the ``stock_cdc`` scenario: a day of stock changes (with deletions) and the warehouses.

Scale 1 is 1,000,000 stock lines inserted through the day across 200 warehouses in 6 regions;
a fifth of them are deleted later the same day, and half of those are re-inserted with another
quantity (an update). A deletion repeats the deleted row's values with ``_op = 'D'``. Values
come from hashes of the row number, so a scale always generates the same rows.

    python -m scenarios.stock_cdc.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAY = "TIMESTAMP '2026-11-22 00:00:00'"


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write ``data/stock`` and ``data/warehouses`` (parquet) under ``out``; returns row counts."""
    lines = max(20, int(1_000_000 * scale))
    warehouses = spark.range(200).selectExpr(
        "id AS warehouse_id", "concat('region-', pmod(hash(id, 1), 6)) AS region")
    warehouses.coalesce(1).write.mode("overwrite").parquet(str(out / "data" / "warehouses"))
    inserted = spark.range(lines).selectExpr(
        "id AS line_id",
        "pmod(hash(id, 2), 200) AS warehouse_id",
        "concat('sku-', pmod(hash(id, 3), 5000)) AS sku",
        "CAST(pmod(hash(id, 4), 60) AS BIGINT) AS qty",
        f"{DAY} + make_interval(0, 0, 0, 0, 0, 0, CAST(pmod(hash(id, 5), 64800) + 1 AS INT)) AS changed_at",
        "pmod(hash(id, 6), 10) AS fate",  # 0, 1: deleted later; 0: then re-inserted
    )
    gone = inserted.where("fate < 2").selectExpr(
        "line_id", "warehouse_id", "sku", "qty",
        "changed_at + make_interval(0, 0, 0, 0, 0, 0, CAST(pmod(hash(line_id, 7), 21600) + 1 AS INT)) AS changed_at",
        "fate")
    back = gone.where("fate = 0").selectExpr(
        "line_id", "warehouse_id", "sku", "CAST(pmod(hash(line_id, 8), 60) AS BIGINT) AS qty",
        "changed_at + INTERVAL 1 SECOND AS changed_at")
    stock = (inserted.selectExpr("line_id", "warehouse_id", "sku", "qty", "changed_at", "'I' AS _op")
             .unionByName(gone.selectExpr("line_id", "warehouse_id", "sku", "qty", "changed_at", "'D' AS _op"))
             .unionByName(back.selectExpr("line_id", "warehouse_id", "sku", "qty", "changed_at", "'I' AS _op")))
    stock.coalesce(2).write.mode("overwrite").parquet(str(out / "data" / "stock"))
    written = spark.read.parquet(str(out / "data" / "stock"))
    return {"stock": written.count(), "deletions": written.where("_op = 'D'").count(), "warehouses": 200}


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
