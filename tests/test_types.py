"""Result types tempura derives for decimal arithmetic equal Spark's own: partial aggregates of
incremental plans are cast to these types, so a narrower one would round every sum."""

from __future__ import annotations

from typing import Any

import pytest

from tempura.sql import parse_query

SCHEMA = {"t": {"d": "decimal(15,2)", "e": "decimal(12,4)", "i": "int", "b": "bigint", "f": "double"}}
EXPRESSIONS = [
    "d * 0.05", "d * (1 - d)", "d * (1 - e) * (1 + d)", "d / 3", "d / e", "i * 1.5", "d + i", "b - d", "f * d",
    "-(d * d)", "d * 100", "i + 1", "f + 1", "1.25", "SUM(d * (1 - e))", "SUM(d) / SUM(e)", "AVG(d * e)",
    "d * d * d * d",
]


@pytest.mark.spark
def test_decimal_arithmetic_types_equal_sparks(spark: Any) -> None:
    spark.sql("SELECT CAST(1 AS DECIMAL(15,2)) AS d, CAST(2 AS DECIMAL(12,4)) AS e, 1 AS i, CAST(5 AS BIGINT) AS b, "
              "1.0D AS f").createOrReplaceTempView("t")
    wrong = []
    for text in EXPRESSIONS:
        ours = parse_query(f"SELECT {text} AS x FROM t", SCHEMA).plan.schema.fields[0].type
        theirs = spark.sql(f"SELECT {text} AS x FROM t").schema.fields[0].dataType.simpleString()
        if ours != theirs:
            wrong.append(f"{text}: {ours}, Spark {theirs}")
    assert not wrong, wrong
