"""Quiet intervals on Spark: revenue per country and hour over orders joined with customers, a
change feed that keeps its history. A night with no orders but customer updates, and a schedule
that starts before the first order, are ordinary; every method delivers, at every time point,
what ``spark.sql`` gives over that point's snapshot (computed here from the raw rows). The hour
is ``date_trunc``, whose type sqlglot does not know: Spark's analyzer types it, so an empty
relation standing for a quiet interval keeps its column types."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner
from tempura.sql import parse_query
from tempura.standing import METHODS

pytestmark = pytest.mark.spark

START = dt.datetime(2026, 11, 20)
QUERY = ("SELECT c.country, o.order_hour, COUNT(*) AS orders, SUM(o.amount) AS revenue "
         "FROM (SELECT customer_id, amount, date_trunc('HOUR', order_ts) AS order_hour FROM orders) o "
         "JOIN customers c ON o.customer_id = c.id GROUP BY c.country, o.order_hour")
QUIET = 3  # the interval with customer updates and no orders


def spec_text(start: dt.datetime) -> str:
    return (f"name: hourly\nquery: |\n  {QUERY}\nsources:\n"
            "  customers:\n    path: data/customers\n    arrival: {column: changed_at}\n"
            "    changes: {op_column: _op}\n    history: keep\n"
            "  orders:\n    path: data/orders\n    arrival: {column: order_ts}\n"
            f"schedule:\n  start: '{start.isoformat()}'\n  every: 6h\n  points: 4\n  deliver: every\n")


def interval_of(when: dt.datetime) -> int:
    return int((when - START) / dt.timedelta(hours=6)) + 1


def rows() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """60 customers inserted in the days before the start; in each interval some move country
    (a deletion and an insertion) and a few join. 300 orders in intervals 1, 2 and 4; none in 3."""
    rng = random.Random(3)
    countries = ["de", "fr", "jp", "us"]
    current = {i: rng.choice(countries) for i in range(60)}
    customers = [(i, c, START - dt.timedelta(days=3) + dt.timedelta(minutes=7 * i), "I") for i, c in current.items()]
    for interval in range(1, 5):
        base = START + dt.timedelta(hours=6 * (interval - 1))
        for k, i in enumerate(rng.sample(sorted(current), 8)):
            when = base + dt.timedelta(minutes=20 + 30 * k)
            moved = rng.choice([c for c in countries if c != current[i]])
            customers += [(i, current[i], when, "D"), (i, moved, when, "I")]
            current[i] = moved
        new = len(current)
        current[new] = rng.choice(countries)
        customers.append((new, current[new], base + dt.timedelta(hours=5), "I"))
    orders = []
    for n in range(300):
        interval = rng.choice([1, 2, 4])
        when = START + dt.timedelta(hours=6 * (interval - 1), minutes=rng.randrange(1, 360))
        orders.append((n, rng.randrange(60), rng.randrange(1, 500), when))
    return customers, orders


CUSTOMERS = "id INT, country STRING, changed_at TIMESTAMP, _op STRING"
ORDERS = "order_id INT, customer_id INT, amount INT, order_ts TIMESTAMP"


def expected(spark: Any, start: dt.datetime, index: int) -> tuple[list[tuple[Any, ...]], Any]:
    """``spark.sql(QUERY)`` over the snapshot at ``t_index``: every customer change up to it
    applied (history kept), the orders of the cycle's intervals up to it."""
    customers, orders = rows()
    end = start + dt.timedelta(hours=6 * index)
    alive: dict[tuple[int, str], int] = {}
    for i, country, when, op in customers:
        if when <= end:
            alive[(i, country)] = alive.get((i, country), 0) + (1 if op == "I" else -1)
    snapshot = [(i, c) for (i, c), n in alive.items() for _ in range(n)]
    spark.createDataFrame(snapshot, "id INT, country STRING").createOrReplaceTempView("customers")
    spark.createDataFrame([o for o in orders if start < o[3] <= end], ORDERS).createOrReplaceTempView("orders")
    frame = spark.sql(QUERY)
    return [tuple(r) for r in frame.collect()], frame.schema


def write(spark: Any, folder: Path, name: str, data: list[tuple[Any, ...]], schema: str, part: str) -> None:
    if data:
        spark.createDataFrame(data, schema).coalesce(1).write.mode("append").parquet(str(folder / "data" / name))


def check(spark: Any, start: dt.datetime, result: Any, where: str) -> None:
    assert result.delivered is not None, where
    want, schema = expected(spark, start, result.index)
    got = spark.read.parquet(result.delivered)
    outcome = compare_results(want, [tuple(r) for r in got.collect()])
    assert outcome.equal, f"{where} t{result.index}: {outcome.reason}"
    assert [(f.name, f.dataType) for f in got.schema.fields] == [(f.name, f.dataType) for f in schema.fields], where


def test_the_hour_is_typed_by_spark_where_sqlglot_cannot(spark: Any) -> None:
    from tempura.runtime.executor import analyzed_types

    schemas = {"orders": {"order_id": "int", "customer_id": "int", "amount": "int", "order_ts": "timestamp"},
               "customers": {"id": "int", "country": "string"}}
    unsettled = parse_query(QUERY, schemas)
    assert "unknown" in [f.type for f in unsettled.plan.schema.fields]  # what sqlglot alone knows
    settled = parse_query(QUERY, schemas, describe=analyzed_types(spark))
    assert [f.type for f in settled.plan.schema.fields] == ["string", "timestamp", "bigint", "bigint"]


@pytest.mark.parametrize("method", METHODS)
def test_a_night_without_orders_but_with_customer_updates_by_the_clock(method: str, spark: Any,
                                                                     tmp_path: Path) -> None:
    """Each interval's rows arrive at its time point, and a new runner runs it, as cron would."""
    customers, orders = rows()
    (tmp_path / "spec.yaml").write_text(spec_text(START))
    write(spark, tmp_path, "customers", [c for c in customers if c[2] <= START], CUSTOMERS, "before")
    write(spark, tmp_path, "orders", [], ORDERS, "none")
    for index in range(1, 5):
        write(spark, tmp_path, "customers", [c for c in customers if c[2] > START and interval_of(c[2]) == index],
              CUSTOMERS, f"i{index}")
        write(spark, tmp_path, "orders", [o for o in orders if interval_of(o[3]) == index], ORDERS, f"i{index}")
        if not (tmp_path / "data" / "orders").exists():
            continue
        runner = Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work", method)
        done = runner.run_due(now=START + dt.timedelta(hours=6 * index))
        assert [r.index for r in done] == [index]
        check(spark, START, done[0], method)
    assert QUIET == 3 and not [o for o in orders if interval_of(o[3]) == QUIET]


@pytest.mark.parametrize("method", METHODS)
def test_a_schedule_that_starts_before_the_first_order(method: str, spark: Any, tmp_path: Path) -> None:
    """Simulated over the whole cycle's files: the first two intervals hold customer updates and
    no order."""
    customers, orders = rows()
    start = START - dt.timedelta(hours=12)
    (tmp_path / "spec.yaml").write_text(spec_text(start))
    write(spark, tmp_path, "customers", customers, CUSTOMERS, "all")
    write(spark, tmp_path, "orders", orders, ORDERS, "all")
    runner = Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work", method, simulate=True)
    results = runner.run_cycle()
    assert [r.index for r in results] == [1, 2, 3, 4]
    for result in results:
        check(spark, start, result, method)
