"""Data of the ``price_watch`` scenario: a marketplace's catalog of offers, then a day of changes.

Scale 1 is 1,000,000 offers on 100,000 products, posted before the day, and through the day 8
products an hour whose offers change: each such product loses one of its offers (a withdrawal
repeats the offer's values with ``_op = 'D'``) and gets a new one at another price. Below scale 1
the changes shrink with the catalog; above it only the catalog grows (a bigger marketplace's
history, the same day's activity), so a plan's last time point should not grow with the scale.
Values come from hashes of the row number, so a scale always generates the same rows.

    python -m scenarios.price_watch.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAY = "TIMESTAMP '2026-11-22 00:00:00'"
PER_PRODUCT = 10  # offers per product in the catalog
CHANGED_PER_HOUR = 8


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write ``data/offers`` (parquet) under ``out``; returns row counts."""
    products = max(20, int(100_000 * scale))
    catalog = spark.range(products * PER_PRODUCT).selectExpr(
        "id AS offer_id",
        f"CAST(id DIV {PER_PRODUCT} AS INT) AS product_id",
        "CAST(100 + pmod(hash(id, 1), 9900) AS BIGINT) AS price",
        # posted in the week before the day
        f"{DAY} - make_interval(0, 0, 0, 0, 0, 0, CAST(1 + pmod(hash(id, 2), 604799) AS INT)) AS changed_at",
    )
    changes = max(4, int(24 * CHANGED_PER_HOUR * min(scale, 1.0)))
    # change n: a product (spread by a hash), one of its offers withdrawn, a new offer posted
    changed = spark.range(changes).selectExpr(
        "id AS n",
        f"CAST(pmod(hash(id, 3), {products}) AS INT) AS product_id",
        f"CAST(pmod(hash(id, 4), {PER_PRODUCT}) AS INT) AS slot",
        f"{DAY} + make_interval(0, 0, 0, 0, 0, 0, CAST(1 + (id * 86398) DIV {changes} AS INT)) AS changed_at",
    )
    withdrawn = changed.alias("c").join(
        catalog.alias("o"), "product_id").where(f"o.offer_id = c.product_id * {PER_PRODUCT} + c.slot") \
        .selectExpr("o.offer_id", "product_id", "o.price", "c.changed_at", "'D' AS _op", "c.n")
    # a product changed twice withdraws the same slot once only: keep each offer's first withdrawal
    withdrawn = withdrawn.selectExpr("*", "row_number() OVER (PARTITION BY offer_id ORDER BY n) AS k") \
        .where("k = 1").drop("k", "n")
    posted = changed.selectExpr(
        f"{products * PER_PRODUCT} + n AS offer_id", "product_id",
        "CAST(100 + pmod(hash(n, 5), 9900) AS BIGINT) AS price",
        "changed_at + INTERVAL 1 SECOND AS changed_at", "'I' AS _op")
    offers = (catalog.selectExpr("*", "'I' AS _op").unionByName(withdrawn).unionByName(posted))
    offers.coalesce(2).write.mode("overwrite").parquet(str(out / "data" / "offers"))
    written = spark.read.parquet(str(out / "data" / "offers"))
    return {"offers": written.count(), "withdrawn": written.where("_op = 'D'").count(), "products": products}


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
