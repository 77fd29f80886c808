"""The benchmarks' arithmetic: the cardinality benchmark's q-error, percentiles and summaries,
the join-order report, and the MQO benchmark run on a few small instances; the cardinality and
join-order benchmarks run on Spark over TPC-DS at scale 0.01 (``--suite tpcds``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from benchmarks.cardinality import NodeResult, build_report, percentile, q_error, summary


def test_q_error_is_symmetric_and_counts_zero_as_one() -> None:
    assert q_error(10, 100) == 10
    assert q_error(100, 10) == 10
    assert q_error(0, 0) == 1
    assert q_error(0, 7) == 7
    assert q_error(0.2, 4) == 4  # estimates below one row count as one


def test_percentiles_interpolate_between_ranks() -> None:
    data = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert percentile(data, 50) == 3.0
    assert percentile(data, 90) == pytest.approx(4.6)  # rank 3.6 between 4 and 5
    assert percentile(data, 100) == 5.0
    assert summary(data) == {"count": 5, "median": 3.0, "p90": pytest.approx(4.6), "p95": pytest.approx(4.8), "max": 5.0}
    assert summary([]) == {"count": 0}


def node(query: str, op: str, est: float, act: float, spark: float | None, cross: bool = False) -> NodeResult:
    return NodeResult(query, 0, op, "x", est, act, spark, q_error(est, act), None if spark is None else q_error(spark, act), 0.0, cross)


def test_report_compares_only_where_spark_has_an_estimate() -> None:
    results = [
        node("q01", "Scan", 10, 10, 10),
        node("q01", "Filter", 50, 10, 1000),
        node("q01", "Aggregate", 2, 4, None),
        node("q02", "Join", 100, 100, 100, cross=True),
    ]
    report = build_report(0.01, results, 1.0)
    assert report["nodes"] == 4 and report["comparable_nodes"] == 3
    assert report["tempura_all"]["max"] == 5
    assert report["tempura_comparable"]["count"] == 3
    assert report["spark_comparable"]["max"] == 100
    assert report["tempura_without_cross_joins"]["count"] == 3
    assert report["by_operator"]["Aggregate"]["spark"] == {"count": 0}
    assert report["worst"][0]["operator"] == "Filter"


def test_join_order_report_ratios_and_geometric_means() -> None:
    from benchmarks.join_order import build_report, geomean

    def result(name: str, written: float, rules: float, cbo: float, tempura: float, cross: bool,
               bad: bool | None = None) -> dict[str, object]:
        return {
            "query": name,
            "median": {"spark-written": written, "spark-rules": rules, "spark-cbo": cbo, "tempura": tempura},
            "timed_out": {"spark-written": cross, "spark-rules": False, "spark-cbo": False, "tempura": False},
            "equal_to_spark": {"spark-cbo": True, "tempura": True},
            "optimization_seconds": 0.1,
            "written_order_cross_product": cross,
            "written_order_bad": cross if bad is None else bad,
        }

    report = build_report(0.1, 3, [result("q02", 8.0, 3.0, 2.0, 2.0, True), result("q03", 1.0, 1.0, 2.0, 4.0, False),
                                   result("q11", 1.2, 1.0, 1.0, 1.0, True, bad=False)])
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert report["geomean_ratio_written_to_tempura"] == pytest.approx(geomean([4.0, 0.25, 1.2]))
    assert report["geomean_ratio_rules_to_tempura"] == pytest.approx(geomean([1.5, 0.25, 1.0]))
    assert report["geomean_ratio_cbo_to_tempura"] == pytest.approx(geomean([1.0, 0.5, 1.0]))
    assert report["cross_product_queries"] == ["q02", "q11"]
    assert report["bad_written_order_queries"] == ["q02"]
    assert report["geomean_ratio_written_to_tempura_bad_order"] == pytest.approx(4.0)
    assert report["min_ratio_written_to_tempura_bad_order"] == pytest.approx(4.0)
    assert report["timed_out"]["spark-written"] == ["q02", "q11"] and report["timed_out"]["tempura"] == []
    assert report["all_equal"]


def test_a_cross_product_with_one_row_does_not_multiply_rows() -> None:
    from benchmarks.join_order import multiplies_rows

    assert multiplies_rows([1e6, 25.0])
    assert not multiplies_rows([1e6, 1.0]) and not multiplies_rows([1.0, 1e6])
    assert multiplies_rows([None, 25.0]) and multiplies_rows([None, None])  # no estimate: assumed bad
    assert not multiplies_rows([None, 0.0])


@pytest.mark.parametrize("suite", ["tpch", "tpcds"])
def test_join_order_queries_are_the_suite_queries_reordered(suite: str) -> None:
    """Each adversarial query binds to the same tables, predicates and output as the original."""
    from benchmarks.join_order import SUITE_QUERIES, query_text
    from tempura import tpcds, tpch
    from tempura.rules.logical import normalize
    from tempura.sql import parse_query

    module: Any = tpch if suite == "tpch" else tpcds

    def tables(plan: object) -> list[str]:
        from tempura.algebra import LogicalPlan, Scan

        assert isinstance(plan, LogicalPlan)
        own = [plan.table] if isinstance(plan, Scan) else []
        return own + [t for c in plan.inputs for t in tables(c)]

    for name in SUITE_QUERIES[suite]:
        original = parse_query(module.query_text(name), module.SCHEMA)
        rewritten = parse_query(query_text(name, suite), module.SCHEMA)
        assert rewritten.names == original.names
        assert sorted(tables(normalize(rewritten.plan))) == sorted(tables(normalize(original.plan)))
        assert tables(rewritten.plan) != tables(original.plan), f"{name}: the FROM order is unchanged"


def test_join_order_refuses_a_query_of_the_other_suite() -> None:
    from tempura.cli import main

    result = CliRunner().invoke(main, ["bench", "join-order", "--suite", "tpcds", "--query", "q02"])
    assert result.exit_code == 2
    assert "unknown join-order query: q02" in result.output and "q17" in result.output


def test_bench_incremental_runs_by_the_clock_unless_asked_to_simulate() -> None:
    """By the clock, the in-process contenders (native streaming, the floor) are refused with the
    one by the clock to use instead; simulated, the contenders that need a process per point."""
    from tempura.cli import main

    clock = CliRunner().invoke(main, ["bench", "incremental", "--contender", "spark-streaming"])
    assert clock.exit_code == 2 and "runs only with --simulate" in clock.output and "sdp-streaming" in clock.output
    simulated = CliRunner().invoke(main, ["bench", "incremental", "--simulate", "--contender", "spark-sql"])
    assert simulated.exit_code == 2 and "spark-sql runs only by the clock" in simulated.output


def test_a_table_by_the_clock_shows_whole_runs_and_tempuras_fragments_as_partial() -> None:
    from rich.console import Console

    from benchmarks.by_clock import summarize
    from benchmarks.cli import clock_table

    def point(cpu: float, fragment: float) -> dict[str, Any]:
        return {"cpu_seconds": cpu, "records_read": 2e6, "process_cpu_seconds": 9.0, "wall_seconds": 7.0, "jobs": 4,
                "by_purpose": {"fragment": {"cpu_seconds": fragment}, "landing": {"cpu_seconds": 0.5}}, "checked": True}

    summary = summarize({"auto": [[point(2.0, 1.0), point(3.0, 1.5)]], "spark-sql": [[point(4.0, 0.0), point(6.0, 0.0)]]})
    assert summary["auto_ratios"]["spark-sql"]["cpu_seconds"] == [0.5, 0.5]
    console = Console(record=True, width=200)
    console.print(clock_table("t", ["auto", "spark-sql"], summary))
    text = console.export_text()
    lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 3}
    assert "fragments CPU s (partial)" in text
    assert "1.00 1.50" in lines["auto"] and "2.00 3.00" in lines["auto"]
    assert "4.00 6.00" in lines["spark-sql"] and "0.00 0.00" not in lines["spark-sql"]


def test_a_point_whose_only_read_is_the_statistics_pass_counts_it_as_the_deltas_landing() -> None:
    """t1 lands (0.5 s) and runs a fragment (1.0 s) in 1.6 s; t2 runs no fragment, only the
    statistics' pass over its delta (0.4 s, rows read) in 0.44 s: the plain overhead has no
    figure at t2, the labelled one 1.1; a merge that reads no row is not counted as a read."""
    from benchmarks.by_clock import summarize

    def point(cpu: float, fragment: float, landing: float, stats: float, read: int) -> dict[str, Any]:
        return {"cpu_seconds": cpu, "records_read": 1e6, "process_cpu_seconds": 9.0, "wall_seconds": 7.0, "jobs": 4,
                "by_purpose": {"fragment": {"cpu_seconds": fragment}, "landing": {"cpu_seconds": landing},
                               "statistics": {"cpu_seconds": stats, "records_read": read}}, "checked": True}

    summary = summarize({"auto": [[point(1.6, 1.0, 0.5, 0.02, 0), point(0.44, 0.0, 0.0, 0.4, 500)]]})
    assert summary["auto"]["overhead"][0] == pytest.approx(1.6 / 1.5) and summary["auto"]["overhead"][1] is None
    labelled = summary["auto"]["overhead (statistics' read of the delta as its landing)"]
    assert labelled[0] == pytest.approx(1.6 / 1.5) and labelled[1] == pytest.approx(1.1)


def test_work_left_to_the_next_cycles_first_point_is_counted_beside_the_cycle() -> None:
    """auto leaves 1.5 s to the next cycle's t1 and SDP nothing: the cycle's summed ratio says 0.5,
    the ratio with the next point 1.0, and the table shows the next point's figures."""
    from rich.console import Console

    from benchmarks.by_clock import summarize
    from benchmarks.cli import clock_table

    def point(cpu: float, wall: float = 7.0) -> dict[str, Any]:
        return {"cpu_seconds": cpu, "records_read": 1e6, "process_cpu_seconds": 9.0, "wall_seconds": wall, "jobs": 4,
                "by_purpose": {}, "checked": True}

    summary = summarize({"auto": [[point(1.0), point(0.5)], [point(1.0), point(0.5)]],
                         "sdp-mv": [[point(0.0), point(3.0)], [point(0.0), point(3.0)]]},
                        {"auto": [point(1.5, 4.0), point(1.5, 6.0)], "sdp-mv": [point(0.0, 0.0), point(0.0, 0.0)]})
    assert summary["auto"]["next_cycle_t1"]["cpu_seconds"] == 1.5 and summary["auto"]["next_cycle_t1"]["wall_seconds"] == 5.0
    versus = summary["against_sdp"]["sdp-mv"]
    assert versus["summed_cpu_ratio"] == 0.5 and versus["summed_with_next_cpu_ratio"] == 1.0
    assert versus["last_cpu_ratio"] == 0.5 / 3.0
    console = Console(record=True, width=220)
    console.print(clock_table("t", ["auto", "sdp-mv"], summary))
    lines = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if line.count("│") > 3}
    assert "1.50, 5.0" in lines["auto"]


def test_the_verdict_counts_running_a_contenders_own_plan_as_its_choice() -> None:
    """``auto`` running ``ivm``'s very plan, measured a few percent above it: the noise between
    two runs of one plan is no miss; a different plan measured above the best still is."""
    from benchmarks.incremental import Attempt, Contender, verdicts

    def runs(name: str, cpu: list[float], plans: set[str]) -> Contender:
        return Contender(name, attempts=[Attempt(cpu, cpu, True)], plans=plans, last_plans=plans)

    weights = [0.001, 1.0]
    same = verdicts({"batch": runs("batch", [0.0, 2.5], {"b"}), "ivm": runs("ivm", [5.0, 0.84], {"i"}),
                     "auto": runs("auto", [5.1, 0.87], {"i"})}, weights)
    assert same["same_plan_as"] == ["ivm"] and same["ratio_objective_auto_to_best_other"] > 1
    assert same["objective_target_met"] and same["last_point_target_met"]
    other = verdicts({"batch": runs("batch", [0.0, 2.5], {"b"}), "ivm": runs("ivm", [5.0, 0.84], {"i"}),
                      "auto": runs("auto", [5.1, 0.87], {"a"})}, weights)
    assert not other["objective_target_met"] and not other["last_point_target_met"]


def test_the_floor_is_a_bound_in_the_verdict_not_a_contender() -> None:
    """The floor's last point (the query over the last interval alone) sets auto's last point
    against what no plan beats, and batch's against it; being cheapest, it is still never the
    best other contender nor part of the targets."""
    from benchmarks.incremental import Attempt, Contender, verdicts

    def runs(name: str, cpu: list[float], bound: bool = False) -> Contender:
        return Contender(name, bound=bound, attempts=[Attempt(cpu, cpu, True)], plans={name}, last_plans={name})

    weights = [0.001, 1.0]
    verdict = verdicts({"batch": runs("batch", [1.0, 2.0]), "auto": runs("auto", [1.0, 0.8]),
                        "floor": runs("floor", [0.0, 0.5], bound=True)}, weights)
    assert verdict["best_other"] == "batch" and verdict["objective_target_met"]
    assert verdict["last_point_floor"] == 0.5
    assert verdict["ratio_last_point_auto_to_floor"] == pytest.approx(1.6)
    assert verdict["ratio_last_point_floor_to_batch"] == pytest.approx(0.25)
    assert "floor" not in verdict["last_point_cpu"]
    summary = runs("floor", [0.0, 0.5], bound=True).summary(weights)
    assert "bound" in summary and "bound" not in runs("auto", [1.0, 0.8]).summary(weights)


def test_mqo_bench_measures_both_selectors_and_summarizes_the_targets(tmp_path: Path) -> None:
    from benchmarks import mqo

    report = mqo.run(tmp_path, repeat=2, names=["golden"], random_count=3, time_limit=20, points=(2,), log=lambda _m: None)
    rows = report["instances"]
    assert [r["instance"] for r in rows] == ["golden@2", "random-0", "random-1", "random-2"]
    for r in rows:
        assert r["optimal"] and r["gap"] >= 1 - 1e-6  # the ILP's optimum is never above the greedy's
        assert r["ilp_objective"] <= r["greedy_objective"] * (1 + 1e-6)
    summary = report["summary"]["all"]
    assert summary["instances"] == 4 and summary["proven_optimal"] == 4
    assert summary["worst_gap"] == max(r["gap"] for r in rows)
    assert (tmp_path / "mqo.json").exists() and (tmp_path / "mqo.png").stat().st_size > 0


@pytest.fixture(scope="module")
def tpcds_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TPC-DS at scale 0.01 for the module: the folder holding its catalog."""
    from tempura import tpcds

    return tpcds.generate(0.01, tmp_path_factory.mktemp("tpcds") / "sf0.01").parent


@pytest.fixture(scope="module")
def bench_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workdir for the module's runs: a table is analysed once, by the first run reading it."""
    return tmp_path_factory.mktemp("bench-work")


@pytest.fixture
def bench_spark(fast_spark: Any) -> Iterator[Any]:
    """The session for a benchmark run, given back as found: the benchmarks switch Spark's CBO on,
    set each contender's settings and read tables from the statistics database."""
    from benchmarks.cardinality import CBO_CONF
    from benchmarks.join_order import SPARK_CONF

    keys = set(CBO_CONF) | {k for conf in SPARK_CONF.values() for k in conf}
    before = {key: fast_spark.conf.get(key, None) for key in keys}
    database = fast_spark.catalog.currentDatabase()
    yield fast_spark
    fast_spark.catalog.setCurrentDatabase(database)
    for key, value in before.items():
        if value is None:
            fast_spark.conf.unset(key)
        else:
            fast_spark.conf.set(key, value)


@pytest.mark.spark
def test_cardinality_tpcds_counts_against_spark(bench_spark: Any, tpcds_data: Path, bench_workdir: Path,
                                                tmp_path: Path) -> None:
    from benchmarks import cardinality
    from tempura import tpcds

    report = cardinality.run(0.01, bench_workdir, tmp_path / "out", ["q03"], lambda _m: None, "tpcds", tpcds_data)
    assert not report["refused_queries"]
    assert report["suite"] == "TPC-DS" and report["skipped_nodes"] == 0
    nodes = [r for r in report["results"] if r["query"] == "q03"]
    assert nodes and report["nodes"] == len(nodes)
    root = next(r for r in nodes if r["node"] == 0)
    assert root["actual"] == len(bench_spark.sql(tpcds.query_text("q03")).collect())
    scans = {r["actual"] for r in nodes if r["operator"] == "Scan"}
    assert bench_spark.sql("SELECT COUNT(*) FROM store_sales").collect()[0][0] in scans
    assert (tmp_path / "out" / "cardinality-tpcds-sf0.01.json").exists()
    assert (tmp_path / "out" / "cardinality-tpcds-sf0.01.png").stat().st_size > 0


@pytest.mark.spark
def test_cardinality_skips_nodes_past_the_query_budget(bench_spark: Any, tpcds_data: Path, bench_workdir: Path) -> None:
    from benchmarks import cardinality
    from tempura import tpcds

    session = cardinality.prepare(0.01, bench_workdir, bench_spark, lambda _m: None, cardinality.SUITES["tpcds"], tpcds_data,
                                  ["date_dim", "item", "store_sales"])
    measured = cardinality.measure_query(bench_spark, session, "q03", tpcds.query_text("q03"), query_timeout=0.0)
    assert measured.results == [] and measured.skipped
    assert {s.reason for s in measured.skipped} == {"query time budget spent"}


@pytest.mark.spark
def test_join_order_tpcds_runs_every_contender_and_compares_results(bench_spark: Any, tpcds_data: Path,
                                                                    bench_workdir: Path, tmp_path: Path) -> None:
    from benchmarks import join_order
    from benchmarks.join_order import CONTENDERS

    # The written order crosses customer_demographics (1.9M rows at every scale) with date_dim:
    # cancelled at the timeout, which the report gives as a lower bound.
    report = join_order.run(0.01, bench_workdir, tmp_path / "out", ["q26"], 2, 8.0, lambda _m: None, "tpcds",
                            tpcds_data)
    (q26,) = report["queries"]
    assert report["suite"] == "TPC-DS" and q26["query"] == "q26"
    for contender in CONTENDERS:
        cancelled = q26["timed_out"][contender]
        assert q26["times"][contender] == [8.0] if cancelled else len(q26["times"][contender]) == 2, contender
    assert not q26["timed_out"]["tempura"] and not q26["timed_out"]["spark-cbo"]
    finished = {c for c in CONTENDERS if not q26["timed_out"][c]} - {"spark-rules"}  # spark-rules: the reference
    assert q26["equal_to_spark"] == {c: True for c in finished}
    # Dimensions first: the written order crosses customer_demographics with date_dim.
    assert q26["written_order_cross_product"] and q26["written_order_bad"]
    assert (tmp_path / "out" / "join-order-tpcds-sf0.01.json").exists()


@pytest.mark.spark
def test_join_order_does_not_run_a_written_cross_product_past_the_row_limit(bench_spark: Any, tpcds_data: Path,
                                                                          bench_workdir: Path) -> None:
    from benchmarks import cardinality, join_order

    session = cardinality.prepare(0.01, bench_workdir, bench_spark, lambda _m: None, cardinality.SUITES["tpcds"], tpcds_data,
                                  join_order.tables_read([join_order.query_text("q26", "tpcds")]))
    result = join_order.measure(bench_spark, session, "q26", 3, 30.0, join_order.query_text("q26", "tpcds"),
                                max_cross_rows=1e6)
    largest = max(join_order.cross_rows(p) for p in result["written_cross_product_rows"])
    assert largest > 1e6 and list(result["not_run"]) == ["spark-written"]
    assert f"{largest:.3g} estimated rows" in result["not_run"]["spark-written"]
    assert result["times"]["spark-written"] == [30.0] and result["timed_out"]["spark-written"]
    assert all(len(result["times"][c]) == 3 for c in ("spark-rules", "spark-cbo", "tempura")) and not result["failed"]
    assert result["equal_to_spark"] == {"spark-cbo": True, "tempura": True}
    report = join_order.build_report(0.01, 3, [result], "TPC-DS")
    assert report["not_run"] == {"q26": result["not_run"]} and report["timed_out"]["spark-written"] == ["q26"]
