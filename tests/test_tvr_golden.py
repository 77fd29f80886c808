"""The golden example of SEMANTICS.md, planned and run on Spark.

The expected tables below are copied from SEMANTICS.md (the specification), not computed by
tempura: the summary snapshots at t1 and t2, the IVM delta of ``sales_status`` and the streaming
QP emissions. Every method's plan, under ``deadline`` and ``total`` weights, must deliver them,
and must equal ``spark.sql`` over the snapshots.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

import dataclasses

from statsfile import StatsFile
from tempura.cost.vector import Objective
from tempura.optimizer import METHODS, Arrival, Optimizer, plan_methods
from tempura.runtime import compare_results
from tempura.sql import parse_query
from tempura.stats import Estimator
from tempura.stats.model import ColumnStats
from tempura.tvr import TimePoints, zset
from tvrtesting import run_plan

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(fast_spark: Any) -> Any:
    """The shared session with the tiny-data settings."""
    return fast_spark

SCHEMAS = {
    "sales": {"o_id": "string", "category": "string", "price": "bigint", "arrives": "int"},
    "returns": {"o_id": "string", "cost": "bigint", "arrives": "int"},
}
SALES = [("o1", "c1", 100, 1), ("o2", "c2", 150, 1), ("o3", "c1", 120, 1), ("o4", "c1", 170, 1),
         ("o5", "c2", 300, 2), ("o6", "c1", 150, 2), ("o7", "c2", 220, 2)]
RETURNS = [("o1", 10, 1), ("o2", 20, 2), ("o6", 15, 2)]

SUMMARY = """WITH sales_status AS (
  SELECT sales.o_id, category, price, cost
  FROM sales LEFT OUTER JOIN returns ON sales.o_id = returns.o_id)
SELECT category, SUM(IF(cost IS NULL, price, -cost)) AS gross
FROM sales_status GROUP BY category"""
SALES_STATUS = "SELECT sales.o_id, category, price, cost FROM sales LEFT OUTER JOIN returns ON sales.o_id = returns.o_id"
MATCHED = "SELECT sales.o_id, category, price, cost FROM sales JOIN returns ON sales.o_id = returns.o_id"
UNMATCHED = ("SELECT sales.o_id, category, price, cost FROM sales LEFT OUTER JOIN returns ON sales.o_id = returns.o_id "
             "WHERE returns.o_id IS NULL")

SUMMARY_AT = {1: [("c1", 280), ("c2", 150)], 2: [("c1", 265), ("c2", 500)]}
SALES_STATUS_AT_1 = {("o1", "c1", 100, 10): 1, ("o2", "c2", 150, None): 1, ("o3", "c1", 120, None): 1, ("o4", "c1", 170, None): 1}
IVM_DELTA = {("o2", "c2", 150, None): -1, ("o2", "c2", 150, 20): 1, ("o5", "c2", 300, None): 1,
             ("o6", "c1", 150, 15): 1, ("o7", "c2", 220, None): 1}
QP_EMITTED = {1: {("o1", "c1", 100, 10): 1}, 2: {("o2", "c2", 150, 20): 1, ("o6", "c1", 150, 15): 1}}
QN_AT_2 = [("o3", "c1", 120, None), ("o4", "c1", 170, None), ("o5", "c2", 300, None), ("o7", "c2", 220, None)]

TIME = TimePoints((1, 2), (1, 2))


@pytest.fixture(scope="module")
def sources(spark: Any) -> Iterator[dict[str, Any]]:
    from tempura.runtime.sources import SourceData

    sales = spark.createDataFrame(SALES, "o_id string, category string, price bigint, arrives int")
    returns = spark.createDataFrame(RETURNS, "o_id string, cost bigint, arrives int")
    yield {"sales": SourceData("sales", sales, "arrives", time_values=(1, 2)),
           "returns": SourceData("returns", returns, "arrives", time_values=(1, 2))}


@pytest.fixture(scope="module")
def executor(spark: Any, sources: dict[str, Any]) -> Iterator[Any]:
    from tempura.runtime.multitime import PlanExecutor

    with PlanExecutor(spark, sources) as ex:
        yield ex


def plans(sql: str, objective: Objective, output: str = "snapshot") -> dict[str, Any]:
    planner = Optimizer(Estimator(StatsFile(SCHEMAS).lookup), Arrival.uniform(2))
    return plan_methods(planner, parse_query(sql, SCHEMAS), sql, TIME, objective, METHODS, output=output)


def as_zset(rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    return zset.consolidate((r[:-1], r[-1]) for r in rows)


@pytest.mark.parametrize("weights", ["deadline", "total"])
def test_summary_snapshots_for_every_method(weights: str, spark: Any, sources: Any, executor: Any) -> None:
    from tempura.runtime.multitime import reference

    chosen = plans(SUMMARY, Objective.preset(weights, 2))
    assert set(chosen) == set(METHODS)
    for method, plan in chosen.items():
        run = run_plan(executor, plan)
        for t in (1, 2):
            assert compare_results(SUMMARY_AT[t], run.results[t]), f"{method} at t{t}: {run.results[t]}"
            assert compare_results(reference(spark, SUMMARY, sources, t), run.results[t])


def test_methods_really_differ() -> None:
    chosen = plans(SUMMARY, Objective.deadline(2))
    assert chosen["batch"].methods == ["batch"]
    assert "ivm" in chosen["ivm"].methods
    assert "ojv" in chosen["ojv"].methods
    assert "ojv" in chosen["higher-order"].methods
    assert "streaming" in chosen["streaming"].methods
    for method in ("ivm", "ojv", "higher-order", "streaming"):
        assert chosen[method].states, f"{method} keeps nothing between t1 and t2"


def test_sales_status_snapshot_and_ivm_delta(executor: Any) -> None:
    for method, plan in plans(SALES_STATUS, Objective.deadline(2), output="delta").items():
        run = run_plan(executor, plan)
        assert as_zset(run.results[1]) == SALES_STATUS_AT_1, method
        assert as_zset(run.results[2]) == IVM_DELTA, method


def test_streaming_emissions(executor: Any) -> None:
    qp = plans(MATCHED, Objective.deadline(2), output="delta")["streaming"]
    run = run_plan(executor, qp)
    for t in (1, 2):
        assert as_zset(run.results[t]) == QP_EMITTED[t]
        assert all(m > 0 for m in as_zset(run.results[t]).values()), "QP is never retracted"
    qn = plans(UNMATCHED, Objective.deadline(2))["auto"]
    assert compare_results(QN_AT_2, run_plan(executor, qn).results[2])


def test_streaming_plan_splits_the_outer_join() -> None:
    plan = plans(SUMMARY, Objective.deadline(2))["streaming"]
    assert any(f.method == "streaming" for f in plan.fragments)
    text = "\n".join(f.physical for f in plan.fragments)
    assert "inner ON" in text and "anti ON" in text


def test_only_a_plan_forced_to_stream_reads_its_deltas_through_a_stream() -> None:
    """Structured Streaming stages a copy of the interval's landed rows before the fragment's SQL
    reads them: a fragment of the streaming rules does that (for its own interval's source rows)
    when the plan is forced to stream, and reads the landing like an incremental fragment
    otherwise."""
    plan = plans(SUMMARY, Objective.deadline(2))["streaming"]
    streaming = [f for f in plan.fragments if f.method == "streaming"]
    assert streaming and all(f.streams("streaming") and not f.streams("auto") for f in streaming)
    streamed = [(f, r) for f in streaming for r in f.sources if f.streamed(r, "streaming")]
    assert streamed and all(r.delta and (r.start, r.end) == (f.time - 1, f.time) for f, r in streamed)
    assert not any(f.streamed(r, "auto") for f, r in streamed)
    assert not any(f.streams("streaming") for f in plan.fragments if f.method != "streaming")


def realistic_plans(share_by_t1: float) -> dict[str, Any]:
    """The summary planned as a warehouse would see it: 30M sales and 3M returns with unique
    order ids, 20 categories, ``share_by_t1`` of each table arrived by t1, ``deadline`` weights.
    The returns (115 MB as a table) are too large to broadcast whole; the share of them that lands at
    t2 is not."""
    stats = StatsFile(SCHEMAS)
    for table, rows in (("sales", 3e7), ("returns", 3e6)):
        default = stats.lookup(table)
        columns = dict(default.columns)
        columns["o_id"] = ColumnStats(kind="string", ndv=rows, nulls=0, unique=True, avg_len=8)
        if table == "sales":
            columns["category"] = ColumnStats(kind="string", ndv=20, nulls=0, avg_len=8)
        stats.tables[table] = dataclasses.replace(default, rows=rows, bytes=default.bytes / default.rows * rows, columns=columns)
    arrival = Arrival(lambda _table, start, end: sum([share_by_t1, 1 - share_by_t1][start:end]), lambda _table: True)
    planner = Optimizer(Estimator(stats.lookup), arrival)
    return plan_methods(planner, parse_query(SUMMARY, SCHEMAS), SUMMARY, TIME, Objective.deadline(2), METHODS)


@pytest.mark.parametrize("share_by_t1", [0.9, 0.8])
def test_deadline_plan_keeps_the_t1_partial_aggregate(share_by_t1: float, executor: Any) -> None:
    """Under ``deadline`` weights the chosen plan aggregates t1's data at t1, keeps that partial
    aggregate, and at t2 does only the delta's work: it never reads the sales snapshot of t2
    (only what arrived since t1, and t1's rows that a new return touches). Run on the golden
    data, it delivers the specification's snapshots. (When much less has arrived by t1, t2's
    returns are too many to broadcast, finding the touched sales shuffles all of t1's, and batch
    is cheaper at t2.)"""
    chosen = realistic_plans(share_by_t1)
    auto = chosen["auto"]
    assert auto.cost.times[1] < chosen["batch"].cost.times[1]
    partial = [s for s in auto.states if s.form.startswith("PS[1]") and s.produced_at == 1 and 2 in s.read_at]
    assert partial, auto.states
    delivering = next(f for f in auto.fragments if f.id == auto.deliveries[2])
    assert partial[0].id in delivering.states
    sales_at_2 = {r.form for f in auto.at(2) for r in f.sources if r.scan.table == "sales"}
    assert sales_at_2 and "SS[2]" not in sales_at_2, sales_at_2
    run = run_plan(executor, auto)
    for t in (1, 2):
        assert compare_results(SUMMARY_AT[t], run.results[t]), f"t{t}: {run.results[t]}"
