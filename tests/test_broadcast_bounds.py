"""A misestimate never becomes a crash: broadcasts are pinned only under a proven bound on the
build side's size, a pinned broadcast that fails in Spark runs again without its hints, and
EXPLAIN says which estimates rest on defaults.

The planner tests need no Spark: they plan the shape that failed on TPC-DS without statistics
(``warehouse ⋈ inventory`` estimated at a few rows, really millions). The fallback is tested on
Spark with a real broadcast failure on tiny data (``spark.sql.maxBroadcastTableSize`` below the
build side's size).
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import pytest

from tempura.algebra import Join, LogicalPlan
from tempura.catalog import TableSource
from tempura.cost import CostConstants, PlanCost
from tempura.cost.operators import SparkCosts
from tempura.memo import PhysicalPlan
from tempura.optimizer import Optimizer, PlannedQuery
from tempura.optimizer.explain import StatsExplainer, format_physical
from tempura.runtime import compare_results, execute, run_with_fallback
from tempura.runtime.executor import is_broadcast_failure
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.stats.defaults import default_table_stats
from tempura.stats.model import ColumnStats

SCHEMAS = {
    "warehouse": {"w_id": "bigint", "w_name": "string"},
    "inventory": {"inv_w": "bigint", "inv_item": "bigint", "inv_qty": "int"},
    "item": {"i_id": "bigint", "i_name": "string"},
}

# On-disk sizes: warehouse and item are small files, inventory is a large one.
FILE_BYTES = {"warehouse": 2_000.0, "inventory": 50_000_000.0, "item": 300_000.0}

QUERY = """
SELECT w_name, i_name, inv_qty
FROM inventory JOIN warehouse ON inv_w = w_id JOIN item ON inv_item = i_id
"""

THRESHOLD = CostConstants().broadcast_limit


def defaults(table: str, file_bytes: float | None = None) -> TableStats:
    """What tempura knows of ``table`` without ``tempura analyze``: rows from its file size."""
    size = FILE_BYTES[table] if file_bytes is None else file_bytes
    return default_table_stats(TableSource(table, f"/{table}"), SCHEMAS[table], size)


def analyzed(rows: float, bytes_: float, **columns: ColumnStats) -> TableStats:
    return TableStats(rows=rows, bytes=bytes_, columns=columns, source="injected")


def number(ndv: float, unique: bool = False) -> ColumnStats:
    return ColumnStats(kind="number", ndv=ndv, nulls=0.0, min=1.0, max=ndv, step=1.0, unique=unique)


def text(ndv: float) -> ColumnStats:
    return ColumnStats(kind="string", ndv=ndv, nulls=0.0, avg_len=10.0, max_len=10.0)


ANALYZED = {
    "warehouse": analyzed(5, 150, w_id=number(5, unique=True), w_name=text(5)),
    "inventory": analyzed(12_000_000, 300_000_000, inv_w=number(5), inv_item=number(10_000), inv_qty=number(1000)),
    "item": analyzed(10_000, 200_000, i_id=number(10_000, unique=True), i_name=text(10_000)),
}


def plan(tables: dict[str, TableStats], sql: str = QUERY) -> PlannedQuery:
    return Optimizer(Estimator(tables.__getitem__)).plan(parse_query(sql, SCHEMAS))


def tables_under(node: PhysicalPlan) -> set[str]:
    if node.operator == "Scan":
        return {node.details.split(" [", 1)[0].split(" AS ")[-1]}
    return set().union(*(tables_under(c) for c in node.children)) if node.children else set()


def pinned_broadcasts(node: PhysicalPlan) -> list[tuple[set[str], PhysicalPlan]]:
    """Every join pinned as a broadcast: the tables of its build side, and the build side."""
    found = []
    if node.hint is not None and node.hint.startswith("BROADCAST"):
        side = 0 if node.hint.endswith(":left") else 1
        found.append((tables_under(node.children[side]), node.children[side]))
    for child in node.children:
        found.extend(pinned_broadcasts(child))
    return found


def joins(plan: LogicalPlan) -> list[Join]:
    found = [plan] if isinstance(plan, Join) else []
    for child in plan.inputs:
        found.extend(joins(child))
    return found


# -- the bound ---------------------------------------------------------------------------------


def test_a_table_without_statistics_is_bounded_by_its_file_size_unless_that_is_unknown() -> None:
    estimator = Estimator({"warehouse": defaults("warehouse"), "item": defaults("item", None)}.__getitem__)
    scan = parse_query("SELECT w_id FROM warehouse", SCHEMAS).plan
    stats = estimator.estimate(scan)
    assert stats.max_rows == defaults("warehouse").rows and stats.max_bytes <= THRESHOLD
    unknown = default_table_stats(TableSource("warehouse", "/warehouse"), SCHEMAS["warehouse"], None)
    assert math.isinf(Estimator(lambda _t: unknown).estimate(scan).max_rows)


def small_inventory() -> dict[str, TableStats]:
    """No statistics, and an inventory file small enough that a join with it is estimated
    under the broadcast threshold (but many-to-many on real data, for all tempura knows)."""
    return {**{t: defaults(t) for t in SCHEMAS}, "inventory": defaults("inventory", 300_000.0)}


def test_a_join_without_a_unique_key_has_no_bound_but_the_product() -> None:
    tables = small_inventory()
    query = parse_query("SELECT w_name, inv_qty FROM inventory JOIN warehouse ON inv_w = w_id", SCHEMAS)
    estimator = Estimator(tables.__getitem__)
    (join,) = joins(query.plan)
    stats = estimator.estimate(join)
    assert stats.bytes < THRESHOLD  # the estimate would allow a broadcast ...
    # ... but only the product of the two tables bounds the join.
    assert stats.max_rows == tables["inventory"].rows * tables["warehouse"].rows
    assert stats.max_bytes > THRESHOLD


def test_a_join_without_distinct_counts_keeps_the_larger_sides_rows() -> None:
    """Without statistics the smaller side is taken as the key side: every row of the larger
    side finds one partner (on TPC-DS, warehouse ⋈ inventory was estimated at warehouse's rows)."""
    tables = {t: defaults(t) for t in SCHEMAS}
    query = parse_query("SELECT w_name, inv_qty FROM inventory JOIN warehouse ON inv_w = w_id", SCHEMAS)
    (join,) = joins(query.plan)
    rows = Estimator(tables.__getitem__).estimate(join).rows
    assert rows == pytest.approx(tables["inventory"].rows)
    assert tables["inventory"].rows > 1000 * tables["warehouse"].rows


def test_a_join_to_a_unique_key_keeps_at_most_the_other_sides_rows() -> None:
    query = parse_query("SELECT w_name, inv_qty FROM inventory JOIN warehouse ON inv_w = w_id", SCHEMAS)
    (join,) = joins(query.plan)
    stats = Estimator(ANALYZED.__getitem__).estimate(join)
    assert stats.max_rows == ANALYZED["inventory"].rows
    small = parse_query("SELECT w_name, i_name FROM item JOIN warehouse ON i_id = w_id", SCHEMAS)
    (join,) = joins(small.plan)
    bounded = Estimator(ANALYZED.__getitem__).estimate(join)
    assert bounded.max_rows == ANALYZED["warehouse"].rows and bounded.max_bytes <= THRESHOLD


@pytest.mark.parametrize("sql, bound", [
    ("SELECT w_id FROM warehouse WHERE w_name = 'a'", 5.0),
    ("SELECT w_id, COUNT(*) AS n FROM warehouse GROUP BY w_id", 5.0),
    ("SELECT COUNT(*) AS n FROM inventory", 1.0),
    ("SELECT inv_w FROM inventory LIMIT 7", 7.0),
    ("SELECT w_id FROM warehouse WHERE w_id IN (SELECT inv_w FROM inventory)", 5.0),
    ("SELECT w_id FROM warehouse UNION ALL SELECT i_id FROM item", 10_005.0),
    ("SELECT w_name, i_name FROM warehouse LEFT JOIN item ON w_id = i_id", 10.0),
])
def test_bounds_of_other_operators(sql: str, bound: float) -> None:
    query = parse_query(sql, SCHEMAS)
    assert Estimator(ANALYZED.__getitem__).estimate(query.plan).max_rows == bound


# -- the planner -------------------------------------------------------------------------------


def test_no_broadcast_is_pinned_on_a_join_whose_size_has_no_bound() -> None:
    planned = plan(small_inventory())
    broadcasts = pinned_broadcasts(planned.physical)
    # Without statistics no key is known to be unique: only single tables have a bound.
    assert all(len(tables) == 1 for tables, _ in broadcasts), format_physical(planned.physical)
    assert all(build.stats.max_bytes <= THRESHOLD for _, build in broadcasts)


def test_a_broadcast_with_a_bound_is_kept() -> None:
    planned = plan({t: defaults(t) for t in SCHEMAS})
    assert any(tables == {"warehouse"} for tables, _ in pinned_broadcasts(planned.physical)), format_physical(planned.physical)
    # A key/foreign-key join of two small tables is bounded by its many side: broadcast whole.
    sql = """SELECT inv_qty, w_name, i_name
             FROM inventory JOIN (SELECT * FROM item JOIN warehouse ON i_id = w_id) AS iw ON inv_item = i_id"""
    planned = plan(ANALYZED, sql)
    builds = [tables for tables, _ in pinned_broadcasts(planned.physical)]
    assert {"item", "warehouse"} in builds or {"warehouse"} in builds, format_physical(planned.physical)
    assert "inventory" not in set().union(*builds)


def test_a_broadcast_join_prices_building_its_relation_on_either_side() -> None:
    """Every executor builds the broadcast relation, whichever input it is: the join's own cost
    is the hash join plus those builds, so the two orders of one join cost the same and neither
    is picked for a cost it leaves out."""
    k = CostConstants()
    for sql in ("SELECT w_name, inv_qty FROM inventory JOIN warehouse ON inv_w = w_id",
                "SELECT w_name, inv_qty FROM warehouse JOIN inventory ON inv_w = w_id"):
        planned = plan(ANALYZED, sql)
        (tables, build), = pinned_broadcasts(planned.physical)
        assert tables == {"warehouse"}
        join = find(planned.physical, "BroadcastHashJoin")
        assert join is not None, format_physical(planned.physical)
        probe = next(c for c in join.children if c.operator != "BroadcastExchange")
        expected = SparkCosts(k).hash_join(build.stats, probe.stats, join.stats).total
        expected += k.cpu * k.hash * build.stats.rows * (k.executors - 1)
        assert join.own.total == pytest.approx(expected, rel=1e-9), format_physical(planned.physical)


def find(node: PhysicalPlan, operator: str) -> PhysicalPlan | None:
    """The first node of ``operator`` in ``node``'s tree, top down."""
    if node.operator == operator:
        return node
    return next((found for c in node.children if (found := find(c, operator)) is not None), None)


def test_an_unbounded_nested_loop_join_is_left_to_spark() -> None:
    unknown = {t: default_table_stats(TableSource(t, f"/{t}"), SCHEMAS[t], None) for t in SCHEMAS}
    planned = plan(unknown, "SELECT w_name, i_name FROM warehouse JOIN item ON w_id < i_id")
    assert planned.physical.operator != "BroadcastNestedLoopJoin" or "unpinned" in planned.physical.details
    assert planned.hints == {}


# -- EXPLAIN -----------------------------------------------------------------------------------


def test_explain_marks_estimates_on_defaults() -> None:
    on_defaults = format_physical(plan({t: defaults(t) for t in SCHEMAS}).physical)
    assert "rows≈" in on_defaults and "rows=" not in on_defaults
    summary = on_defaults.splitlines()[-1]
    assert summary.startswith("≈ ") and "operators estimated on defaults" in summary
    assert "no statistics for" in summary and "inventory" in summary and "warehouse" in summary
    measured = format_physical(plan(ANALYZED).physical)
    assert "≈" not in measured


def test_explain_stats_marks_estimates_on_defaults() -> None:
    tables = {**ANALYZED, "warehouse": defaults("warehouse")}
    estimator = Estimator(tables.__getitem__)
    explainer = StatsExplainer(estimator, PlanCost(estimator))
    query = parse_query("SELECT i_name FROM item WHERE i_id < 10", SCHEMAS)
    assert "≈" not in explainer.text(query)
    query = parse_query(QUERY, SCHEMAS)
    shown = explainer.text(query)
    assert "Scan warehouse [w_id, w_name]  (rows≈" in shown and "Scan item [i_id, i_name]  (rows=" in shown
    assert "no statistics for warehouse" in shown and "inventory" not in shown.split("≈ ", 1)[1].splitlines()[0]
    report = explainer.json(query, with_sql=False)
    by_operator = {(n["operator"], n["details"]): n for n in report["nodes"]}
    assert by_operator[("Scan", "item [i_id, i_name]")]["on_defaults"] is False
    assert by_operator[("Scan", "warehouse [w_id, w_name]")]["on_defaults"] is True
    assert report["defaults"].startswith("≈ ")


# -- the fallback on Spark ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(fast_spark: Any) -> Iterator[Any]:
    """Tiny tables as views, and a broadcast limit below their size (Spark fails any broadcast);
    Spark's own plan broadcasts nothing, as it would not tables of unknown size."""
    spark = fast_spark
    spark.createDataFrame([(i, f"w{i}") for i in range(1, 4)], "w_id bigint, w_name string").createOrReplaceTempView("warehouse")
    spark.createDataFrame([(i % 3 + 1, i % 7, i) for i in range(60)], "inv_w bigint, inv_item bigint, inv_qty int"
                          ).createOrReplaceTempView("inventory")
    spark.createDataFrame([(i, f"i{i}") for i in range(7)], "i_id bigint, i_name string").createOrReplaceTempView("item")
    settings = {"spark.sql.maxBroadcastTableSize": "1k", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
    for view in SCHEMAS:
        spark.catalog.dropTempView(view)


def rows(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in frame.collect()]


def test_a_failed_broadcast_runs_again_without_it(tiny: Any) -> None:
    planned = plan({t: defaults(t, 100.0) for t in SCHEMAS})
    assert any(strategy == "BROADCAST" for strategy, _ in planned.hints.values())
    with pytest.raises(Exception) as failure:  # the plan as pinned really fails in Spark
        rows(execute(planned.query, tiny, planned.hints))
    assert is_broadcast_failure(failure.value)
    actual, fallback = run_with_fallback(planned.query, tiny, planned.hints, rows)
    assert fallback is not None and fallback.dropped >= 1
    assert "Cannot broadcast the table" in fallback.message and "ran the query again without" in fallback.message
    expected = rows(tiny.sql(QUERY))
    assert len(expected) == 60
    assert compare_results(expected, actual, planned.query.ordered, planned.query.order_keys).equal


def test_other_failures_are_not_retried(tiny: Any) -> None:
    planned = plan({t: defaults(t, 100.0) for t in SCHEMAS})
    calls = []

    def failing(frame: Any) -> None:
        calls.append(frame)
        raise ValueError("not a broadcast")

    with pytest.raises(ValueError):
        run_with_fallback(planned.query, tiny, planned.hints, failing)
    assert len(calls) == 1
    no_broadcasts = {plan_: hint for plan_, hint in planned.hints.items() if hint[0] != "BROADCAST"}
    with pytest.raises(Exception) as failure:  # Spark's own failure, with nothing to drop: raised
        run_with_fallback(planned.query, tiny, no_broadcasts,
                          lambda _frame: rows(tiny.sql("SELECT /*+ BROADCAST(item) */ * FROM inventory JOIN item ON inv_item = i_id")))
    assert is_broadcast_failure(failure.value)


def test_a_plan_that_fits_runs_once(tiny: Any) -> None:
    planned = plan({t: defaults(t, 100.0) for t in SCHEMAS}, "SELECT i_name FROM item WHERE i_id < 3")
    actual, fallback = run_with_fallback(planned.query, tiny, planned.hints, rows)
    assert fallback is None and sorted(actual) == [("i0",), ("i1",), ("i2",)]



def test_a_standing_fragment_whose_broadcast_does_not_fit_runs_again_without_it(
        fast_spark: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A time point whose fragment pins a broadcast that Spark refuses (``maxBroadcastTableSize``
    below the build side's size) runs that fragment again without its broadcast hints: every
    delivery equals ``spark.sql`` on its snapshot, and the manifest and ``tempura run``'s line
    say which fragment dropped how many hints, and why."""
    from scenarios import prepared_scenario
    from tempura.cli import _echo_results
    from tempura.standing import StandingQuery

    path = prepared_scenario(fast_spark, "sales_returns", tmp_path / "scenario", 0.002)
    path.write_text(path.read_text().replace("deliver: last", "deliver: every"))
    query = StandingQuery(path, tmp_path / "work", spark=fast_spark)
    assert any(strategy == "BROADCAST" for f in query.plan("batch").plan.fragments for strategy, _ in f.hints.values())
    settings = {"spark.sql.maxBroadcastTableSize": "1k", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    before = {key: fast_spark.conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            fast_spark.conf.set(key, value)
        run = query.simulate("batch", check=True)
    finally:
        for key, value in before.items():
            fast_spark.conf.unset(key) if value is None else fast_spark.conf.set(key, value)
    assert run.points and all(p.delivered and p.correct for p in run.points), [p.detail for p in run.points]
    fell = [(r.index, f) for r in run.results for f in r.manifest["fragments"] if f.get("broadcast_fallback")]
    assert fell, "no fragment ran again"
    for _, fragment in fell:
        assert fragment["broadcast_fallback"]["dropped_join_hints"] >= 1
        assert "Cannot broadcast the table" in fragment["broadcast_fallback"]["error"]
    _echo_results(run.results)
    index, fragment = fell[0]
    line = next(line for line in capsys.readouterr().out.splitlines() if f" t{index} " in line)
    assert f"{fragment['id']} ran again without {fragment['broadcast_fallback']['dropped_join_hints']} join hint(s)" in line
