"""Rows that land within a lag of the key they reference (``arrival.within``), and the joins
that read only the intervals whose rows may match (``tvr-narrow-keyed-read``).

The arithmetic of how far back an interval's keys reach is checked as such; the landing check
and the plans run on Spark, every method against ``spark.sql`` at every time point.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_tvr_bounds import KEYED, KEYED_QUERIES
from test_tvr_properties import SETTINGS, Case, Table, check_case, plan_case
from tempura.runtime.keys import violations
from tempura.tvr.bounds import KeyRule, reach

SIX = [dt.datetime(2026, 11, 22, h) for h in (6, 12, 18)] + [dt.datetime(2026, 11, 23)]


def test_how_far_back_an_intervals_keys_reach() -> None:
    """A row landing in ``(t_{j-1}, t_j]`` at most ``lag`` after its key holds a key landed after
    ``t_{j-1} - lag``: in ``(reach_j, j]``."""
    origin = dt.datetime(2026, 11, 22)
    assert reach(SIX, origin, None) == (0, 1, 2, 3)  # no lag: the row's own interval
    assert reach(SIX, origin, dt.timedelta(hours=12)) == (0, 0, 0, 1)
    assert reach(SIX, origin, dt.timedelta(hours=6)) == (0, 0, 1, 2)
    assert reach(SIX, origin, dt.timedelta(hours=5)) == (0, 0, 1, 2)  # a key of 12:00 fits a row of 13:00
    assert reach(SIX, None, dt.timedelta(days=2)) == (0, 0, 0, 0)
    days = [dt.date(2026, 1, d) for d in (2, 3, 4)]
    assert reach(days, dt.date(2026, 1, 1), dt.timedelta(hours=36)) == (0, 0, 0)  # dates at midnight, not truncated
    assert reach(days, dt.date(2026, 1, 1), dt.timedelta(hours=24)) == (0, 0, 1)
    assert reach((1, 2, 3, 4, 5), None, 2) == (0, 0, 0, 1, 2)
    assert reach((1, 2, 3), None, dt.timedelta(hours=1)) == (0, 0, 0)  # no subtraction: no narrowing


# -- the landing check -----------------------------------------------------------------------------

RULE = KeyRule("sales.o_id", "sales", "o_id", (("returns", "r_id"),), ((("returns", "r_id"), dt.timedelta(hours=12)),))
REACH = {("returns", "r_id"): reach(SIX, None, dt.timedelta(hours=12))}


def _reader(spark: Any, landed: dict[str, list[tuple[Any, int]]]) -> Any:
    def read(source: str, intervals: Sequence[int]) -> Any:
        column = "o_id" if source == "sales" else "r_id"
        return spark.createDataFrame([(k,) for k, i in landed[source] if i in set(intervals)], f"{column} bigint")

    return read


@pytest.mark.spark
@pytest.mark.parametrize("returns, found", [
    ([(2, 4), (3, 4), (4, 4)], None),  # sales of t2..t4: within 12 hours of t3
    ([(1, 4)], "returns.r_id = 1 landed at t4, but no sales row holding that key landed in the intervals within 12h "
               "before it (t2..t4)"),
    ([(9, 4)], "returns.r_id = 9 landed at t4, but no sales row holding that key landed in the intervals within 12h "
               "before it (t2..t4)"),
    ([(None, 4)], "returns.r_id is NULL in a row landed at t4: rows landing with sales.o_id hold a key"),
])
def test_a_row_referencing_a_key_landed_before_the_lag_is_named(spark: Any, returns: list[tuple[Any, int]],
                                                               found: str | None) -> None:
    sales = [(1, 1), (2, 2), (3, 3), (4, 4)]
    got = violations([RULE], _reader(spark, {"sales": sales, "returns": returns}), 4, REACH)
    assert got == ({} if found is None else {"sales.o_id": found})


@pytest.mark.spark
@pytest.mark.parametrize("returned, found", [
    (dt.datetime(2026, 11, 22, 18, 30), None),
    (dt.datetime(2026, 11, 22, 20), "returns.r_id = 2 arrived at 2026-11-22 20:00:00, more than 12h after a sales row "
                                    "holding that key (arrived at 2026-11-22 07:00:00)"),
])
def test_a_row_arriving_more_than_the_lag_after_its_key_is_named(spark: Any, returned: dt.datetime,
                                                                 found: str | None) -> None:
    """Where both sources arrive by a column, the lag holds row by row: a return landing at
    ``t4`` that references a sale of interval 2 passes the intervals' check, but not when it
    arrived more than 12 hours after that sale (the planner leaves out the sales that arrived
    before the earliest its returns allow)."""
    sales = [(1, dt.datetime(2026, 11, 22, 1), 1), (2, dt.datetime(2026, 11, 22, 7), 2),
             (3, dt.datetime(2026, 11, 22, 13), 3)]
    returns = [(2, returned, 4), (3, dt.datetime(2026, 11, 22, 19), 4)]

    def read(source: str, intervals: Sequence[int]) -> Any:
        rows, schema = (sales, "o_id bigint, at timestamp") if source == "sales" else (returns, "r_id bigint, r_at timestamp")
        return spark.createDataFrame([(k, a) for k, a, i in rows if i in set(intervals)], schema)

    got = violations([RULE], read, 4, REACH, {"sales": "at", "returns": "r_at"})
    assert got == ({} if found is None else {"sales.o_id": found})


# -- plans -----------------------------------------------------------------------------------------

GOLDEN = "SELECT u.s AS g0, SUM(IF(r.b IS NULL, u.c, -r.b)) AS m0 FROM u LEFT JOIN r ON u.a = r.a GROUP BY u.s"
"""The golden example's shape: sales ``u`` net of the returns ``r`` that reference them."""


@st.composite
def lagged(draw: st.DrawFn) -> Case:
    """Tables as :data:`~test_tvr_bounds.KEYED` declares, but ``r`` landing up to ``lag``
    intervals after the key it holds (time points are the integers ``1..k``, so a lag of ``n``
    reaches back ``n`` intervals), and ``w`` with it."""
    k = draw(st.integers(2, 4))
    lag = draw(st.integers(1, 2))
    landing = {v: draw(st.integers(1, k)) for v in (0, 1, 2, 3) if draw(st.booleans())}

    def rows(keys: list[int], domains: tuple[tuple[Any, ...], ...], late: int) -> tuple[Any, ...]:
        out = []
        for _ in range(draw(st.integers(0, 8)) if keys else 0):
            key = draw(st.sampled_from(keys))
            data = tuple(draw(st.sampled_from(d)) for d in domains)
            out.append((key, *data, min(k, landing[key] + draw(st.integers(0, late)))))
        return tuple(out)

    ints, strings = (None, 0, 1, 2, 3), (None, "x", "y")
    u = Table("u", rows(sorted(landing), (ints, strings), 0), False)
    held = sorted({row[0] for row in u.rows})
    r = Table("r", rows(held, (ints, strings), lag), False)
    w = Table("w", rows(held, ((None, 1, 2),), 0), False)
    sql = draw(st.sampled_from((GOLDEN, *KEYED_QUERIES)))
    return Case(sql, (r, u, w), k, draw(st.sampled_from(["deadline", "total"])),
                estimated_rows=(("r", 1e6), ("u", 2e5), ("w", 1e6)), bounds=True, keys=KEYED, lags=(("r", "a", lag),))


@pytest.mark.spark
@settings(max_examples=10, **SETTINGS)  # type: ignore[arg-type]
@given(case=lagged())
def test_plans_over_rows_landing_within_a_lag_deliver_the_reference(fast_spark: Any, case: Case) -> None:
    check_case(fast_spark, case)


@pytest.mark.spark
def test_the_golden_example_reads_only_the_sales_a_return_may_reference(fast_spark: Any) -> None:
    """Returns land at most one interval after their sale: at t4, the old sales the new returns
    may match are those of t3 only (``SS(2,3]``), and the returns that may match the new sales
    are those of t4 (``SS(3,4]``). Without the declarations nothing narrows, at a higher
    estimated cost. The plans deliver the reference at every time point, under both
    objectives."""
    u = Table("u", ((1, 100, "x", 1), (2, 200, "y", 2), (3, 300, "x", 3), (4, 40, "y", 3), (5, 7, "x", 4), (6, 8, "y", 4)),
              False)
    r = Table("r", ((1, 10, "x", 2), (2, 20, "y", 3), (3, 30, "x", 4), (4, 4, None, 4), (5, 5, "x", 4)), False)
    keys, lags = (("u", "a", "u.a"), ("r", "a", "u.a")), (("r", "a", 1),)
    rows = (("r", 1e5), ("u", 1e6))
    case = Case(GOLDEN, (r, u), 4, deliver=(4,), estimated_rows=rows, methods=("ojv",), bounds=True, keys=keys, lags=lags)
    plan = plan_case(case)["ojv"]
    read = {s.view for f in plan.fragments if f.time == 4 for s in f.sources}
    assert "u__ss_2_3" in read and not any(v.startswith("u__ss_0_") for v in read), read
    assert plan.search["tvr_rule_firings"].get("tvr-narrow-keyed-read"), plan.search["tvr_rule_firings"]
    wide = plan_case(Case(GOLDEN, (r, u), 4, deliver=(4,), estimated_rows=rows, methods=("ojv",), bounds=True))["ojv"]
    assert any(s.view == "u__ss_0_3" for f in wide.fragments if f.time == 4 for s in f.sources)
    assert not wide.search["tvr_rule_firings"].get("tvr-narrow-keyed-read")
    assert wide.cost.weighted > plan.cost.weighted
    for objective in ("deadline", "total"):
        check_case(fast_spark, Case(GOLDEN, (r, u), 4, objective, estimated_rows=rows, bounds=True, keys=keys, lags=lags))


@pytest.mark.spark
def test_a_narrowed_snapshot_is_the_bag_of_rows_that_arrived_in_its_intervals(spark: Any) -> None:
    """``SS(u,v]``: the rows (duplicates kept) that arrived in ``(t_u, t_v]``, without ``__m``;
    change data has no such read (a deletion may remove a row of an earlier interval)."""
    from tempura.runtime.sources import SourceData, register_read

    rows = [(1, "a", 1), (2, "b", 2), (2, "b", 2), (3, "c", 3), (4, "d", 4)]
    frame = spark.createDataFrame(rows, "k bigint, v string, t int")
    register_read(spark, SourceData("s", frame, "t", time_values=(1, 2, 3, 4)), 1, 3, False, "s__ss_1_3")
    got = spark.table("s__ss_1_3")
    assert got.columns == ["k", "v", "t"]  # the arrival column is the query's to read, as in SS[v]
    assert sorted(tuple(r) for r in got.collect()) == [(2, "b", 2), (2, "b", 2), (3, "c", 3)]
    changes = spark.createDataFrame([(1, "a", 1, "I")], "k bigint, v string, t int, op string")
    with pytest.raises(ValueError, match="has deletions"):
        register_read(spark, SourceData("c", changes, "t", "op", time_values=(1, 2, 3, 4)), 1, 3, False, "c__ss_1_3")


@pytest.mark.spark
def test_at_the_first_interval_a_lagged_reference_is_checked_against_its_own(spark: Any) -> None:
    sales = [(1, 1), (2, 2)]
    got = violations([RULE], _reader(spark, {"sales": sales, "returns": [(1, 1), (2, 1)]}), 1, REACH)
    assert got == {"sales.o_id": "returns.r_id = 2 landed at t1, but no sales row holding that key landed in the "
                                 "intervals within 12h before it (t1..t1)"}


def test_a_lag_is_written_as_a_spec_writes_it() -> None:
    from tempura.runtime.keys import duration_text

    assert duration_text(dt.timedelta(hours=12)) == "12h"
    assert duration_text(dt.timedelta(days=1, hours=6, seconds=5)) == "1d6h5s"
    assert duration_text(3) == "3"
