"""Data of the ``tpch_q12`` scenario: TPC-H"s orders, lineitem (see :mod:`scenarios.tpch`).

    python -m scenarios.tpch_q12.generate --scale 0.01 --out DIR
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scenarios import generator_main, tpch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLES = ("orders", "lineitem")


def generate(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
    """Write the tables under ``out/data``; returns their row counts."""
    return tpch.generate(spark, out, scale, TABLES)


if __name__ == "__main__":
    generator_main(generate, __doc__.splitlines()[0])
