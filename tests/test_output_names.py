"""Result column names are Spark's: aliases keep their case, unaliased expressions are named by
Spark's printing of them, and a star expands to the names of what it covers. Checked against
Spark's analyzer (no data is read: the tables are empty views)."""

from __future__ import annotations

from typing import Any

import pytest

from tempura import tpcds
from tempura.errors import UnsupportedQuery
from tempura.sql import parse_query

pytestmark = pytest.mark.spark

SCHEMAS = {"t": {"a": "int", "b": "bigint", "c": "string", "d": "decimal(7,2)", "e": "date"}}

EXPRESSIONS = [
    "SELECT a, A AS Mixed, a AS `Big Name`, b + 1, a * (b - 2) / 3, -a, NOT (a > 1), a <> b, a IS NULL, "
    "c IS NOT NULL, a IN (1, 2), a BETWEEN 1 AND 2 FROM t",
    "SELECT COUNT(*), COUNT(DISTINCT c), SUM(d), AVG(b), MIN(e), MAX(c), ROUND(SUM(d) / COUNT(*), 2), "
    "SUBSTRING(c, 1, 2), CONCAT(c, 'x'), COALESCE(MAX(a), 0), UPPER(c) FROM t GROUP BY c",
    "SELECT CASE WHEN a > 1 THEN 'big' ELSE 'small' END, CAST(a AS DECIMAL(15,4)) / CAST(b AS DECIMAL(15,4)) * 100, "
    "CAST(c AS INT), 'lit', 1.50, a % 2 FROM t",
    "SELECT RANK() OVER (PARTITION BY c ORDER BY a DESC), SUM(b) OVER (PARTITION BY c), "
    "SUM(b) OVER (ORDER BY a), ROW_NUMBER() OVER (ORDER BY a), "
    "AVG(b) OVER (PARTITION BY c ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
    "SELECT DENSE_RANK() OVER (ORDER BY a), NTILE(2) OVER (ORDER BY a), PERCENT_RANK() OVER (ORDER BY a), "
    "CUME_DIST() OVER (ORDER BY a), LAG(b) OVER (ORDER BY a), LEAD(b, 2, 0) OVER (ORDER BY a), "
    "FIRST_VALUE(b) OVER (ORDER BY a), COUNT(*) OVER (), "
    "MAX(b) OVER (PARTITION BY c ORDER BY a RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t",
    "SELECT * FROM (SELECT a AS X1, c FROM t) AS s, (SELECT b AS Y FROM t) AS u",
    "WITH w AS (SELECT c AS Cat, SUM(b) FROM t GROUP BY c) SELECT * FROM w",
    "SELECT s.* FROM (SELECT a AS Q FROM t) AS s",
]


@pytest.fixture(scope="module")
def views(spark: Any) -> Any:
    """Empty views of the tables: enough for Spark's analyzer to name columns."""
    for name, columns in {**SCHEMAS, **tpcds.SCHEMA}.items():
        spark.createDataFrame([], ", ".join(f"{c} {t}" for c, t in columns.items())).createOrReplaceTempView(name)
    return spark


@pytest.mark.parametrize("sql", EXPRESSIONS)
def test_names_of_expressions_are_sparks(views: Any, sql: str) -> None:
    assert list(parse_query(sql, SCHEMAS).names) == views.sql(sql).columns


def test_names_of_every_tpcds_query_are_sparks(views: Any) -> None:
    checked = 0
    for name in tpcds.query_names():
        text = tpcds.query_text(name)
        try:
            query = parse_query(text, tpcds.SCHEMA)
        except UnsupportedQuery:
            continue
        assert list(query.names) == views.sql(text).columns, name
        checked += 1
    assert checked >= 70
