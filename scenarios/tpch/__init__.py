"""TPC-H as standing queries: the data the TPC-H scenarios share.

Orders and line items *arrive by order date*: ``orders`` carries ``o_orderdate``, and each
``lineitem`` row gets ``l_orderdate``, its order's date, as its arrival column. The other tables
(customer, nation, region, supplier, part, partsupp) are reference data: their files are found at
the first time point (``arrival: {by: file}``, ``expected: [1, 0, 0, 0]``) and never change.

The TPC-H data of a scale is generated once (``tempura.tpch.generate``) into a cache folder beside
the scenario's, then each scenario writes the tables its query reads under its own ``data/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from tempura import tpch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ARRIVING = ("orders", "lineitem")


def cache_folder(out: Path, scale: float) -> Path:
    """Where the raw TPC-H data of ``scale`` is kept for every scenario copied beside ``out``."""
    return out.resolve().parent / ".tpch" / f"sf{scale:g}"


def generate(spark: SparkSession, out: Path, scale: float, tables: tuple[str, ...]) -> dict[str, int]:
    """Write ``tables`` of TPC-H at ``scale`` as ``out/data/<table>`` (parquet, ``lineitem`` with
    ``l_orderdate``); returns each table's row count."""
    raw = tpch.generate(scale, cache_folder(out, scale)).parent
    counts = {}
    for table in tables:
        frame = spark.read.parquet(str(raw / f"{table}.parquet"))
        if table == "lineitem":
            dates = spark.read.parquet(str(raw / "orders.parquet")).selectExpr("o_orderkey", "o_orderdate AS l_orderdate")
            frame = frame.join(dates, frame["l_orderkey"] == dates["o_orderkey"]).drop("o_orderkey")
        target = out / "data" / table
        frame.coalesce(2 if table in ARRIVING else 1).write.mode("overwrite").parquet(str(target))
        counts[table] = spark.read.parquet(str(target)).count()
    return counts


def generator(*tables: str) -> Callable[[SparkSession, Path, float], dict[str, int]]:
    """The ``generate(spark, out, scale)`` of a TPC-H scenario whose query reads ``tables``."""

    def generate_tables(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
        return generate(spark, out, scale, tables)

    return generate_tables
