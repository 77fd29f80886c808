"""A string compared with a DATE column is read as Spark casts it to a date (``'2002-3-01'``
too), and a string Spark would not read as a date never crashes planning: its selectivity is a
default, said in the estimator's notes."""

from __future__ import annotations

from typing import Any

import pytest

from tempura.optimizer import Optimizer
from tempura.sql import parse_query
from tempura.stats import ColumnStats, Estimator, TableStats
from tempura.stats.values import EPOCH, NotConstant, parse_date

STRINGS = ["2002-3-01", "2002-03-01", "2002-3-1", "2002", "2002-03", "2002-03-01 10:00:00", "2002-03-01T12",
           " 2000-1-1 ", "1998-08-04", "02-3-1", "2002-13-01", "2002/3/1", "2002-02-30", "x", "2002-3-", "-"]


@pytest.mark.spark
def test_date_strings_are_read_as_spark_casts_them(spark: Any) -> None:
    for text in STRINGS:
        row = spark.sql(f"SELECT try_cast('{text}' AS DATE) AS d").collect()[0]
        try:
            ours: float | None = parse_date(text)
        except NotConstant:
            ours = None
        theirs = None if row.d is None else float((row.d - EPOCH).days)
        assert ours == theirs, (text, ours, theirs)


def test_a_date_string_of_one_digit_months_or_none_at_all_plans() -> None:
    schema = {"date_dim": {"d_date_sk": "int", "d_date": "date"}}
    columns = {"d_date_sk": ColumnStats("number", ndv=73049, min=2415022, max=2488070, unique=True),
               "d_date": ColumnStats("date", ndv=73049, min=parse_date("1900-01-02"), max=parse_date("2100-01-01"))}
    estimator = Estimator(lambda _t: TableStats(73049, 73049 * 12, columns))
    rows = {}
    for text in ("2002-3-01", "2002-03-01", "not a date"):
        query = parse_query(f"SELECT d_date_sk FROM date_dim WHERE d_date >= '{text}'", schema)
        planned = Optimizer(estimator).plan(query)
        rows[text] = planned.physical.stats.rows
    assert rows["2002-3-01"] == rows["2002-03-01"] < 73049
    assert 0 < rows["not a date"] < 73049  # a default selectivity, not a crash
