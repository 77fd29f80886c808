"""Eager aggregation below an outer join (``tvr-aggregate-below-outer-join``): aggregates over the
null-padded side of a left or right join, grouped by preserved columns, planned by every method
with the rewrite in the template, deliver what ``spark.sql`` delivers at every time point, over
tables with NULLs, repeated join values and deletions on either side. (TPC-H Q13's plan at its
deadline, with statistics of real data, is checked in ``tests/test_scenarios.py``.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_tvr_properties import SETTINGS, Case, check_case, plan_case, tables

pytestmark = pytest.mark.spark

QUERIES = (
    "SELECT u.a AS g0, COUNT(r.b) AS m0 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.a",
    "SELECT u.s AS g0, COUNT(*) AS m0, SUM(r.b) AS m1 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.s",
    "SELECT u.a AS g0, u.c AS g1, MIN(r.s) AS m0, MAX(r.b) AS m1 FROM r RIGHT JOIN u ON r.a = u.a AND r.s = u.s "
    "GROUP BY u.a, u.c",
    "SELECT m0 AS g0, COUNT(*) AS n FROM (SELECT u.a, COUNT(r.b) AS m0 FROM u LEFT JOIN r ON u.a = r.a AND r.b > 0 "
    "GROUP BY u.a) AS q GROUP BY m0",
    "SELECT u.a AS g0, COUNT(r.a) AS m0, SUM(r.b + 1) AS m1 FROM u LEFT JOIN r ON u.a = r.b GROUP BY u.a HAVING COUNT(*) > 1",
)


@st.composite
def eager_cases(draw: st.DrawFn) -> Case:
    k = draw(st.integers(2, 4))
    sql = draw(st.sampled_from(QUERIES))
    data = draw(tables(k, frozenset(draw(st.sets(st.sampled_from(["r", "u"]))))))
    rows = (("r", float(draw(st.sampled_from([1000, 1_000_000])))), ("u", 1000.0))
    return Case(sql, tuple(t for t in data if t.name in ("r", "u")), k, draw(st.sampled_from(["deadline", "total"])),
                estimated_rows=rows)


@settings(max_examples=10, **SETTINGS)  # type: ignore[arg-type]
@given(case=eager_cases())
def test_aggregates_below_outer_joins_deliver_the_reference(fast_spark: Any, case: Case) -> None:
    plans = plan_case(case)
    assert plans["ojv"].search["tvr_rule_firings"].get("tvr-aggregate-below-outer-join"), plans["ojv"].search
    check_case(fast_spark, case)

