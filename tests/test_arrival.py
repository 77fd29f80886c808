"""The arrival model: shares of a source's cycle rows per interval, deletions, and measuring both
on Spark. Expected values are worked out by hand from the counts in each test."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Callable

import pytest

from tempura.errors import TempuraError
from tempura.tvr.arrival import ArrivalModel, SourceArrival, measure, sql_literal
from tempura.tvr.time import TimePoints


def test_uniform_spreads_rows_evenly() -> None:
    model = ArrivalModel.uniform(["sales", "returns"], 4)
    assert model.k == 4
    assert model.sources == ("returns", "sales")
    assert model.fraction("sales", 0, 1) == pytest.approx(0.25)
    assert model.fraction("sales", 1, 3) == pytest.approx(0.5)
    assert model.fraction("returns", 2, 2) == 0.0
    assert model.fraction("sales", 0, 4) == 1.0
    assert model.insert_only("sales")


def test_counts_give_exact_fractions_and_deletion_shares() -> None:
    # 10 + 30 + 60 = 100 rows; deletions 0, 3 and 6.
    model = ArrivalModel.from_counts({"sales": [10, 30, 60]}, deletes={"sales": [0, 3, 6]})
    assert model.fraction("sales", 0, 1) == 0.1
    assert model.fraction("sales", 1, 2) == 0.3
    assert model.fraction("sales", 1, 3) == 0.9
    assert model.fraction("sales", 0, 3) == 1.0
    assert model.deletion_fraction("sales", 1, 2) == pytest.approx(0.1)
    assert model.deletion_fraction("sales", 1, 3) == pytest.approx(9 / 90)
    assert model.deletion_fraction("sales", 0, 1) == 0.0
    assert not model.insert_only("sales")
    assert model.source("sales").rows == (10, 30, 60)


def test_fractions_are_scaled_to_the_cycle() -> None:
    # 0.2 + 0.2 of all rows arrive in the cycle, so each interval holds half of the cycle's rows.
    model = ArrivalModel.from_fractions({"s": [0.2, 0.2]})
    assert model.fraction("s", 0, 1) == pytest.approx(0.5)
    assert model.fraction("s", 1, 2) == pytest.approx(0.5)
    assert model.fraction("s", 0, 2) == 1.0
    uneven = ArrivalModel.from_fractions({"s": [0.1, 0.0, 0.3]})
    assert uneven.fraction("s", 0, 1) == pytest.approx(0.25)
    assert uneven.fraction("s", 1, 2) == 0.0
    assert uneven.fraction("s", 1, 3) == pytest.approx(0.75)


def test_deletions_of_unknown_share_are_not_insert_only() -> None:
    model = ArrivalModel.from_fractions({"s": [0.5, 0.5], "t": [0.5, 0.5]}, deletes={"s": True})
    assert not model.insert_only("s")
    assert model.deletion_fraction("s", 0, 2) is None
    assert model.insert_only("t")
    assert model.deletion_fraction("t", 0, 2) == 0.0


def test_deletion_shares_weight_by_arrival() -> None:
    # 1/4 of the rows in interval 1 (none deleted), 3/4 in interval 2 (a third deleted):
    # over both intervals 0.75 * 1/3 = 0.25 of the rows are deletions.
    arrival = SourceArrival.from_fractions([0.25, 0.75], deletes=[0.0, 1 / 3])
    assert arrival.deletion_fraction(0, 2) == pytest.approx(0.25)
    assert arrival.deletion_fraction(1, 2) == pytest.approx(1 / 3)


def test_a_source_without_rows_is_uniform() -> None:
    arrival = SourceArrival.from_counts([0, 0, 0, 0])
    assert arrival.fraction(0, 1) == pytest.approx(0.25)
    assert arrival.fraction(0, 4) == 1.0
    assert arrival.insert_only


def test_source_names_are_case_insensitive() -> None:
    model = ArrivalModel.uniform(["Sales"], 2)
    assert "SALES" in model
    assert model.fraction("sAlEs", 0, 1) == pytest.approx(0.5)


def test_with_source_returns_a_new_model() -> None:
    model = ArrivalModel.uniform(["s"], 2)
    changed = model.with_source("s", SourceArrival.from_counts([1, 3]))
    added = changed.with_source("t", SourceArrival.uniform(2))
    assert model.fraction("s", 0, 1) == pytest.approx(0.5)
    assert changed.fraction("s", 0, 1) == 0.25
    assert changed.sources == ("s",)
    assert added.sources == ("s", "t")
    assert model == ArrivalModel.uniform(["s"], 2)
    assert hash(model) == hash(ArrivalModel.uniform(["s"], 2))
    with pytest.raises(TempuraError, match="arrival over 3 intervals, the cycle has 2"):
        model.with_source("t", SourceArrival.uniform(3))


def test_json_round_trip() -> None:
    model = ArrivalModel.from_counts({"s": [1, 3]}, deletes={"s": [0, 1]}).with_source(
        "t", SourceArrival.from_fractions([0.5, 0.5], deletes=True)
    )
    data = json.loads(json.dumps(model.to_json()))
    assert data == {
        "k": 2,
        "sources": {
            "s": {"fractions": [0.25, 0.75], "deletions": [0.0, 1 / 3], "rows": [1, 3]},
            "t": {"fractions": [0.5, 0.5], "deletions": None, "rows": None},
        },
    }
    assert ArrivalModel.from_json(data) == model


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: SourceArrival.from_fractions([0.6, 0.6]), "sum to 1.2, more than 1"),
        (lambda: SourceArrival.from_fractions([0.5, -0.1]), "non-negative"),
        (lambda: SourceArrival.from_fractions([0.0, 0.0]), "must not all be 0"),
        (lambda: SourceArrival.from_fractions([]), "at least one interval"),
        (lambda: SourceArrival((0.5, 0.4), (0.0, 0.0)), "must sum to 1"),
        (lambda: SourceArrival((0.5, 0.5), (0.0,)), "1 deletion shares for 2 intervals"),
        (lambda: SourceArrival.from_counts([1, 2], [2, 0]), "more deletions than rows"),
        (lambda: SourceArrival.from_counts([1, -2]), "must not be negative"),
        (lambda: ArrivalModel.from_counts({"s": [1, 2], "t": [1, 2, 3]}), "counts differ"),
        (lambda: ArrivalModel(2, [("s", SourceArrival.uniform(2)), ("S", SourceArrival.uniform(2))]), "twice"),
        (lambda: ArrivalModel.uniform(["s"], 2).fraction("s", 2, 1), r"versions \(2, 1\]"),
        (lambda: ArrivalModel.uniform(["s"], 2).fraction("s", 0, 3), r"versions 0..2"),
        (lambda: ArrivalModel.uniform(["s"], 2).fraction("t", 0, 1), "no arrival model for source 't'"),
    ],
)
def test_bad_models_are_refused(build: Callable[[], object], message: str) -> None:
    with pytest.raises(TempuraError, match=message):
        build()


def test_measured_intervals_replace_the_expected_and_scale_the_rest() -> None:
    from tempura.scheduler.reoptimize import Measured, updated
    from tempura.stats.model import TableStats

    model = ArrivalModel(4, {"sales": SourceArrival.uniform(4)})
    # 100 rows declared, 25 per interval; the first two intervals brought 250 and 250
    out, rows, reasons = updated(model, lambda _t: TableStats(100.0, 800.0), {"sales": Measured((250, 250), (0, 0))})
    assert rows == {"sales": pytest.approx(1000.0)}
    assert out.fraction("sales", 0, 2) == pytest.approx(0.5)
    assert out.insert_only("sales"), "declared insert-only and none deleted"
    assert reasons and "x10" in reasons[0]


@pytest.mark.parametrize("deleted, insert_only", [((0, 0), False), ((0, 50), False)])
def test_a_source_that_may_delete_is_not_insert_only_for_having_deleted_nothing_yet(deleted: tuple[int, int],
                                                                                     insert_only: bool) -> None:
    """A change feed or a range window (deletions unknown) that has deleted nothing by ``t_c``
    may still delete later: re-planning must not take it to be insert-only."""
    from tempura.scheduler.reoptimize import Measured, updated
    from tempura.stats.model import TableStats

    model = ArrivalModel(4, {"sales": SourceArrival((0.25, 0.25, 0.25, 0.25), None)})
    out, _, _ = updated(model, lambda _t: TableStats(400.0, 3200.0), {"sales": Measured((100, 100), deleted)})
    assert out.insert_only("sales") is insert_only
    if sum(deleted):
        assert out.source("sales").deletions == pytest.approx((0.0, 0.5, 0.25, 0.25))


def test_time_points_as_spark_literals() -> None:
    assert sql_literal(dt.datetime(2026, 11, 22, 6)) == "TIMESTAMP '2026-11-22 06:00:00'"
    assert sql_literal(dt.date(2026, 11, 22)) == "DATE '2026-11-22'"
    assert sql_literal(7) == "7"
    with pytest.raises(TempuraError):
        sql_literal(True)


@pytest.mark.spark
def test_measure_counts_rows_and_deletions_per_interval(spark: object) -> None:
    session: Any = spark
    df = session.sql(
        """
        SELECT * FROM VALUES
          ('a', TIMESTAMP '2026-11-21 23:00:00', 'I'),   -- interval 1
          ('b', TIMESTAMP '2026-11-22 06:00:00', 'I'),   -- interval 1: t_1 itself is in it
          ('c', TIMESTAMP '2026-11-22 06:00:01', 'I'),   -- interval 2
          ('d', TIMESTAMP '2026-11-22 09:00:00', 'D'),   -- interval 2, deletion
          ('e', TIMESTAMP '2026-11-22 12:00:00', 'D'),   -- interval 2, deletion
          ('f', TIMESTAMP '2026-11-22 13:00:00', 'I'),   -- interval 3
          ('g', TIMESTAMP '2026-11-22 18:00:00', '-'),   -- interval 3, deletion with '-'
          ('j', TIMESTAMP '2026-11-22 17:00:00', NULL),  -- interval 3, no op: an insert
          ('h', TIMESTAMP '2026-11-22 18:00:01', 'I'),   -- after t_3: not in the cycle
          ('i', CAST(NULL AS TIMESTAMP), 'I')            -- no arrival: not in the cycle
        AS t(o_id, arrived_at, op)
        """
    )
    points = TimePoints((dt.datetime(2026, 11, 22, 6), dt.datetime(2026, 11, 22, 12), dt.datetime(2026, 11, 22, 18)))

    arrival = measure(session, df, "arrived_at", points, op_column="op", delete_values=("D", "-"))

    # 8 rows in the cycle: 2, 3 and 3 per interval; deletions 0 of 2, 2 of 3, 1 of 3.
    assert arrival.rows == (2, 3, 3)
    assert arrival.fractions == (2 / 8, 3 / 8, 3 / 8)
    assert arrival.deletions == (0.0, 2 / 3, 1 / 3)
    assert arrival.fraction(1, 3) == 6 / 8
    assert not arrival.insert_only

    without_changes = measure(session, df, "arrived_at", points)
    assert without_changes.rows == (2, 3, 3)
    assert without_changes.insert_only

    with pytest.raises(TempuraError, match="column 'arrival' is not among the source's columns"):
        measure(session, df, "arrival", points)
