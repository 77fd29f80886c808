"""The arrival forecast of a run by the clock (tempura.scheduler.planning.forecast_arrival): the
intervals still to come are never forecast empty; they come from the job's last complete cycle,
else from the rate the rows have arrived at so far; a landed interval's rows replace its
forecast and scale the ones after it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tempura.scheduler import load_spec
from tempura.scheduler.planning import Forecast, forecast_arrival, interval_lengths
from tempura.scheduler.reoptimize import updated
from tempura.stats.model import TableStats
from tempura.tvr.arrival import ArrivalModel, SourceArrival

SPEC = """
name: clock
query: SELECT category, SUM(price) AS total FROM sales GROUP BY category
sources:
  sales:
    path: data/sales
    format: parquet
    arrival: {column: arrived_at}
    schema: {category: string, price: bigint, arrived_at: timestamp}
  dims:
    path: data/dims
    format: parquet
    arrival: {column: arrived_at}
    schema: {category: string, arrived_at: timestamp}
    expected: [1, 0, 0, 0]
schedule:
  start: "2026-11-22T00:00:00"
  at: ["06:00", "12:00", "18:00", "24:00"]
"""


@pytest.fixture()
def spec(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "spec.yaml").write_text(SPEC)
    for name in ("sales", "dims"):
        (tmp_path / "data" / name).mkdir(parents=True)
    return load_spec(tmp_path / "spec.yaml")


def tables(rows: float):  # type: ignore[no-untyped-def]
    return lambda name: TableStats(rows=rows, bytes=rows * 10)


def model(k: int = 4) -> ArrivalModel:
    return ArrivalModel(k, [("sales", SourceArrival.uniform(k)), ("dims", SourceArrival.from_fractions([1, 0, 0, 0]))])


def test_interval_lengths_of_times_dates_and_numbers() -> None:
    start = dt.datetime(2026, 11, 22)
    hours = [start + dt.timedelta(hours=h) for h in (6, 12, 18, 24)]
    assert interval_lengths(hours, start) == [21600.0] * 4
    assert interval_lengths([dt.date(2026, 1, 2), dt.date(2026, 1, 4)], dt.date(2026, 1, 1)) == [86400.0, 172800.0]
    assert interval_lengths([10, 20, 40], None) == [15.0, 10.0, 20.0]  # no origin: the mean of the others


def test_first_planning_spreads_the_rows_there_now_over_the_time_elapsed(spec) -> None:  # type: ignore[no-untyped-def]
    cycle = spec.cycle(0)
    out, names, notes = forecast_arrival(spec, cycle, model(), tables(1000), Forecast(1))
    assert names == ["sales"]  # a declared arrival is the spec's, not forecast
    assert out.source("sales").rows == (1000, 1000, 1000, 1000)  # never "nothing more will arrive"
    assert out.source("dims") == model().source("dims")
    assert "1000 rows its files hold by t1" in notes[0]
    at_three, _, _ = forecast_arrival(spec, cycle, model(), tables(900), Forecast(3))
    assert at_three.source("sales").rows == (300, 300, 300, 300)


def test_landed_intervals_set_the_rate_and_scale_the_rest(spec) -> None:  # type: ignore[no-untyped-def]
    cycle = spec.cycle(0)
    counts = {"sales": [(400, 0), (200, 0)]}
    out, _, notes = forecast_arrival(spec, cycle, model(), tables(5000), Forecast(3), counts)
    assert out.source("sales").rows == (300, 300, 300, 300)
    assert "600 rows landed by t2" in notes[0]
    from tempura.scheduler.reoptimize import Measured

    after, rows, _ = updated(out, tables(5000), {"sales": Measured((400, 200), (0, 0))}, ["sales"])
    assert rows["sales"] == pytest.approx(400 + 200 + 300 + 300)
    assert after.fraction("sales", 3, 4) == pytest.approx(300 / 1200)


def test_the_last_complete_cycle_is_the_forecast(spec) -> None:  # type: ignore[no-untyped-def]
    cycle = spec.cycle(0)
    earlier = {"sales": [(100, 0), (500, 0), (300, 0), (100, 0)]}
    out, _, notes = forecast_arrival(spec, cycle, model(), tables(7), Forecast(1, earlier))
    assert out.source("sales").rows == (100, 500, 300, 100)
    assert "last complete cycle" in notes[0]
    short = {"sales": [(100, 0)]}  # not a whole cycle: the rate instead
    fallback, _, _ = forecast_arrival(spec, cycle, model(), tables(7), Forecast(1, short))
    assert fallback.source("sales").rows == (7, 7, 7, 7)
