"""Scenarios of ``scenarios/`` on Spark: the promised ones exist, and a simulated cycle of a
selection delivers at every time point, under ``auto``, what ``spark.sql`` returns over that time
point's snapshot of the sources (``reference``). The reference itself is checked on hand-made
change data and a range window.

The selection covers what the others are made of — change data (``stock_cdc``), a range window
(``weekly_revenue``) and an outer join under a nested aggregate (``tpch_q13``); a three-way join
with a top-k (``tpch_q03``) is checked at every time point, under ``auto`` and ``batch``, by the
incremental benchmark's test below; ``sales_returns`` runs under every method in
``tests/test_runner.py``, and ``IN`` and ``EXISTS`` subqueries as standing queries in
``tests/test_tvr_semijoin.py`` and ``tests/test_tpcds_standing.py``. Every scenario under every method is run, and every delivery
checked, by ``tempura bench incremental`` and ``tempura demo``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from scenarios import names, prepared_scenario
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.simulation import simulate

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SCALE = 0.01  # TPC-H's scale factor; the others' rows scale alike (sales_returns: 10,000 sales)


@pytest.fixture(scope="module")
def folder(spark: Any, tpch_catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the scenario copies, with TPC-H at scale 0.01 already in their shared cache."""
    root = tmp_path_factory.mktemp("scenarios")
    cache = root / ".tpch" / f"sf{SCALE:g}"
    cache.parent.mkdir(parents=True)
    cache.symlink_to(tpch_catalog.parent)
    return root


def test_the_scenarios_are_the_ones_the_project_promises() -> None:
    found = set(names())
    assert {"sales_returns", "weekly_revenue", "stock_cdc"} <= found
    assert {f"tpch_q{q:02d}" for q in (1, 3, 5, 10, 12, 13, 18)} <= found


SELECTION = ("stock_cdc", "weekly_revenue", "tpch_q13")


@pytest.mark.parametrize("name", SELECTION)
def test_every_time_point_equals_the_reference(name: str, spark: Any, folder: Path, tmp_path: Path) -> None:
    spec_path = prepared_scenario(spark, name, folder, SCALE)
    text = spec_path.read_text()
    spec_path.write_text(text.replace("deliver: last", "deliver: every"))
    spec = load_spec(spec_path)
    k = spec.time_points().k
    run = simulate(spark, spec, "auto", tmp_path)
    assert [p.index for p in run.points] == list(range(1, k + 1))
    assert all(p.delivered for p in run.points)
    wrong = [f"t{p.index}: {p.detail}" for p in run.points if not p.correct]
    assert not wrong, f"{name}: {wrong}"
    last = reference(spark, spec, spec.cycle(0), k).count()  # type: ignore[arg-type]
    assert last > 0, "the scenario's last result is empty: the check would prove little"


def test_reads_expected_to_be_empty_are_planned_as_empty_and_planned_again_when_rows_land(
        spark: Any, folder: Path, tmp_path: Path) -> None:
    """TPC-H Q3 under ``ivm``. Its customers are expected at t1 only (``expected: [1, 0, 0, 0]``),
    so no later fragment reads a customer delta. Orders are declared to land nothing at t3 while
    the data has some: the landing at t3 contradicts the plan, t3 is planned again with what
    landed before anything runs, and every delivery equals the reference."""
    from tempura.runtime import compare_results
    from tempura.scheduler.runner import Runner

    spec_path = prepared_scenario(spark, "tpch_q03", folder, SCALE)
    text = spec_path.read_text().replace("deliver: last", "deliver: every")
    spec_path.write_text(text.replace("    key: o_orderkey", "    key: o_orderkey\n    expected: [0.3, 0.3, 0, 0.4]"))
    spec = load_spec(spec_path)
    try:
        results = Runner(spec, spark, tmp_path, "ivm", simulate=True).run_cycle()
    finally:
        spec_path.write_text(text)
    later = [s.view for r in results[1:] if r.plan is not None for f in r.plan.at(r.index) for s in f.sources]
    assert later and not any(v.startswith("customer__sd") for v in later), later
    again = {r.index: [n for n in r.plan.notes if n.startswith("planned again after landing")]
             for r in results if r.plan is not None}
    assert again[3] and "orders landed" in again[3][0] and "where none were expected" in again[3][0], again
    assert not again[1] and not again[2], again
    for r in results:
        assert r.delivered is not None
        expected = [tuple(x) for x in reference(spark, spec, spec.cycle(0), r.index).collect()]  # type: ignore[arg-type]
        got = [tuple(x) for x in spark.read.parquet(r.delivered).collect()]
        outcome = compare_results(expected, got)
        assert outcome.equal, f"t{r.index}: {outcome.reason}"


def test_a_line_item_landing_after_its_order_breaks_the_key_and_the_time_point_is_planned_again(
        spark: Any, folder: Path, tmp_path: Path) -> None:
    """TPC-H Q3 under ``integrity: enforced``, with some line items of orders landing at t1 moved
    to t2: the check of t2's landing finds one, the key's domain is dropped for the rest of the
    cycle, t2 is planned again without it, and every delivery equals the reference. Under
    ``trusted`` nothing is checked."""
    import shutil

    from pyspark.sql import functions as F

    from tempura.runtime import compare_results
    from tempura.scheduler.runner import Runner

    source = prepared_scenario(spark, "tpch_q03", folder, SCALE).parent
    job = tmp_path / "q03"
    shutil.copytree(source, job, ignore=shutil.ignore_patterns("lineitem"))
    spec_path = job / "spec.yaml"
    spec_path.write_text(spec_path.read_text().replace("deliver: last", "deliver: every")
                         .replace("integrity: trusted", "integrity: enforced"))
    spec = load_spec(spec_path)
    t1 = spec.time_points().values[0]
    items = spark.read.parquet(str(source / "data" / "lineitem"))
    moved = (F.col("l_orderdate") <= F.lit(t1)) & (F.col("l_orderkey") % 7 == 0)
    items.withColumn("l_orderdate", F.when(moved, F.date_add("l_orderdate", 400)).otherwise(F.col("l_orderdate"))) \
        .write.parquet(str(job / "data" / "lineitem"))
    results = Runner(spec, spark, tmp_path / "work", "ivm", simulate=True).run_cycle()
    checked = [r.manifest["run"]["key_check_cpu_seconds"] > 0 for r in results]
    assert checked == [True, True, False, False]  # once broken, the key is not checked again
    assert results[0].manifest["broken_keys"] == {}
    broken = results[1].manifest["broken_keys"]
    assert list(broken) == ["orders.o_orderkey"] and "without the orders row" in broken["orders.o_orderkey"], broken
    notes = results[1].plan.notes if results[1].plan is not None else []
    assert any("key orders.o_orderkey broken" in n for n in notes), notes
    assert all(r.manifest["broken_keys"] == broken for r in results[2:])
    for r in results:
        assert r.delivered is not None
        expected = [tuple(x) for x in reference(spark, spec, spec.cycle(0), r.index).collect()]  # type: ignore[arg-type]
        outcome = compare_results(expected, [tuple(x) for x in spark.read.parquet(r.delivered).collect()])
        assert outcome.equal, f"t{r.index}: {outcome.reason}"
    spec_path.write_text(spec_path.read_text().replace("integrity: enforced", "integrity: trusted"))
    trusted = Runner(load_spec(spec_path), spark, tmp_path / "trusted", "ivm", simulate=True).run_cycle(until=2)
    assert [r.manifest["run"]["key_check_cpu_seconds"] for r in trusted] == [0.0, 0.0]


def test_q13_at_its_deadline_merges_the_intervals_orders_into_kept_counts_per_customer(
        spark: Any, folder: Path, tmp_path: Path) -> None:
    """TPC-H Q13 counts each customer's orders through an outer join. With the orders counted per
    customer first (``tvr-aggregate-below-outer-join``), and customers declared to land at the
    first time point only, auto keeps each customer's count and at the deadline updates it from
    the interval's orders (``tvr-outer-join-count-update``): customers are not read again.
    Without the update it keeps the per-customer order counts, merges the interval's orders into
    them and joins the customers again; without the rewrite no incremental plan beats
    recomputing, which reads every order. Planned without the fixed cost per stage (``--cost
    stage=0``): at this scale (1,500 customers) it makes recomputing cheaper than merging and
    joining again (the update wins either way); the spec's own constants are the default
    otherwise."""
    import json

    from click.testing import CliRunner

    from tempura.cli import main

    spec_path = prepared_scenario(spark, "tpch_q13", folder, SCALE)

    def planned(*options: str) -> dict[str, Any]:
        result = CliRunner().invoke(main, ["plan", str(spec_path), "--format", "json", "--workdir", str(tmp_path / "w"),
                                           "--cost", "stage=0", *options])
        assert result.exit_code == 0, result.output
        found: dict[str, Any] = json.loads(result.output)
        return found

    def last_reads(*options: str) -> set[str]:
        return {s for f in planned(*options)["fragments"] if f["time"] == 4 for s in f["inputs"]["sources"]}

    assert last_reads() == {"orders__sd_3_4"}
    assert last_reads("--no-rule", "tvr-outer-join-count-update") == {"customer__ss_0_4", "orders__sd_3_4"}
    assert planned("--cost", "stage=2e9")["cost_constants"]["stage"] == 2e9  # the later --cost wins
    assert last_reads("--no-rule", "tvr-aggregate-below-outer-join") == {"customer__ss_0_4", "orders__ss_0_4"}


def test_the_reference_applies_deletions_and_windows(spark: Any, tmp_path: Path) -> None:
    day = dt.datetime(2026, 11, 22)
    rows = [  # (id, qty, changed_at, _op)
        (1, 5, day + dt.timedelta(hours=1), "I"),
        (2, 7, day + dt.timedelta(hours=2), "I"),
        (1, 5, day + dt.timedelta(hours=7), "D"),  # deletes the first row in interval 2
        (3, 4, day + dt.timedelta(hours=8), "I"),
    ]
    spark.createDataFrame(rows, "id INT, qty INT, changed_at TIMESTAMP, _op STRING").write.parquet(str(tmp_path / "data" / "t"))
    (tmp_path / "spec.yaml").write_text(
        "name: t\nquery: SELECT COUNT(*) AS n, SUM(qty) AS q FROM t\n"
        "sources:\n  t:\n    path: data/t\n    arrival: {column: changed_at}\n    changes: {op_column: _op}\n"
        "schedule:\n  start: '2026-11-22T00:00:00'\n  every: 6h\n  points: 2\n")
    spec = load_spec(tmp_path / "spec.yaml")
    cycle = spec.cycle(0)
    assert cycle is not None
    assert [tuple(r) for r in reference(spark, spec, cycle, 1).collect()] == [(2, 12)]
    assert [tuple(r) for r in reference(spark, spec, cycle, 2).collect()] == [(2, 11)]
    (tmp_path / "spec.yaml").write_text(
        "name: w\nquery: SELECT COUNT(*) AS n, SUM(qty) AS q FROM t\n"
        "sources:\n  t:\n    path: data/t\n    arrival: {column: changed_at}\n"
        "schedule:\n  start: '2026-11-22T00:00:00'\n  points: 2\n  range: {length: 6h, slide: 6h}\n")
    spec = load_spec(tmp_path / "spec.yaml")
    cycle = spec.cycle(0)
    assert cycle is not None
    assert [tuple(r) for r in reference(spark, spec, cycle, 2).collect()] == [(2, 9)]  # (6h, 12h]: hours 7 and 8


def test_the_incremental_benchmark_varies_who_runs_first_and_who_follows_whom() -> None:
    from benchmarks.incremental import round_order

    names = ["batch", "ivm", "spark-streaming", "auto"]
    rounds = [round_order(names, rep) for rep in range(4)]
    assert all(sorted(r) == sorted(names) for r in rounds)
    assert len({r[0] for r in rounds}) == 4  # each contender runs first once
    follows = {(r[i], r[i + 1]) for r in rounds for i in range(3)}
    assert ("ivm", "batch") in follows and ("batch", "ivm") in follows  # not always the same neighbour
    assert round_order([], 1) == []
    for n in range(1, 6):  # never a run right after its own, across the rounds either
        contenders = names[:n] + ["floor"] * (n == 5)
        runs = [name for rep in range(7) for name in round_order(contenders, rep)]
        assert all(sorted(round_order(contenders, rep)) == sorted(contenders) for rep in range(7))
        assert n == 1 or all(a != b for a, b in zip(runs, runs[1:])), (n, runs)
    assert round_order(["batch", "auto"], 1) == ["batch", "auto"]  # two strictly alternate


def test_the_incremental_benchmark_warms_up_alternates_and_compares_plans(spark: Any, folder: Path, tmp_path: Path) -> None:
    """``tempura bench incremental`` on one scenario, delivering at every time point: a warm-up
    cycle per contender, then a measured one, each delivery checked; planning is deterministic
    (the warm-up and the measured run of a contender start from one plan), and ``auto`` running
    recomputation is recognised as the very plan ``batch`` runs, at every time point and at the
    last."""
    from benchmarks.incremental import run_scenario, verdicts

    spec_path = prepared_scenario(spark, "tpch_q03", folder, SCALE)
    spec_path.write_text(spec_path.read_text().replace("deliver: last", "deliver: every"))
    spec = load_spec(spec_path)
    logged: list[str] = []
    found = run_scenario(spark, spec, tmp_path, 1, ("batch", "auto"), logged.append)
    assert [line.split(" warm-up ")[1].split(":")[0] for line in logged if " warm-up " in line] == ["batch", "auto"]
    k = spec.time_points().k
    for contender in found.values():
        assert len(contender.attempts) == 1 and contender.correct
        assert all(len(a.cpu) == k for a in contender.attempts)
        assert len(contender.plans) == 1 and len(contender.last_plans) == 1, (contender.plans, contender.last_plans)
    assert found["batch"].median("cpu")[-1] > 0
    verdict = verdicts(found, spec.weights())
    assert verdict["comparable"] and verdict["best_other"] == "batch"
    batch = found["batch"].attempts[0]  # recompute selects every interval landed so far: more at each point
    assert len(batch.read_bytes) == k and batch.read_bytes == sorted(batch.read_bytes)
    assert batch.read_bytes[-1] > batch.bound_bytes[-1] > 0 and "last_point_bytes" in verdict
    if found["auto"].uses == "batch":
        assert verdict["same_plan_as"] == ["batch"] and verdict["same_last_point_as"] == ["batch"]
    else:
        assert verdict["same_plan_as"] == [] and verdict["same_last_point_as"] == []
