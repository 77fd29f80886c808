"""The cost model on worked numbers: constants (Hive seed), the Cost value, Spark operator
formulas, plan costing with Spark's default algorithms, and the Beam seed's streaming NodeStats.
Expected values are written out from the formulas, never computed by the code under test."""

from __future__ import annotations

import math

import pytest
import sqlglot

from tempura.algebra import Field, Filter, Join, JoinKind, Limit, Scan, ScanColumn, Sort, SortKey, col
from tempura.cost import Cost, CostConstants, NodeStats, PlanCost, SparkCosts, StreamCost, StreamingEstimator, format_time
from tempura.errors import TempuraError
from tempura.stats import ColumnStats, Estimator, TableStats
from tempura.stats.relation import RelStats

K = CostConstants()


def rel(rows: float, row_size: float = 10.0) -> RelStats:
    return RelStats(rows, row_size, {})


def test_default_constants_are_the_hive_seed() -> None:
    assert K.cpu == 1 and K.network == 150 * K.cpu
    assert K.local_read == K.local_write == 4 * K.network == 600
    assert K.dfs_read == 1.5 * K.local_read and K.dfs_write == 10 * K.local_write
    assert K.broadcast_threshold == 10 * 1024 * 1024 and K.cpu_rate_weight == 3600


def test_constants_can_be_overridden_and_bad_ones_are_named() -> None:
    changed = CostConstants.from_mapping({"network": "300", "executors": 8})
    assert changed.network == 300 and changed.executors == 8 and isinstance(changed.executors, int)
    for bad, message in (({"nope": 1}, "unknown cost constant 'nope'"), ({"cpu": "x"}, "'cpu': not a number"), ({"hash": -1}, "'hash' must be")):
        with pytest.raises(TempuraError, match=message):
            CostConstants.from_mapping(bad)


def test_costs_add_and_order_by_time_then_rows() -> None:
    a, b = Cost(cpu=10, io=5, network=1, rows=3), Cost(cpu=1, io=1, network=1, rows=2)
    assert (a + b) == Cost(cpu=11, io=6, network=2, rows=5) and (a + b).total == 19
    assert b < a  # 3 ns < 16 ns
    assert Cost(cpu=5, rows=1) < Cost(io=5, rows=2)  # same time: fewer rows first
    assert sorted([a, b]) == [b, a]
    assert Cost(math.inf).is_infinite and not a.is_infinite
    assert format_time(1.5e9) == "1.5s" and format_time(2500) == "2.5us" and format_time(90e9) == "1.5min"


def test_operator_formulas() -> None:
    c = SparkCosts(CostConstants.from_mapping({"stage": 0}))  # the seed's formulas alone
    r = rel(1000, 20)  # 20 000 bytes
    assert c.scan(r).io == 900 * 20_000
    assert c.filter(r, rel(10)).cpu == 1000
    shuffle = c.shuffle(r)
    assert shuffle.io == (600 + 600) * 20_000 and shuffle.network == 150 * 20_000 and shuffle.cpu == 1000
    assert c.broadcast(r).network == 150 * 20_000 * 2
    assert c.sort(rel(1024)).cpu == 1024 * 10
    build, probe, out = rel(100, 10), rel(10_000, 10), rel(5_000, 20)
    # Broadcast hash join: broadcast the build side, every executor builds, probe, emit.
    bhj = c.broadcast_hash_join(build, probe, out)
    assert bhj.network == 150 * 1000 * 2
    assert bhj.cpu == 100 * (2 - 1) + (100 + 10_000 + 5_000)
    shj = c.shuffled_hash_join(build, probe, out)
    assert shj.io == 1200 * (1000 + 100_000) and shj.cpu == (100 + 10_000) + (100 + 10_000 + 5_000)
    smj = c.sort_merge_join(build, probe, out)
    sort = 100 * math.log2(100) + 10_000 * math.log2(10_000)
    assert smj.cpu == pytest.approx((100 + 10_000) + sort + (100 + 10_000 + 5_000))
    nlj = c.nested_loop_join(build, probe, out)
    assert nlj.cpu == 100 * 10_000 and nlj.network == 150 * 1000 * 2  # the smaller side is broadcast
    assert c.state_write(r).io == 6000 * 20_000 and c.state_read(r).io == 900 * 20_000


def test_hash_aggregate_shuffles_partial_results() -> None:
    c = SparkCosts(CostConstants.from_mapping({"stage": 0}))
    source, out = rel(10_000, 10), rel(50, 16)
    keyed = c.hash_aggregate(source, out, keyed=True)
    partial = 50 * 4  # at most every group in each of 4 partitions
    assert keyed.cpu == 10_000 + partial + partial
    assert keyed.io == 1200 * partial * 16 and keyed.network == 150 * partial * 16
    scalar = c.hash_aggregate(source, rel(1, 16), keyed=False)
    assert scalar.io == 0 and scalar.network == 150 * 4 * 16


STATS = {
    "big": TableStats(1_000_000, 40e6, {"k": ColumnStats(kind="number", ndv=1000, nulls=0, min=1, max=1000, step=1)}),
    "small": TableStats(1000, 40e3, {"k": ColumnStats(kind="number", ndv=1000, nulls=0, min=1, max=1000, step=1, unique=True)}),
}


def scan(table: str, name: str) -> Scan:
    return Scan(table, (ScanColumn("k", Field(name, "bigint")),), table)


def test_plan_cost_chooses_spark_default_join_algorithms() -> None:
    est = Estimator(STATS.__getitem__)
    join = Join(JoinKind.INNER, scan("big", "a"), scan("small", "b"), sqlglot.parse_one("a = b"))
    costs = PlanCost(est)
    assert costs.of(join).algorithm == "BroadcastHashJoin(build=right)"
    node = costs.of(join)
    children = costs.of(join.left).cumulative.total + costs.of(join.right).cumulative.total
    assert node.cumulative.total == pytest.approx(node.own.total + children)
    tiny = PlanCost(Estimator(STATS.__getitem__), CostConstants.from_mapping({"broadcast_threshold": 1}))
    assert tiny.of(join).algorithm == "SortMergeJoin"
    cross = Join(JoinKind.CROSS, scan("big", "a"), scan("small", "b"))
    assert costs.of(cross).algorithm == "BroadcastNestedLoopJoin"
    # A left join cannot build its left side.
    left = Join(JoinKind.LEFT, scan("small", "b"), scan("big", "a"), sqlglot.parse_one("a = b"))
    assert tiny.of(left).algorithm == "SortMergeJoin" and costs.of(left).algorithm == "SortMergeJoin"


def test_order_by_limit_is_a_top_k_without_the_sort() -> None:
    est = Estimator(STATS.__getitem__)
    source = Filter(scan("big", "a"), sqlglot.parse_one("a > 0"))
    sort = Sort(source, (SortKey(col("a")),))
    top = Limit(sort, 10)
    costs = PlanCost(est)
    expected = costs.of(top).own.total + costs.of(source).cumulative.total
    assert costs.of(top).algorithm == "TakeOrdered"
    assert costs.of(top).cumulative.total == pytest.approx(expected)
    assert costs.of(top).cumulative.total < costs.of(sort).cumulative.total


def test_streaming_join_of_a_stream_and_a_table() -> None:
    # Stream s: rate 10 rows/unit, window 100 rows; table t bounded, 50 rows; f = 1/50 (t.k unique).
    tables = {
        "s": TableStats(100, 1000, {"k": ColumnStats(kind="number", ndv=50, nulls=0, min=1, max=50, step=1)}),
        "t": TableStats(50, 500, {"k": ColumnStats(kind="number", ndv=50, nulls=0, min=1, max=50, step=1, unique=True)}),
    }
    est = Estimator(tables.__getitem__)
    join = Join(JoinKind.INNER, scan("s", "a"), scan("t", "b"), sqlglot.parse_one("a = b"))
    streaming = StreamingEstimator(est, {"s": NodeStats.unbounded(rate=10, window=100)})
    f = 100 * 50 / 50 / (100 * 50)  # the batch estimate's selectivity: 1/50
    stats, cost = streaming.of(join)
    assert stats.rows == pytest.approx(0 * 50 * f)
    assert stats.rate == pytest.approx((10 * 50 + 0 * 100) * f)  # r_o = (r1·w2 + r2·w1)·f = 10
    assert stats.window == pytest.approx(100 * 50 * f)  # w_o = w1·w2·f = 100
    assert cost.cpu == pytest.approx(0 + 50 + 0) and cost.cpu_rate == pytest.approx(10 + 0 + 10)
    assert cost.value == pytest.approx(50 + 3600 * 20)
    assert StreamCost(cpu=3600) == StreamCost(cpu_rate=1) and StreamCost(cpu=1) < StreamCost(cpu_rate=1)
