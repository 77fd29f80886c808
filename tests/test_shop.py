"""The shop's standing queries (:mod:`scenarios.shop`) run by the clock on Spark: the files of
each 6-hour interval land before its time point and a new runner runs it, for two days whose
nights are quiet (no order, only customer changes), and every delivery equals ``spark.sql`` over
that instant's snapshot, computed from the generated files alone (:func:`benchmarks.shop.snapshot_result`).

Here ``auto`` runs the revenue per country and hour (the three-way join over a change feed whose
quiet nights once crashed the job) and the running distinct-customer count on an endless
schedule; ``tempura bench shop`` runs all four queries under every method."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from benchmarks import shop
from scenarios import names, prepared_scenario
from tempura.scheduler import load_spec

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SCALE = 0.01  # 1,000 orders


def test_the_four_shop_scenarios_exist_and_their_nights_are_quiet(spark: Any, tmp_path: Path) -> None:
    assert set(shop.SCENARIOS) <= set(names())
    spec_path = prepared_scenario(spark, "shop_revenue_by_hour", tmp_path, SCALE)
    data = spec_path.parent / "data"
    orders = spark.read.parquet(str(data / "orders"))
    assert orders.count() == 1000
    assert orders.where("hour(order_ts) < 6").count() == 0
    night = "changed_at > TIMESTAMP '2026-11-30 00:00:00' AND changed_at <= TIMESTAMP '2026-11-30 06:00:00'"
    assert spark.read.parquet(str(data / "customers")).where(night).count() > 0  # customers change at night


@pytest.mark.parametrize("name", ["shop_revenue_by_hour", "shop_customers"])
def test_every_delivery_by_the_clock_equals_spark_sql(name: str, spark: Any, tmp_path: Path) -> None:
    spec_path = prepared_scenario(spark, name, tmp_path / "scenarios", SCALE)
    staged = tmp_path / "staged"
    shop.split_per_interval(spark, load_spec(spec_path), staged)
    deliveries = shop.by_clock(spark, spec_path, staged, tmp_path / "run", "auto")
    assert [d.at for d in deliveries] == shop.instants()  # every point delivers, the quiet ones too
    wrong = [f"{d.at}: {d.detail}" for d in deliveries if not d.correct]
    assert not wrong, wrong
    quiet = [d for d in deliveries if d.at.hour == 6]
    assert len(quiet) == 2
    if name == "shop_customers":  # an endless schedule of daily cycles: the second day goes on from the first
        assert len({d.cycle for d in deliveries}) == 2
        morning = deliveries[4]  # the second day's first point: its carry (the midnight) is numbered 1
        assert morning.at == dt.datetime(2026, 12, 1, 6) and morning.index == 2 and morning.rows == 1
        assert morning.cycle != deliveries[3].cycle == deliveries[0].cycle
    else:  # the first night has no order: an empty result, typed; the second keeps the first day's
        assert quiet[0].rows == 0 and quiet[1].rows == deliveries[3].rows > 0
