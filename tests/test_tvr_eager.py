"""Eager aggregation below an outer join (``tvr-aggregate-below-outer-join``): aggregates over the
null-padded side of a left or right join, grouped by preserved columns, planned by every method
with the rewrite in the template, deliver what ``spark.sql`` delivers at every time point, over
tables with NULLs, repeated join values and deletions on either side. (TPC-H Q13's plan at its
deadline, with statistics of real data, is checked in ``tests/test_scenarios.py``.)

Counts over a preserved side that the planner expects not to change after the first time point
(``tvr-outer-join-count-update``) are checked the same way, and the update must be in the plan
that runs: the preserved side repeats join values (a group's count moves by the change times its
rows), and the counted side's groups appear, vanish and come back."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_tvr_properties import R_CHANGES, SETTINGS, Case, Table, check_case, describe, plan_case, tables

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


@settings(max_examples=7, **SETTINGS)  # type: ignore[arg-type]
@given(case=eager_cases())
def test_aggregates_below_outer_joins_deliver_the_reference(fast_spark: Any, case: Case) -> None:
    plans = plan_case(case)
    assert plans["ojv"].search["tvr_rule_firings"].get("tvr-aggregate-below-outer-join"), plans["ojv"].search
    check_case(fast_spark, case)



UPDATE = "tvr-outer-join-count-update"

STATIC_QUERIES = (
    "SELECT u.a AS g0, COUNT(r.b) AS m0 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.a",
    "SELECT m0 AS g0, COUNT(*) AS n FROM (SELECT u.a, COUNT(r.b) AS m0 FROM u LEFT JOIN r ON u.a = r.a AND r.b > 0 "
    "GROUP BY u.a) AS q GROUP BY m0",
    "SELECT u.a AS g0, u.s AS g1, COUNT(r.b) AS m0, COUNT(r.a) AS m1 FROM u LEFT JOIN r ON u.a = r.a AND u.s = r.s "
    "GROUP BY u.a, u.s",
    "SELECT u.a AS g0, COUNT(r.s) AS m0 FROM r RIGHT JOIN u ON r.a = u.a GROUP BY u.a",
)

# u(a, c, s) all at the first time point: a repeated, NULL, and without a match in r
U_STATIC = Table("u", ((1, 100, "x", 1), (1, 101, "y", 1), (2, None, "y", 1), (None, 5, "x", 1), (4, 400, None, 1),
                       (3, 300, "x", 1)), False)


def _static(data: tuple[Table, ...]) -> tuple[Table, ...]:
    """``r`` as drawn, ``u`` landing whole at the first time point."""
    out = []
    for t in data:
        if t.name == "u":
            out.append(Table("u", tuple((*row[:-1], 1) for row in t.rows), False))
        elif t.name == "r":
            out.append(t)
    return tuple(out)


@st.composite
def static_cases(draw: st.DrawFn) -> Case:
    k = draw(st.integers(2, 4))
    sql = draw(st.sampled_from(STATIC_QUERIES))
    data = _static(draw(tables(k, frozenset(draw(st.sets(st.just("r")))))))
    return Case(sql, data, k, draw(st.sampled_from(["deadline", "total"])), estimated_rows=(("r", 1e6), ("u", 1000.0)),
                quiet=(("u", tuple(range(2, k + 1))),))


@settings(max_examples=8, **SETTINGS)  # type: ignore[arg-type]
@given(case=static_cases())
def test_counts_over_an_unchanging_side_deliver_the_reference(fast_spark: Any, case: Case) -> None:
    plans = plan_case(case)
    assert plans["ojv"].search["tvr_rule_firings"].get(UPDATE), plans["ojv"].search
    check_case(fast_spark, case)


@pytest.mark.parametrize("sql", STATIC_QUERIES)
def test_counts_over_an_unchanging_side_are_updated_in_place(fast_spark: Any, sql: str) -> None:
    """On fixed data with deletions, ``auto``'s plan updates the kept counts (the update's change
    column is in its SQL), and every plan delivers the reference at every time point."""
    case = Case(sql, (R_CHANGES, U_STATIC), 3, "deadline", estimated_rows=(("r", 1e6), ("u", 1000.0)), quiet=(("u", (2, 3)),))
    plans = plan_case(case)
    updating = [m for m, plan in plans.items() if any("__delta" in f.sql() for f in plan.fragments)]
    assert "auto" in updating, "\n".join(describe(p) for p in plans.values())
    check_case(fast_spark, case)


QUIET = (("u", (2, 3)),)


@pytest.mark.parametrize("sql, quiet, why", [
    (STATIC_QUERIES[0], (), "the preserved side may change"),
    ("SELECT u.s AS g0, COUNT(r.b) AS m0 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.s", QUIET,
     "grouped by other columns than the join's: a group's rows meet different counts"),
    ("SELECT u.a AS g0, COUNT(*) AS m0 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.a", QUIET,
     "COUNT(*) counts a padded row as one: not linear in the inner count"),
    ("SELECT u.a AS g0, SUM(r.b) AS m0 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.a", QUIET,
     "a sum is NULL without values: not linear in the inner sum"),
])
def test_the_update_needs_an_unchanging_side_and_counts_by_the_join_columns(
        sql: str, quiet: tuple[tuple[str, tuple[int, ...]], ...], why: str) -> None:
    case = Case(sql, (R_CHANGES, U_STATIC), 3, "deadline", estimated_rows=(("r", 1e6), ("u", 1000.0)), quiet=quiet)
    plan = plan_case(dataclasses.replace(case, methods=("ojv",)))["ojv"]
    assert not plan.search["tvr_rule_firings"].get(UPDATE), why


def test_the_update_is_planned_only_where_the_side_does_not_change(fast_spark: Any) -> None:
    """``u`` lands at t1 and again at t4, and nothing at t2 and t3: the counts are updated in
    place at t2 and t3 only — never copied to t4, where ``u``'s new rows are new groups."""
    late = Table("u", U_STATIC.rows + ((1, 102, "x", 4), (5, 500, "y", 4)), False)
    case = Case(STATIC_QUERIES[0], (R_CHANGES, late), 4, "total", estimated_rows=(("r", 1e6), ("u", 1000.0)),
                quiet=(("u", (2, 3)),), methods=("ojv", "auto"))
    plans = plan_case(case)
    times = {f.time for f in plans["auto"].fragments if "__delta" in f.sql()}
    assert times and times <= {2, 3}, describe(plans["auto"])
    check_case(fast_spark, case)
