"""Unit tests of tempura.cost on hand-worked numbers.

Covered: the Hive-seed constants and their overrides (``CostConstants.from_mapping``), the
:class:`Cost` value (addition, total, ordering by time then rows, equality and hash, INFINITE),
``format_time``, every :class:`SparkCosts` formula, :class:`PlanCost` on small logical plans
(the algorithm Spark would pick, cumulative = own + children, ORDER BY … LIMIT as a top-k), and
the Beam seed's streaming :class:`NodeStats` / :class:`StreamCost`.

Every expected value is written out as arithmetic on the seed constants (CPUc = 1, NEt = 150,
Lr = Lw = 600, Hr = 900, Hw = 6000, 2 executors, 4 partitions); none is computed by calling the
code under test. The formulas are checked without the fixed cost per stage (``stage = 0``, the
seed's formulas alone); which operators start a stage is checked on its own. No Spark.
"""

from __future__ import annotations

import math

import pytest
from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    AggregateCall,
    Except,
    Field,
    Filter,
    Intersect,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Scan,
    ScanColumn,
    Sort,
    SortKey,
    Union,
    col,
)
from tempura.cost import (
    INFINITE,
    ZERO,
    Cost,
    CostConstants,
    NodeStats,
    PlanCost,
    SparkCosts,
    StreamCost,
    StreamingEstimator,
    format_time,
)
from tempura.errors import TempuraError
from tempura.stats import ColumnStats, Estimator, TableStats
from tempura.stats.relation import RelStats

# -- helpers ---------------------------------------------------------------------------------


def rel(rows: float, row_size: float = 10.0) -> RelStats:
    return RelStats(rows, row_size, {})


def check(cost: Cost, *, cpu: float = 0.0, io: float = 0.0, network: float = 0.0, rows: float | None) -> None:
    """Compare every component (Cost's own == only looks at total and rows). ``rows=None`` skips
    the rows of composite operators, which are wrong (see test_composite_costs_report_output_rows)."""
    assert cost.cpu == pytest.approx(cpu), "cpu"
    assert cost.io == pytest.approx(io), "io"
    assert cost.network == pytest.approx(network), "network"
    if rows is not None:
        assert cost.rows == pytest.approx(rows), "rows"


def key_column(ndv: float, unique: bool = False) -> ColumnStats:
    return ColumnStats(kind="number", ndv=ndv, nulls=0, min=1, max=ndv, step=1, unique=unique)


def scan(table: str, name: str) -> Scan:
    """A one-column scan of ``table.k`` exposed as ``name`` (bigint: 8 bytes + 8 row overhead)."""
    return Scan(table, (ScanColumn("k", Field(name, "bigint", False)),), table)


def eq(a: str, b: str) -> exp.Expr:
    return exp.EQ(this=col(a), expression=col(b))


def gt(a: str, value: int) -> exp.Expr:
    return exp.GT(this=col(a), expression=exp.Literal.number(value))


# Batch tables: orders (4096 rows, k has 64 values), dim (64 rows, k unique). Both store 32
# bytes a row, more than the schema's 16 (8 overhead + 8 bigint), so a scan row is 16 bytes:
# orders 4096·16 = 65 536 bytes, dim 64·16 = 1 024 bytes. orders ⋈ dim on k: 4096·64/64 = 4096
# rows of 16 + 16 − 8 = 24 bytes.
TABLES = {
    "orders": TableStats(4096, 4096 * 32, {"k": key_column(64)}),
    "dim": TableStats(64, 64 * 32, {"k": key_column(64, unique=True)}),
}
ORDERS_BYTES = 4096 * 16
DIM_BYTES = 64 * 16


SEED = CostConstants.from_mapping({"stage": 0})  # the Hive seed's formulas, no fixed cost per stage


def seed(**changes: float) -> CostConstants:
    return CostConstants.from_mapping({"stage": 0, **changes})


def plan_cost(constants: CostConstants = SEED) -> PlanCost:
    return PlanCost(Estimator(TABLES.__getitem__), constants)


# -- constants -------------------------------------------------------------------------------


def test_default_constants_are_the_hive_seed() -> None:
    k = CostConstants()
    cpu_c = 1.0
    net = 150 * cpu_c
    lr = lw = 4 * net
    assert k.cpu == cpu_c and k.hash == 1.0
    assert k.network == net == 150.0
    assert k.local_read == lr == 600.0 and k.local_write == lw == 600.0
    assert k.dfs_read == 1.5 * lr == 900.0
    assert k.dfs_write == 10 * lw == 6000.0
    assert k.executors == 2 and k.partitions == 4
    assert k.broadcast_threshold == 10 * 1024 * 1024 and k.broadcast_limit == 64 * 1024 * 1024
    assert k.cpu_rate_weight == 3600.0


def test_from_mapping_overrides_only_the_named_constants() -> None:
    k = CostConstants.from_mapping({"network": "300", "executors": 8, "broadcast_threshold": 1.5})
    assert k.network == 300.0 and k.executors == 8 and k.broadcast_threshold == 1.5
    assert isinstance(k.executors, int) and isinstance(k.network, float)
    assert k.cpu == 1.0 and k.dfs_read == 900.0 and k.partitions == 4  # untouched
    assert CostConstants.from_mapping({}) == CostConstants()
    assert CostConstants.from_mapping({"cpu": 0}).cpu == 0.0  # zero is allowed


def test_from_mapping_rejects_unknown_names() -> None:
    with pytest.raises(TempuraError, match="unknown cost constant 'netwerk'") as info:
        CostConstants.from_mapping({"netwerk": 1})
    assert "network" in str(info.value)  # the known names are listed


@pytest.mark.parametrize("raw", ["fast", None, True, [1]])
def test_from_mapping_rejects_non_numbers(raw: object) -> None:
    with pytest.raises(TempuraError, match="cost constant 'dfs_read': not a number"):
        CostConstants.from_mapping({"dfs_read": raw})


@pytest.mark.parametrize("raw", [-1, "-0.5", "nan"])
def test_from_mapping_rejects_negatives_and_nan(raw: object) -> None:
    with pytest.raises(TempuraError, match="cost constant 'partitions' must be a"):
        CostConstants.from_mapping({"partitions": raw})


def test_from_mapping_rejects_an_infinite_integer_constant() -> None:
    with pytest.raises(TempuraError, match="executors"):
        CostConstants.from_mapping({"executors": "inf"})


# -- the Cost value --------------------------------------------------------------------------


def test_cost_adds_componentwise_and_totals_time() -> None:
    a = Cost(cpu=10, io=5, network=1, rows=3)
    b = Cost(cpu=1, io=2, network=4, rows=2)
    check(a + b, cpu=11, io=7, network=5, rows=5)
    assert a.total == 10 + 5 + 1
    assert (a + b).total == 16 + 7
    assert a + ZERO == a and ZERO.total == 0
    check(a.scaled(2), cpu=20, io=10, network=2, rows=6)
    assert a.to_json() == {"total_ns": 16, "cpu_ns": 10, "io_ns": 5, "network_ns": 1}


def test_cost_orders_by_total_time_first() -> None:
    cheap_many_rows = Cost(cpu=1, rows=1_000_000)
    dear_few_rows = Cost(io=2, rows=1)
    assert cheap_many_rows < dear_few_rows
    assert dear_few_rows > cheap_many_rows
    assert sorted([dear_few_rows, cheap_many_rows]) == [cheap_many_rows, dear_few_rows]


def test_cost_rows_break_ties_of_equal_time() -> None:
    # 5 ns either way: fewer rows is cheaper (Hive isLe).
    assert Cost(cpu=5, rows=1) < Cost(io=2, network=3, rows=2)
    assert Cost(cpu=5, rows=1) <= Cost(io=5, rows=1)
    assert not Cost(cpu=5, rows=2) <= Cost(io=5, rows=1)


def test_cost_equality_and_hash_follow_total_and_rows() -> None:
    a = Cost(cpu=5, rows=1)
    b = Cost(io=2, network=3, rows=1)  # same total, same rows, other split
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Cost(cpu=5, rows=2)}) == 2
    assert a != Cost(cpu=5, rows=2) and a != Cost(cpu=6, rows=1)
    assert a != "5ns"
    with pytest.raises(TypeError):
        _ = a < 5


def test_infinite_cost_is_above_every_finite_cost() -> None:
    assert INFINITE.is_infinite and not Cost(cpu=1e300).is_infinite
    assert Cost(cpu=1e300, io=1e300, rows=1e300) < INFINITE
    assert (INFINITE + Cost(cpu=1)).is_infinite
    assert INFINITE == Cost(cpu=math.inf, rows=math.inf)
    assert str(INFINITE) == "inf"
    assert min([INFINITE, Cost(cpu=7)]) == Cost(cpu=7)


@pytest.mark.parametrize(
    "ns, text",
    [
        (0, "0ns"),
        (999, "999ns"),
        (1_000, "1us"),
        (2_500, "2.5us"),
        (123_456, "123us"),
        (1.2e6, "1.2ms"),
        (3.4e9, "3.4s"),
        (90e9, "1.5min"),
        (3.6e12, "1h"),
        (2.5 * 3.6e12, "2.5h"),
        (math.inf, "inf"),
    ],
)
def test_format_time(ns: float, text: str) -> None:
    assert format_time(ns) == text


def test_cost_prints_its_total_time() -> None:
    assert str(Cost(cpu=1e6, io=0.5e6, network=0.0)) == "1.5ms"


def test_format_time_rounds_into_the_next_unit() -> None:
    assert format_time(999_999) == "1ms"


# -- SparkCosts formulas -----------------------------------------------------------------------

C = SparkCosts(SEED)
SOURCE = rel(1000, 20)  # 20 000 bytes


def test_scan_reads_table_bytes() -> None:
    check(C.scan(SOURCE), io=900.0 * 1000 * 20, rows=1000)  # Hr · T(R) · Tsz


def test_filter_compares_every_input_row() -> None:
    check(C.filter(SOURCE, rel(250, 20)), cpu=1.0 * 1000, rows=250)  # T(R) · CPUc


def test_project_costs_a_pass_plus_one_cpu_per_computed_value() -> None:
    check(C.project(SOURCE, 3), cpu=1000 * (3 + 1), rows=1000)
    check(C.project(SOURCE, 0), cpu=1000, rows=1000)


def test_shuffle_writes_reads_and_sends_every_byte() -> None:
    check(
        C.shuffle(SOURCE),
        cpu=1.0 * 1.0 * 1000,  # hash each row to its partition
        io=(600.0 + 600.0) * 20_000,  # (Lw + Lr) · bytes
        network=150.0 * 20_000,  # NEt · bytes
        rows=1000,
    )


def test_broadcast_sends_to_every_executor() -> None:
    check(C.broadcast(SOURCE), network=150.0 * 20_000 * 2, rows=1000)
    five = SparkCosts(seed(executors=5))
    check(five.broadcast(SOURCE), network=150.0 * 20_000 * 5, rows=1000)


def test_gather_union_and_limit() -> None:
    check(C.gather(SOURCE), network=150.0 * 20_000, rows=1000)
    check(C.union(SOURCE), rows=1000)
    check(C.limit(rel(10, 20)), cpu=10, rows=10)


def test_operators_that_start_a_stage_pay_its_fixed_cost_once() -> None:
    """Scans, state reads and writes, exchanges and gathers start a stage; broadcasts (their job
    is the build side's stage), sorts, filters, hash joins (without their exchanges), unions and
    limits run inside one. The cost counts the stages it charged, for calibration."""
    with_stage, without = SparkCosts(CostConstants()), C
    stage = 1e9
    assert CostConstants().stage == stage
    joined = (BUILD, PROBE, JOINED)
    starts: list[tuple[str, tuple[object, ...], int]] = [
        ("scan", (SOURCE,), 1), ("shuffle", (SOURCE,), 1), ("broadcast", (SOURCE,), 0), ("gather", (SOURCE,), 1),
        ("state_write", (SOURCE,), 1), ("state_read", (SOURCE,), 1), ("filter", (SOURCE, SOURCE), 0),
        ("sort", (SOURCE,), 0), ("range_sort", (SOURCE,), 2), ("union", (SOURCE,), 0), ("limit", (SOURCE,), 0), ("hash_join", joined, 0),
        ("broadcast_hash_join", joined, 0), ("shuffled_hash_join", joined, 2), ("sort_merge_join", joined, 2),
        ("nested_loop_join", joined, 0), ("hash_aggregate", (SOURCE, rel(10), True), 1),
        ("hash_aggregate", (SOURCE, rel(1), False), 1),
    ]
    for name, args, stages in starts:
        paid, seed_only = getattr(with_stage, name)(*args), getattr(without, name)(*args)
        assert paid.cpu - seed_only.cpu == pytest.approx(stages * stage), name
        assert (paid.io, paid.network, paid.rows) == (seed_only.io, seed_only.network, seed_only.rows), name
        assert paid.stages == seed_only.stages == stages, name  # the count, whatever the constant


def test_sort_is_n_log2_n() -> None:
    check(C.sort(rel(1024)), cpu=1024 * 10, rows=1024)  # log2 1024 = 10
    check(C.sort(rel(8)), cpu=8 * 3, rows=8)
    check(C.sort(rel(1)), rows=1)  # log2 of one row or fewer is 0
    check(C.sort(rel(0)), rows=0)


def test_a_global_sort_pays_its_exchange_its_sort_and_a_sampling_pass_over_its_input() -> None:
    """Spark's range exchange runs a sampling job over the input before it writes: one more
    pass over the rows (and a stage) besides the shuffle and the sort."""
    source = rel(1024, 20)
    expected = C.shuffle(source) + C.sort(source) + Cost(cpu=SEED.cpu * 1024)
    check(C.range_sort(source), cpu=expected.cpu, io=expected.io, network=expected.network, rows=1024)
    assert C.range_sort(source).cpu > (C.shuffle(source) + C.sort(source)).cpu


def test_top_k_is_n_log2_k() -> None:
    check(C.top_k(rel(1024), 8), cpu=1024 * 3, rows=8)
    check(C.top_k(rel(1024), 1), cpu=1024 * 1, rows=1)  # k below 2 counts as 2
    check(C.top_k(rel(5), 16), cpu=5 * 4, rows=5)  # never more rows than the input


BUILD, PROBE, JOINED = rel(100, 10), rel(10_000, 10), rel(5_000, 20)  # 1 000 and 100 000 bytes


def test_hash_join_builds_probes_and_emits() -> None:
    check(C.hash_join(BUILD, PROBE, JOINED), cpu=100 * 1 + 10_000 + 5_000, rows=5_000)


def test_broadcast_hash_join() -> None:
    check(
        C.broadcast_hash_join(BUILD, PROBE, JOINED),
        network=150.0 * 1_000 * 2,  # NEt · bytes · executors (Hive map join)
        cpu=100 * (2 - 1) + (100 + 10_000 + 5_000),  # the other executor builds too, then probe
        rows=None,
    )


def test_broadcast_hash_join_with_other_constants() -> None:
    c = SparkCosts(seed(hash=2, executors=4))
    check(
        c.broadcast_hash_join(BUILD, PROBE, JOINED),
        network=150.0 * 1_000 * 4,
        cpu=2 * 100 * (4 - 1) + (100 * 2 + 10_000 + 5_000),
        rows=None,
    )


def test_shuffled_hash_join() -> None:
    check(
        C.shuffled_hash_join(BUILD, PROBE, JOINED),
        cpu=(100 + 10_000) + (100 + 10_000 + 5_000),  # hash both sides to partitions, then join
        io=1200.0 * (1_000 + 100_000),
        network=150.0 * (1_000 + 100_000),
        rows=None,
    )


def test_sort_merge_join() -> None:
    left, right, out = rel(256, 10), rel(1024, 10), rel(1024, 20)  # 2 560 and 10 240 bytes
    shuffle_cpu = 256 + 1024
    sort_cpu = 256 * 8 + 1024 * 10
    merge_cpu = 256 + 1024 + 1024
    check(
        C.sort_merge_join(left, right, out),
        cpu=shuffle_cpu + sort_cpu + merge_cpu,  # 1 280 + 12 288 + 2 304
        io=1200.0 * (2_560 + 10_240),
        network=150.0 * (2_560 + 10_240),
        rows=None,
    )
    check(C.merge_join(left, right, out), cpu=merge_cpu, rows=1024)


def test_nested_loop_join_broadcasts_the_side_with_fewer_bytes() -> None:
    left, right = rel(100, 50), rel(1000, 2)  # 5 000 bytes vs 2 000 bytes: right is smaller
    out = rel(100_000, 52)
    check(C.nested_loop_join(left, right, out), cpu=100 * 1000, network=150.0 * 2_000 * 2, rows=None)
    same = rel(10, 10)  # equal bytes: the left side is broadcast
    check(C.nested_loop_join(same, rel(100, 1), rel(1000, 11)), cpu=10 * 100, network=150.0 * 100 * 2, rows=None)


def test_keyed_hash_aggregate_shuffles_at_most_groups_times_partitions() -> None:
    source, out = rel(10_000, 10), rel(50, 16)
    partial = 50 * 4  # 200 rows of 16 bytes leave the partial aggregates
    check(
        C.hash_aggregate(source, out, keyed=True),
        cpu=10_000 + partial + partial,  # partial hash, shuffle hash, final hash
        io=1200.0 * partial * 16,
        network=150.0 * partial * 16,
        rows=None,
    )
    assert C.partial_rows(source, 50) == 200


def test_keyed_hash_aggregate_never_shuffles_more_than_its_input() -> None:
    source, out = rel(100, 10), rel(50, 16)
    partial = 100  # min(100 rows, 50 groups · 4 partitions)
    check(
        C.hash_aggregate(source, out, keyed=True),
        cpu=100 + partial + partial,
        io=1200.0 * partial * 16,
        network=150.0 * partial * 16,
        rows=None,
    )


def test_global_hash_aggregate_gathers_one_row_per_partition() -> None:
    check(
        C.hash_aggregate(rel(10_000, 10), rel(1, 16), keyed=False),
        cpu=10_000 + 4,  # partial hash of every row, final over 4 partial rows
        network=150.0 * 4 * 16,  # gathered, not shuffled: no local IO
        rows=None,
    )


def test_composite_costs_report_output_rows() -> None:
    # Cost.rows is "the rows produced", the Hive isLe tie-breaker: a join produces its output.
    assert C.broadcast_hash_join(BUILD, PROBE, JOINED).rows == 5_000  # gives 100 + 5 000
    assert C.sort_merge_join(rel(256), rel(1024), rel(1024)).rows == 1024  # gives 3 584
    assert C.hash_aggregate(rel(10_000), rel(50, 16), keyed=True).rows == 50  # gives 250


def test_state_write_and_read() -> None:
    check(C.state_write(SOURCE), io=6000.0 * 20_000, rows=1000)  # Hw · bytes
    check(C.state_read(SOURCE), io=900.0 * 20_000, rows=1000)  # Hr · bytes


# -- PlanCost ----------------------------------------------------------------------------------


def test_estimates_behind_the_plan_tests() -> None:
    """The row counts and sizes the hand-worked plan costs below rely on."""
    est = Estimator(TABLES.__getitem__)
    o, d = scan("orders", "a"), scan("dim", "b")
    assert (est.of(o).rows, est.of(o).row_size) == (4096, 16)
    assert (est.of(d).rows, est.of(d).row_size) == (64, 16)
    joined = est.of(Join(JoinKind.INNER, o, d, eq("a", "b")))
    assert (joined.rows, joined.row_size) == (4096, 24)
    assert est.of(Filter(o, gt("a", 32))).rows == 2048  # 32 of 64 values


def test_plan_scan_is_a_file_scan() -> None:
    node = plan_cost().of(scan("orders", "a"))
    assert node.algorithm == "FileScan"
    check(node.own, io=900.0 * ORDERS_BYTES, rows=4096)
    assert node.cumulative == node.own


def test_plan_filter_and_cumulative_cost() -> None:
    costs = plan_cost()
    plan = Filter(scan("orders", "a"), gt("a", 32))
    node = costs.of(plan)
    assert node.algorithm == "Filter"
    check(node.own, cpu=4096, rows=2048)  # every input row compared
    check(node.cumulative, cpu=4096, io=900.0 * ORDERS_BYTES, rows=2048)


def test_plan_join_broadcasts_the_smaller_side_under_the_threshold() -> None:
    costs = plan_cost()  # 10 MiB: both sides fit, the smaller (dim, right) builds
    join = Join(JoinKind.INNER, scan("orders", "a"), scan("dim", "b"), eq("a", "b"))
    node = costs.of(join)
    assert node.algorithm == "BroadcastHashJoin(build=right)"
    own_cpu = 64 * (2 - 1) + (64 + 4096 + 4096)  # other executor builds; build, probe, emit
    own_network = 150.0 * DIM_BYTES * 2
    check(node.own, cpu=own_cpu, network=own_network, rows=None)
    # cumulative = own + both scans; its rows are the join's
    check(node.cumulative, cpu=own_cpu, io=900.0 * (ORDERS_BYTES + DIM_BYTES), network=own_network, rows=None)
    assert node.cumulative.total == 8_320 + 307_200 + 59_904_000  # 60 219 520 ns


def test_plan_join_builds_on_the_left_when_the_left_is_smaller() -> None:
    join = Join(JoinKind.INNER, scan("dim", "b"), scan("orders", "a"), eq("b", "a"))
    assert plan_cost().of(join).algorithm == "BroadcastHashJoin(build=left)"


def test_plan_join_broadcasts_only_the_side_under_a_small_threshold() -> None:
    # dim (1 024 bytes) fits under 2 000 bytes, orders (65 536) does not.
    costs = plan_cost(seed(broadcast_threshold=2000))
    join = Join(JoinKind.INNER, scan("orders", "a"), scan("dim", "b"), eq("a", "b"))
    assert costs.of(join).algorithm == "BroadcastHashJoin(build=right)"
    # A right outer join cannot build on its right side; its left is too big: sort-merge.
    right = Join(JoinKind.RIGHT, scan("orders", "a"), scan("dim", "b"), eq("a", "b"))
    assert costs.of(right).algorithm == "SortMergeJoin"


def test_plan_join_sort_merges_when_both_sides_exceed_the_threshold() -> None:
    costs = plan_cost(seed(broadcast_threshold=500))
    join = Join(JoinKind.INNER, scan("orders", "a"), scan("dim", "b"), eq("a", "b"))
    node = costs.of(join)
    assert node.algorithm == "SortMergeJoin"
    shuffle_cpu = 4096 + 64
    sort_cpu = 4096 * 12 + 64 * 6  # log2 4096 = 12, log2 64 = 6
    merge_cpu = 4096 + 64 + 4096
    check(
        node.own,
        cpu=shuffle_cpu + sort_cpu + merge_cpu,
        io=1200.0 * (ORDERS_BYTES + DIM_BYTES),
        network=150.0 * (ORDERS_BYTES + DIM_BYTES),
        rows=None,
    )


def test_plan_join_without_equi_keys_is_a_broadcast_nested_loop() -> None:
    costs = plan_cost()
    cross = Join(JoinKind.CROSS, scan("orders", "a"), scan("dim", "b"))
    node = costs.of(cross)
    assert node.algorithm == "BroadcastNestedLoopJoin"
    # 4096 · 64 pairs compared; dim (fewer bytes) broadcast to 2 executors
    check(node.own, cpu=4096 * 64, network=150.0 * DIM_BYTES * 2, rows=None)
    theta = Join(JoinKind.INNER, scan("orders", "a"), scan("dim", "b"), exp.GT(this=col("a"), expression=col("b")))
    assert costs.of(theta).algorithm == "BroadcastNestedLoopJoin"


def test_plan_keyed_aggregate() -> None:
    node = plan_cost().of(Aggregate(scan("orders", "a"), ("a",), ()))
    assert node.algorithm == "HashAggregate"
    partial = 64 * 4  # 64 groups in each of 4 partitions, 16-byte rows
    check(
        node.own,
        cpu=4096 + partial + partial,
        io=1200.0 * partial * 16,
        network=150.0 * partial * 16,
        rows=None,
    )


def test_plan_global_aggregate() -> None:
    count = AggregateCall(Field("n", "bigint"), exp.Count(this=exp.Star()))
    node = plan_cost().of(Aggregate(scan("orders", "a"), (), (count,)))
    assert node.algorithm == "HashAggregate"
    check(node.own, cpu=4096 + 4, network=150.0 * 4 * 16, rows=None)


def test_plan_sort_is_a_sampling_pass_a_range_shuffle_and_a_sort() -> None:
    node = plan_cost().of(Sort(scan("orders", "a"), (SortKey(col("a")),)))
    assert node.algorithm == "Sort"
    check(node.own, cpu=4096 + 4096 + 4096 * 12, io=1200.0 * ORDERS_BYTES, network=150.0 * ORDERS_BYTES, rows=None)


def test_plan_order_by_limit_is_a_top_k_without_the_sort() -> None:
    costs = plan_cost()
    source = scan("orders", "a")
    sort = Sort(source, (SortKey(col("a")),))
    top = costs.of(Limit(sort, 16))
    assert top.algorithm == "TakeOrdered"
    own_cpu = 4096 * 4  # n · log2 k, k = 16
    own_network = 150.0 * 16 * 16  # the 16 rows of 16 bytes gathered
    check(top.own, cpu=own_cpu, network=own_network, rows=None)
    # cumulative = own + the scan; the Sort's shuffle and n·log n are not paid
    check(top.cumulative, cpu=own_cpu, io=900.0 * ORDERS_BYTES, network=own_network, rows=None)
    assert top.cumulative.total == 16_384 + 38_400 + 58_982_400
    assert top.cumulative < costs.of(sort).cumulative


def test_plan_limit_without_sort_keeps_its_input_cost() -> None:
    node = plan_cost().of(Limit(scan("orders", "a"), 16))
    assert node.algorithm == "Limit"
    check(node.own, cpu=16, network=150.0 * 16 * 16, rows=None)
    check(node.cumulative, cpu=16, io=900.0 * ORDERS_BYTES, network=150.0 * 16 * 16, rows=None)


def test_plan_union_all_is_free_and_sums_children() -> None:
    plan = Union(scan("orders", "a"), scan("dim", "b"), True, (Field("u", "bigint", False),))
    node = plan_cost().of(plan)
    assert node.algorithm == "Union"
    check(node.own, rows=4096 + 64)
    check(node.cumulative, io=900.0 * (ORDERS_BYTES + DIM_BYTES), rows=4096 + 64)


def test_plan_cumulative_is_own_plus_children_through_a_tree() -> None:
    costs = plan_cost()
    left = Filter(scan("orders", "a"), gt("a", 32))
    right = scan("dim", "b")
    join = Join(JoinKind.INNER, left, right, eq("a", "b"))
    node, l_node, r_node = costs.of(join), costs.of(left), costs.of(right)
    for part in ("cpu", "io", "network"):
        expected = getattr(node.own, part) + getattr(l_node.cumulative, part) + getattr(r_node.cumulative, part)
        assert getattr(node.cumulative, part) == pytest.approx(expected)
    assert node.cumulative.rows == node.own.rows


# -- streaming -------------------------------------------------------------------------------

# clicks: 200 rows in batch, k in 1..20; users: 20 rows, k unique. clicks ⋈ users on k has
# 200·20/20 = 200 rows, a selectivity f = 200 / (200·20) = 1/20.
STREAM_TABLES = {
    "clicks": TableStats(200, 200 * 32, {"k": key_column(20)}),
    "views": TableStats(500, 500 * 32, {"k": key_column(20)}),
    "users": TableStats(20, 20 * 32, {"k": key_column(20, unique=True)}),
}
CLICKS = NodeStats.unbounded(rate=4, window=40)
VIEWS = NodeStats.unbounded(rate=2, window=100)


def streaming(weight: float = 3600.0) -> StreamingEstimator:
    return StreamingEstimator(Estimator(STREAM_TABLES.__getitem__), {"Clicks": CLICKS, "views": VIEWS}, weight)


def test_node_stats_constructors() -> None:
    assert NodeStats.bounded(7) == NodeStats(7, 0, 7)
    assert NodeStats.unbounded(rate=3, window=9) == NodeStats(0, 3, 9)
    assert NodeStats(2, 4, 8).scaled(0.5) == NodeStats(1, 2, 4)


def test_stream_sources_and_bounded_tables() -> None:
    s = streaming()
    stats, cost = s.of(scan("clicks", "a"))  # source names match case-insensitively
    assert stats == NodeStats(0, 4, 40)
    assert (cost.cpu, cost.cpu_rate) == (0, 4)
    stats, cost = s.of(scan("users", "b"))
    assert stats == NodeStats(20, 0, 20)  # bounded: the batch estimate's rows
    assert (cost.cpu, cost.cpu_rate) == (20, 0)


def test_stream_join_of_an_unbounded_and_a_bounded_source() -> None:
    s = streaming()
    join = Join(JoinKind.INNER, scan("clicks", "a"), scan("users", "b"), eq("a", "b"))
    f = 1 / 20
    stats, cost = s.of(join)
    assert stats.rows == pytest.approx(0 * 20 * f)  # c_o = c_1·c_2·f = 0
    assert stats.rate == pytest.approx((4 * 20 + 0 * 40) * f)  # r_o = (r_1·w_2 + r_2·w_1)·f = 4
    assert stats.window == pytest.approx(40 * 20 * f)  # w_o = w_1·w_2·f = 40
    assert cost.cpu == pytest.approx(0 + 20 + 0)  # c_1 + c_2 + c_o
    assert cost.cpu_rate == pytest.approx(4 + 0 + 4)  # r_1 + r_2 + r_o
    assert cost.value == pytest.approx(20 + 3600 * 8)
    total = s.cumulative(join)  # + the scans' own (0, 4) and (20, 0)
    assert (total.cpu, total.cpu_rate) == pytest.approx((20 + 0 + 20, 8 + 4 + 0))


def test_stream_filter_scales_by_the_batch_selectivity() -> None:
    stats, cost = streaming().of(Filter(scan("clicks", "a"), gt("a", 10)))  # 100 of 200 rows: f = 1/2
    assert stats == NodeStats(0 * 0.5, 4 * 0.5, 40 * 0.5)
    assert (cost.cpu, cost.cpu_rate) == (0, 4)  # c and r of the input, one expression


def test_stream_keyed_aggregate_rate() -> None:
    stats, cost = streaming().of(Aggregate(scan("clicks", "a"), ("a",), ()))
    # 20 groups, all inside the window of 40 rows: w_o = 20, r_o = r_i·w_o/w_i = 4·20/40
    assert stats == NodeStats(0, 4 * 20 / 40, 20)
    assert (cost.cpu, cost.cpu_rate) == (0, 4)


def test_stream_global_aggregate_rate() -> None:
    count = AggregateCall(Field("n", "bigint"), exp.Count(this=exp.Star()))
    stats, _ = streaming().of(Aggregate(scan("clicks", "a"), (), (count,)))
    assert stats == NodeStats(0, 4 * 1 / 40, 1)  # one group in the window


FIELDS = (Field("u", "bigint", False),)


def set_operation(kind: type[Union] | type[Intersect] | type[Except], right: LogicalPlan) -> tuple[NodeStats, StreamCost]:
    return streaming().of(kind(scan("clicks", "a"), right, True, FIELDS))


def test_stream_union_sums() -> None:
    stats, cost = set_operation(Union, scan("views", "b"))
    assert stats == NodeStats(0 + 0, 4 + 2, 40 + 100)
    assert (cost.cpu, cost.cpu_rate) == (0 + 0, 4 + 2)
    stats, _ = set_operation(Union, scan("users", "b"))
    assert stats == NodeStats(0 + 20, 4 + 0, 40 + 20)


def test_stream_intersect_takes_minimums() -> None:
    stats, cost = set_operation(Intersect, scan("views", "b"))
    assert stats == NodeStats(min(0, 0), min(4, 2), min(40, 100))
    assert (cost.cpu, cost.cpu_rate) == (0, 4 + 2)


def test_stream_except_subtracts_half_never_below_zero() -> None:
    stats, cost = set_operation(Except, scan("views", "b"))
    assert stats == NodeStats(0, 4 - 0.5 * 2, 0)  # window 40 − 0.5·100 < 0: clamped
    assert (cost.cpu, cost.cpu_rate) == (0, 4 + 2)
    stats, _ = set_operation(Except, scan("users", "b"))
    assert stats == NodeStats(0, 4 - 0.5 * 0, 40 - 0.5 * 20)


def test_stream_cost_weighs_rate_by_3600() -> None:
    assert StreamCost(cpu=10, cpu_rate=2).value == 10 + 3600 * 2
    assert StreamCost(cpu=3600) == StreamCost(cpu_rate=1)
    assert hash(StreamCost(cpu=3600)) == hash(StreamCost(cpu_rate=1))
    assert StreamCost(cpu=3599) < StreamCost(cpu_rate=1) < StreamCost(cpu=3601)
    assert StreamCost(cpu=1e6) > StreamCost(cpu_rate=100)  # 1 000 000 > 360 000
    total = StreamCost(cpu=1, cpu_rate=2) + StreamCost(cpu=3, cpu_rate=4)
    assert (total.cpu, total.cpu_rate, total.value) == (4, 6, 4 + 3600 * 6)


def test_stream_cost_with_another_weight() -> None:
    assert StreamCost(cpu=100, cpu_rate=1, weight=60) < StreamCost(cpu=200)  # 160 < 200
    _, cost = streaming(weight=60).of(scan("clicks", "a"))
    assert cost.value == 0 + 60 * 4


@pytest.mark.parametrize("value", ["0", "2.7", "-1", "nan"])
def test_from_mapping_rejects_integer_constants_that_are_not_whole_and_positive(value: str) -> None:
    with pytest.raises(TempuraError, match="executors"):
        CostConstants.from_mapping({"executors": value})
