"""Decimals typed as Spark types them, and kept exact when maintained.

tempura declares each column's type (states are cast to it), so its type of a decimal expression
must be Spark's: a ``CASE``/``IF``/``COALESCE`` over a decimal and an integral widens the
integral to ``decimal(10,0)`` (TPC-DS q66's ``SUM(CASE ... THEN price * quantity ELSE 0 END)``).
And an aggregate over high-precision decimals (``SUM(SUM(x) / n)``, Spark's ``decimal(38,12)``)
must not lose the digits Spark keeps when a delta row is multiplied by its multiplicity."""

from __future__ import annotations

from typing import Any

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from statsfile import StatsFile
from tvrtesting import assert_methods_match_reference
from tempura.cost.vector import Objective
from tempura.optimizer import METHODS, Arrival, Optimizer, plan_methods
from tempura.sql import parse_query
from tempura.sql.scope import aggregate_type, spark_type
from tempura.stats import Estimator
from tempura.tvr import TimePoints

COLUMNS = {"p": "decimal(7,2)", "q": "int", "b": "bigint", "r": "decimal(38,12)", "d": "double"}

EXPRESSIONS = [
    "p * q", "p * 3", "p / q", "SUM(p * q) / q", "r * b", "p + r",
    "CASE WHEN q = 1 THEN p * q ELSE 0 END", "CASE WHEN q = 1 THEN p ELSE 0 END", "CASE WHEN q = 1 THEN p * 3 ELSE 0 END",
    "IF(q = 1, p, 0)", "IF(q = 1, p, b)", "COALESCE(p, 0)", "COALESCE(p, b)", "COALESCE(p, r)",
    "CASE WHEN q = 1 THEN p ELSE NULL END", "CASE WHEN q = 1 THEN p ELSE 0.5 END", "CASE WHEN q = 1 THEN p ELSE d END",
    "CASE WHEN q = 1 THEN q ELSE 0 END", "SUM(CASE WHEN q = 1 THEN p * q ELSE 0 END)", "AVG(IF(q = 1, p, 0))",
]


@pytest.mark.spark
def test_decimal_expressions_have_sparks_types(spark: Any) -> None:
    schema = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    spark.createDataFrame([], schema).createOrReplaceTempView("typed")
    wrong = []
    for text in EXPRESSIONS:
        grouped = " GROUP BY q" if "SUM(" in text or "AVG(" in text else ""
        select = f"SELECT {text} AS v FROM typed{grouped}"
        expected = spark.sql(select).schema["v"].dataType.simpleString()
        tree = annotate_types(qualify(sqlglot.parse_one(select, read="spark"), schema={"typed": COLUMNS}, dialect="spark"),
                              schema={"typed": COLUMNS}, dialect="spark")
        node = tree.expressions[0].this
        actual = aggregate_type(node) if isinstance(node, exp.AggFunc) else spark_type(node)
        if actual != expected:
            wrong.append(f"{text}: {actual}, Spark {expected}")
    assert not wrong, wrong


SCHEMAS = {"sales": {"g": "string", "w": "int", "price": "decimal(7,2)", "qty": "int", "area": "int"}}
TIMES = (1, 2, 3, 4)
# (g, w, price, qty, area, at): sums divided by an area give digits past the sixth decimal place
ROWS = [
    ("a", 1, "12.34", 3, 977787, 1), ("a", 1, "0.07", 1, 977787, 1), ("b", 2, "99.99", 7, 138504, 1),
    ("a", 1, "5.55", 2, 977787, 2), ("b", 2, "1.01", 1, 138504, 2), ("a", 3, "7.77", 9, 294242, 3),
    ("a", 1, "3.33", 4, 977787, 3), ("b", 2, "8.88", 2, 138504, 4), ("a", 3, "0.01", 1, 294242, 4),
]
QUERY = (
    "SELECT g, SUM(per_area) AS total, SUM(sold) AS sold FROM ("
    "SELECT g, w, SUM(CASE WHEN qty > 1 THEN price * qty ELSE 0 END) / area AS per_area, "
    "SUM(CASE WHEN qty > 1 THEN price * qty ELSE 0 END) AS sold "
    "FROM sales GROUP BY g, w, area) AS per_warehouse GROUP BY g"
)


@pytest.mark.spark
def test_a_sum_of_high_precision_quotients_is_maintained_exactly(fast_spark: Any) -> None:
    """TPC-DS q66's shape: per-group sums divided by an integer (``decimal(38,12)``), summed
    again. Every method's result equals Spark's to the last digit at every time point."""
    from decimal import Decimal

    from tempura.runtime.sources import SourceData

    rows = [(g, w, Decimal(p), q, a, at) for g, w, p, q, a, at in ROWS]
    frame = fast_spark.createDataFrame(rows, "g string, w int, price decimal(7,2), qty int, area int, at int")
    sources = {"sales": SourceData("sales", frame, "at", time_values=TIMES)}
    planner = Optimizer(Estimator(StatsFile(SCHEMAS).lookup), Arrival(lambda _t, a, b: (b - a) / 4, lambda _t: True))
    plans = plan_methods(planner, parse_query(QUERY, SCHEMAS), QUERY, TimePoints(TIMES, TIMES), Objective.deadline(4), METHODS)
    assert {"ivm", "batch"} <= set(plans)
    assert_methods_match_reference(fast_spark, QUERY, sources, plans, TIMES)
