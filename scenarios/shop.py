"""Data of the ``shop_*`` scenarios: a shop's own e-commerce feeds over two days.

- ``orders`` (``order_id``, ``customer_id``, ``order_ts``): placed from 06:00 to midnight; no
  order is placed at night (00:00–06:00), so the first interval of each day is quiet.
- ``order_lines`` (``line_id``, ``order_id``, ``product_id``, ``qty``, ``price`` DECIMAL(10,2),
  ``order_ts``): one to four lines per order, landing with it.
- ``customers``: a change feed (``_op`` I or D, ``changed_at``). Every customer is inserted the
  day before the schedule starts; through both days, nights included, a tenth of them move to
  another country (a deletion of the old row and an insertion of the new one, a second apart).
- ``refunds`` (``refund_id``, ``line_id``, ``amount``, ``refunded_at``, ``_op``): a twentieth of
  the lines are refunded (part of their amount) one to twelve hours after the order; a fifth of
  those refunds are cancelled later (a deletion repeating the refund's values).
- ``products`` (``product_id``, ``name``, ``category``): one file, there from the start.

Scale 1 is 100,000 orders. Values come from hashes of the row number, so a scale always writes
the same rows.

    python -m scenarios.shop_revenue_by_hour.generate --scale 0.02 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

START = "TIMESTAMP '2026-11-30 00:00:00'"
DAYS = 2
COUNTRIES = ("DE", "FR", "NL", "PL", "ES", "IT", "SE")


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write the five sources (parquet) under ``out/data``; returns their row counts."""
    orders_n = max(200, int(100_000 * scale))
    customers_n = max(50, orders_n // 10)
    products_n = 60
    data = out / "data"
    countries = "array(" + ", ".join(f"'{c}'" for c in COUNTRIES) + ")"
    # an order's second of the two days, never in the night's six hours
    day_seconds = 18 * 3600
    orders = spark.range(orders_n).selectExpr(
        "id AS order_id",
        f"pmod(hash(id, 1), {customers_n}) AS customer_id",
        f"{START} + make_interval(0, 0, 0, CAST(pmod(hash(id, 2), {DAYS}) AS INT), 6, 0, "
        f"CAST(pmod(hash(id, 3), {day_seconds - 1}) + 1 AS INT)) AS order_ts")
    orders.coalesce(1).write.mode("overwrite").parquet(str(data / "orders"))
    lines = orders.selectExpr("order_id", "order_ts", "explode(sequence(1, 1 + pmod(hash(order_id, 4), 4))) AS n") \
        .selectExpr(
            "order_id * 10 + n AS line_id", "order_id",
            f"pmod(hash(order_id, n, 5), {products_n}) AS product_id",
            "CAST(1 + pmod(hash(order_id, n, 6), 3) AS INT) AS qty",
            "CAST((500 + pmod(hash(order_id, n, 7), 9500)) / 100 AS DECIMAL(10, 2)) AS price",
            "order_ts")
    lines.coalesce(1).write.mode("overwrite").parquet(str(data / "order_lines"))
    first = spark.range(customers_n).selectExpr(
        "id AS customer_id", f"concat('customer ', id) AS name",
        f"element_at({countries}, CAST(pmod(hash(id, 8), {len(COUNTRIES)}) + 1 AS INT)) AS country",
        f"{START} - INTERVAL 1 DAY + make_interval(0, 0, 0, 0, 0, 0, CAST(pmod(hash(id, 9), 86000) AS INT)) AS changed_at",
        "'I' AS _op")
    # the movers' changes are spread evenly over both days (under 6 hours apart), so that every
    # night has some
    movers = first.where("pmod(hash(customer_id, 10), 10) = 0").selectExpr(
        "customer_id", "name", "country",
        "row_number() OVER (ORDER BY customer_id) AS r", "count(*) OVER () AS n").selectExpr(
        "customer_id", "name", "country",
        f"{START} + make_interval(0, 0, 0, 0, 0, 0, CAST((2 * r - 1) * {DAYS * 86400} / (2 * n) AS INT)) AS changed_at")
    moved = movers.selectExpr(
        "customer_id", "name",
        f"element_at({countries}, CAST(pmod(hash(customer_id, 12), {len(COUNTRIES)}) + 1 AS INT)) AS country",
        "changed_at + INTERVAL 1 SECOND AS changed_at", "'I' AS _op")
    customers = first.unionByName(movers.selectExpr("*", "'D' AS _op")).unionByName(moved)
    customers.coalesce(1).write.mode("overwrite").parquet(str(data / "customers"))
    refunded = lines.where("pmod(hash(line_id, 13), 20) = 0").selectExpr(
        "line_id AS refund_id", "line_id",
        "CAST(price * qty * (1 + pmod(hash(line_id, 14), 4)) / 4 AS DECIMAL(10, 2)) AS amount",
        "order_ts + make_interval(0, 0, 0, 0, CAST(1 + pmod(hash(line_id, 15), 12) AS INT), 0, 0) AS refunded_at")
    # a refund falling in the night is made in the morning: the nights stay quiet
    refunded = refunded.selectExpr(
        "refund_id", "line_id", "amount",
        "IF(hour(refunded_at) < 6, date_trunc('DAY', refunded_at) + INTERVAL 7 HOURS, refunded_at) AS refunded_at")
    cancelled = refunded.where("pmod(hash(refund_id, 16), 5) = 0").selectExpr(
        "refund_id", "line_id", "amount", "refunded_at + INTERVAL 30 MINUTES AS refunded_at", "'D' AS _op")
    refunds = refunded.selectExpr("*", "'I' AS _op").unionByName(cancelled)
    refunds.coalesce(1).write.mode("overwrite").parquet(str(data / "refunds"))
    categories = "array('garden', 'kitchen', 'books', 'toys', 'tools')"
    products = spark.range(products_n).selectExpr(
        "id AS product_id", "concat('product ', id) AS name",
        f"element_at({categories}, CAST(pmod(hash(id, 17), 5) + 1 AS INT)) AS category")
    products.coalesce(1).write.mode("overwrite").parquet(str(data / "products"))
    return {name: spark.read.parquet(str(data / name)).count()
            for name in ("orders", "order_lines", "customers", "refunds", "products")}
