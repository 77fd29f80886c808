"""Time-sliced landings (:mod:`tempura.optimizer.slices`): the slices an interval splits into,
which reads a declared arrival lag bounds in time, and which of them pay for slicing.

The plans here are built by hand over reads of a sales table keyed by ``o_id`` and a returns
table whose ``r_id`` lands at most 10 time units after its sale; the scenario run on Spark is in
``tests/test_tpcds_scenarios.py``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from sqlglot import exp

from tempura.algebra import Field, Join, JoinKind, Scan, ScanColumn, Union
from tempura.cost.model import CostConstants
from tempura.cost.vector import CostVector, Objective
from tempura.optimizer.slices import choose_slices, find_since, key_after, price_since
from tempura.stats.relation import RelStats
from tempura.tvr.bounds import ArrivalBounds, SourceBound
from tempura.tvr.layout import Layout, interval_slices, slice_bounds, slices_after
from tempura.tvr.operators import SourceRead
from tempura.tvr.plan import Fragment, MultiTimePlan
from tempura.tvr.time import TimePoints

POINTS = (100, 200, 300, 400)
INT = exp.DataType.build("int")


def test_an_interval_splits_into_slices_of_equal_length() -> None:
    assert slice_bounds(0, 100, 4) == [25, 50, 75]
    assert slice_bounds(0, 10, 4) == [2, 5, 7]  # integer times rounded down
    assert slice_bounds(0, 2, 4) == [0, 1, 1]  # a short interval: some slices stay empty
    noon = dt.datetime(2026, 11, 22, 12)
    assert slice_bounds(noon, noon + dt.timedelta(hours=12), 3) == [noon + dt.timedelta(hours=4), noon + dt.timedelta(hours=8)]
    day = dt.date(2026, 1, 1)
    assert slice_bounds(day, day + dt.timedelta(days=8), 4) == [day + dt.timedelta(days=d) for d in (2, 4, 6)]
    assert interval_slices(POINTS, None, 1, 4) is None  # the first interval has no start without an origin
    assert interval_slices(POINTS, 0, 1, 4) == [25, 50, 75]
    assert interval_slices(POINTS, None, 3, 2) == [250]


def test_a_bound_leaves_out_the_slices_at_or_before_it() -> None:
    bounds = [25, 50, 75]  # slices (.., 25], (25, 50], (50, 75], (75, ..]
    assert slices_after(bounds, 50) == {2, 3}
    assert slices_after(bounds, 49) == {1, 2, 3}
    assert slices_after(bounds, 0) == {0, 1, 2, 3}
    assert slices_after(bounds, 500) == {3}  # the last slice is always read: it holds the interval's end
    noon = dt.datetime(2026, 11, 22, 12)
    assert slices_after([dt.date(2026, 11, 22), dt.date(2026, 11, 23)], noon) == {1, 2}  # a date at its midnight


# -- bounded reads -------------------------------------------------------------------------------

def read(table: str, start: int, end: int, delta: bool, *names: str) -> tuple[Scan, SourceRead]:
    source = Scan(table, tuple(ScanColumn(n, Field(n, INT, True)) for n in names), table)
    found = SourceRead(source, start, end, delta)
    return Scan(found.view, tuple(ScanColumn(n, Field(n, INT, True)) for n in names), found.view), found


def eq(a: str, b: str) -> exp.Expr:
    return exp.EQ(this=exp.column(a), expression=exp.column(b))


def bounds(lag: int = 10, on_time: bool = True) -> ArrivalBounds:
    return ArrivalBounds({"sales": SourceBound("at", POINTS, 0), "returns": SourceBound("r_at", POINTS, 0, on_time)},
                         keys={"sales": {"o_id": "sales.o_id"}, "returns": {"r_id": "sales.o_id"}},
                         lags={("returns", "r_id"): ("sales", "o_id", lag)})


OLD_SALES, OLD = read("sales", 2, 3, False, "o_id", "amount", "at")  # rows landed in (t2, t3]
NEW_RETURNS, NEW = read("returns", 3, 4, True, "r_id", "r_at")  # changes in (t3, t4]
READS = {OLD.view: OLD, NEW.view: NEW}


def stats(_node: Any) -> RelStats:
    return RelStats(1000.0, 64.0, {})


def test_returns_landed_after_t3_reach_back_to_t3_less_the_lag() -> None:
    assert key_after(NEW_RETURNS, "r_id", READS, bounds()) == (("sales", "o_id"), 290)
    assert key_after(NEW_RETURNS, "r_id", READS, bounds(on_time=False)) is None  # a late row may be older
    assert key_after(NEW_RETURNS, "r_at", READS, bounds()) is None  # not a key column
    assert key_after(OLD_SALES, "o_id", READS, bounds()) is None  # the key's own rows: no lag declared


@pytest.mark.parametrize("kind, bounded", [(JoinKind.SEMI, True), (JoinKind.INNER, True), (JoinKind.RIGHT, True),
                                           (JoinKind.LEFT, False), (JoinKind.ANTI, False)])
def test_a_read_is_bounded_where_the_join_drops_its_rows_that_match_nothing(kind: JoinKind, bounded: bool) -> None:
    """Below a semi, inner or right join, old sales that arrived at or before ``t3 - 10`` match no
    new return; the preserved side of a left join and the left of an anti join keep them."""
    plan = Join(kind, OLD_SALES, NEW_RETURNS, eq("o_id", "r_id"))
    found = find_since(plan, READS, bounds(), stats, 4)
    assert [(s.view, s.source, s.column, s.after) for s in found] == ([(OLD.view, "sales", "at", 290)] if bounded else [])


def test_a_bound_before_the_reads_start_leaves_nothing_out() -> None:
    plan = Join(JoinKind.SEMI, OLD_SALES, NEW_RETURNS, eq("o_id", "r_id"))
    assert find_since(plan, READS, bounds(lag=150), stats, 4) == []  # 300 - 150 is before t2 = 200
    days = tuple(dt.date(2026, 1, d) for d in (1, 21, 31))  # date time points: a lag subtracts to a timestamp
    dated = ArrivalBounds({"sales": SourceBound("at", days, dt.date(2025, 12, 1)),
                           "returns": SourceBound("r_at", days, dt.date(2025, 12, 1))},
                          keys={"sales": {"o_id": "sales.o_id"}, "returns": {"r_id": "sales.o_id"}},
                          lags={("returns", "r_id"): ("sales", "o_id", dt.timedelta(days=15))})
    old, old_read = read("sales", 1, 2, False, "o_id", "at")  # rows landed in (Jan 1, Jan 21]
    new, new_read = read("returns", 2, 3, True, "r_id", "r_at")  # returns of (Jan 21, Jan 31]
    reads = {old_read.view: old_read, new_read.view: new_read}
    semi = Join(JoinKind.SEMI, old, new, eq("o_id", "r_id"))
    assert [s.after for s in find_since(semi, reads, dated, stats, 3)] == [dt.datetime(2026, 1, 6)]
    late = ArrivalBounds(dated.sources, keys={"sales": {"o_id": "sales.o_id"}, "returns": {"r_id": "sales.o_id"}},
                         lags={("returns", "r_id"): ("sales", "o_id", dt.timedelta(days=25))})
    assert find_since(semi, reads, late, stats, 3) == []  # Dec 27 is before the read's start


def test_keys_through_a_join_are_bounded_by_the_side_that_restricts_them() -> None:
    """The returns' keys after an inner join with other new returns keep the bound; after a left
    join that keeps rows of another, unbounded source they lose it."""
    others, other = read("refunds", 0, 4, False, "f_id")
    reads = {**READS, other.view: other}
    inner = Join(JoinKind.INNER, NEW_RETURNS, others, eq("r_id", "f_id"))
    assert key_after(inner, "r_id", reads, bounds()) == (("sales", "o_id"), 290)
    assert key_after(inner, "f_id", reads, bounds()) == (("sales", "o_id"), 290)  # an inner join's other side bounds it too
    preserved = Join(JoinKind.LEFT, others, NEW_RETURNS, eq("f_id", "r_id"))
    assert key_after(preserved, "f_id", reads, bounds()) is None


def test_a_read_scanned_twice_is_bounded_only_when_both_scans_are() -> None:
    fields = tuple(OLD_SALES.schema.fields)
    bounded = Join(JoinKind.SEMI, OLD_SALES, NEW_RETURNS, eq("o_id", "r_id"))
    again = read("sales", 2, 3, False, "o_id", "amount", "at")[0]  # another scan of the same read
    both = Union(bounded, again, True, fields)
    assert find_since(both, READS, bounds(), stats, 4) == []  # the second scan is under no join
    twice = Union(bounded, Join(JoinKind.SEMI, again, NEW_RETURNS, eq("o_id", "r_id")), True, fields)
    assert [s.after for s in find_since(twice, READS, bounds(), stats, 4)] == [290]
    kept = Union(bounded, Join(JoinKind.ANTI, again, NEW_RETURNS, eq("o_id", "r_id")), True, fields)
    assert find_since(kept, READS, bounds(), stats, 4) == []


# -- what pays --------------------------------------------------------------------------------------

def plan_of(weights: tuple[float, ...]) -> MultiTimePlan:
    objective = Objective(weights)
    plan = Join(JoinKind.SEMI, OLD_SALES, NEW_RETURNS, eq("o_id", "r_id"))
    since = tuple(find_since(plan, READS, bounds(), lambda _n: RelStats(100_000.0, 80.0, {}), 4, lambda _n: 8e9))
    fragment = Fragment("f1", 4, "ivm", "SD[3,4]", plan, {}, (OLD, NEW), (), 10.0, CostVector.at(4, _cost(1e10), objective),
                        "", since=since)
    return MultiTimePlan(query=None, sql="", time_points=TimePoints(POINTS), objective=objective,  # type: ignore[arg-type]
                         method="ivm", fragments=[fragment], states=[], cost=fragment.cost, deliveries={4: "f1"})


def _cost(io: float) -> Any:
    from tempura.cost.model import Cost

    return Cost(io=io)


def test_slicing_pays_where_the_bounded_read_weighs_more_than_the_landing() -> None:
    """Interval 3 (8 MB, read at t4 from ``t3 - 10`` on: a tenth of it) is worth slicing when t4
    weighs most; under equal weights at a high shuffle price it is not; a landed interval is
    never sliced again."""
    k = CostConstants()
    sizes = {"sales": [8e6, 8e6, 8e6, 8e6]}
    deadline = plan_of((0.001, 0.001, 0.001, 1.0))
    chosen = choose_slices(deadline, sizes, k, bounds(), lambda _s, _i: (False, None))
    layout, intervals, saving = chosen["sales"]
    assert layout.sliced and layout.column == "at" and intervals == (3,) and saving > 0
    assert layout.buckets >= 8  # a tenth of the interval: the more slices, the less it reads, up to the opens
    before = deadline.fragments[0].cost.total
    price_since(deadline.fragments[0], {"sales": {3: layout}}, sizes, bounds(), k, deadline.objective)
    assert 0 < deadline.fragments[0].cost.total < before
    costly = CostConstants(network=k.network * 1000)
    assert choose_slices(plan_of((1.0, 1.0, 1.0, 1.0)), sizes, costly, bounds(), lambda _s, _i: (False, None)) == {}
    assert choose_slices(deadline, sizes, k, bounds(), lambda _s, i: (i == 3, None)) == {}
    taken = choose_slices(deadline, sizes, k, bounds(), lambda _s, _i: (False, None), taken={"sales"})
    assert taken == {}
    assert Layout("at", 16, sliced=True).hashes("at") is False  # a probe by the column never takes it for buckets
    assert Layout.from_json(Layout("at", 16, sliced=True).to_json()) == Layout("at", 16, sliced=True)


def test_a_source_lands_by_hash_or_in_time_slices_as_saves_more() -> None:
    """A source its probes would bucket and its bounded reads would slice lands the way that
    saves more, and only that way; a source with one kind of layout only keeps it."""
    from tempura.optimizer.layouts import Choice
    from tempura.optimizer.slices import one_layout_each

    sliced = {"sales": (Layout("at", 16, sliced=True), (3,), 7.0), "returns": (Layout("at", 8, sliced=True), (2,), 1.0)}
    hashed = [Choice("sales", Layout("o_id", 64), (3,), 5.0), Choice("items", Layout("i_id", 16), (1,), 2.0)]
    kept, slices = one_layout_each(hashed, sliced)
    assert [c.source for c in kept] == ["items"] and slices == sliced
    kept, slices = one_layout_each([Choice("sales", Layout("o_id", 64), (3,), 9.0)], sliced)
    assert [c.source for c in kept] == ["sales"] and set(slices) == {"returns"}


def test_the_plan_names_the_sliced_landing_and_the_bounded_read() -> None:
    from tempura.tvr.render import probes_text

    plan = plan_of((0.001, 0.001, 0.001, 1.0))
    assert probes_text(plan, plan.fragments[0]) == []  # nothing lands sliced: the read is whole
    plan.layouts = {"sales": {3: Layout("at", 8, sliced=True)}}
    assert probes_text(plan, plan.fragments[0]) == [
        "pruned read: sales, rows landed in (t2, t3] by at > 290 (the keys it is joined with arrived after it): "
        "the time slices after it of interval 3"]
    assert Layout("at", 8, sliced=True).describe() == "sliced by at into 8 time slices"


# -- on Spark ---------------------------------------------------------------------------------------

EIGHT_HOURS = """schedule:
  start: "2026-11-22T00:00:00"
  every: 8h
  points: 3
  deliver: last
integrity: enforced
cost: {file_open: 0, stage: 0}
"""


@pytest.mark.spark
def test_timestamps_slice_and_the_lag_is_checked_row_by_row(fast_spark: Any, tmp_path: Path) -> None:
    """``sales_returns`` on three 8-hour intervals under ``ojv`` (``auto`` recomputes at this
    scale): the returns of ``(t2, t3]``, at most 12 hours after their sales, reach back to 04:00,
    inside interval 1, which lands in time slices of its sales' arrival timestamps. With the lag
    checked row by row (``integrity: enforced``) the delivery is ``spark.sql``'s, and the read of
    interval 1 at ``t3`` leaves out the slices of 00:00 to 04:00."""
    from scenarios import prepared_scenario
    from tempura.standing import StandingQuery

    spec_path = prepared_scenario(fast_spark, "sales_returns", tmp_path / "scenarios", 0.05)
    text = spec_path.read_text()
    head, _schedule = text.split("schedule:", 1)
    tail = _schedule.split("objective:", 1)[1]
    spec_path.write_text(head + EIGHT_HOURS + "objective:" + tail.replace("integrity: trusted", ""))
    run = StandingQuery(spec_path, tmp_path / "work", spark=fast_spark).simulate("ojv", check=True)
    checked = [p for p in run.points if p.delivered]
    assert [p.index for p in checked] == [3] and checked[0].correct, [p.detail for p in checked]
    assert not run.results[-1].manifest.get("broken_keys"), run.results[-1].manifest.get("broken_keys")
    plan = run.results[0].plan
    assert plan is not None and plan.layouts["sales"][1].sliced, plan.layouts
    layout = plan.layouts["sales"][1]
    bounded = [p for f in run.results[2].manifest["fragments"] for p in f.get("pruned_reads", []) if p.get("sliced")]
    assert bounded, "no read bounded in time"
    cuts = interval_slices(plan.time_points.values, dt.datetime(2026, 11, 22), 1, layout.buckets)
    wanted = slices_after(cuts or [], dt.datetime(2026, 11, 22, 4))
    assert all(0 < p["buckets_read"] <= len(wanted) < layout.buckets and p["bytes_read"] < p["bytes"] for p in bounded), bounded
