"""Runs by the clock on Spark: each time point's files land only at that point and a new runner
(as a new ``tempura run --now t_i`` would) runs it. Every delivery equals ``spark.sql`` over its
snapshot; the statistics are kept from the landings (never collected whole again), each landing
reads only the new files, the intervals to come are forecast (never empty), every Spark job is
counted under its purpose, and where the forecast is right the plans by the clock are the plans
a simulation with the whole cycle's data in view chooses."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.clock import split_by_interval
from tempura.runtime import compare_results
from tempura.runtime.metrics import PURPOSES, UNTAGGED
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner
from tempura.stats.store import StatsStore

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SPEC = """
name: even
query: |
  SELECT category, SUM(price) AS revenue, COUNT(*) AS orders, MAX(price) AS top
  FROM sales WHERE price > 5 GROUP BY category
sources:
  sales: {path: data/sales, format: parquet, arrival: {column: arrived_at}}
schedule: {start: "2026-11-22T00:00:00", every: 6h, points: 4, deliver: every}
objective: {preset: deadline}
late: reject
# a stage's fixed cost scaled down with the data (20,000 rows): the view is maintained, as it is
# on more data with the default cost
cost: {stage: 0.01}
"""
SALES = 20000  # 5,000 in each 6-hour interval, evenly spaced: the rate forecast is right
START = dt.datetime(2026, 11, 22)


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole cycle's data, and its rows split per interval under ``staged/``."""
    folder = tmp_path_factory.mktemp("even")
    (folder / "spec.yaml").write_text(SPEC)
    sales = spark.range(SALES).selectExpr(
        "concat('o', id) AS o_id", "concat('c', CAST(pmod(hash(id), 7) AS STRING)) AS category",
        "CAST(1 + pmod(hash(id, 2), 90) AS BIGINT) AS price",
        "TIMESTAMP '2026-11-22 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, CAST((id + 0.5) * 4.32 AS INT)) AS arrived_at")
    sales.write.parquet(str(folder / "data" / "sales"))
    split_by_interval(spark, load_spec(folder / "spec.yaml"), folder / "staged")
    return folder


def reference(spark: Any, source: Path, index: int) -> list[tuple[Any, ...]]:
    end = START + dt.timedelta(hours=6 * index)
    for name in ("sales",):
        spark.read.parquet(str(source / "data" / name)).where(
            f"arrived_at > TIMESTAMP '{START}' AND arrived_at <= TIMESTAMP '{end}'").createOrReplaceTempView(name)
    return [tuple(r) for r in spark.sql(load_spec(source / "spec.yaml").sql).collect()]


def by_clock(spark: Any, source: Path, folder: Path, method: str = "auto") -> list[Any]:
    """The cycle run by the clock: interval i's files copied in, then a new runner at t_i."""
    shutil.copyfile(source / "spec.yaml", folder / "spec.yaml")
    results = []
    for index in range(1, 5):
        for name in ("sales",):
            target = folder / "data" / name
            target.mkdir(parents=True, exist_ok=True)
            for part in (source / "staged" / name / f"i={index:03d}").glob("*.parquet"):
                shutil.copyfile(part, target / f"i{index}-{part.name}")
        runner = Runner(load_spec(folder / "spec.yaml"), spark, folder / "work", method)
        done = runner.run_due(now=START + dt.timedelta(hours=6 * index))
        assert [r.index for r in done] == [index]
        results.append((runner, done[0]))
    return results


@pytest.fixture(scope="module")
def clock_run(spark: Any, source: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    folder = tmp_path_factory.mktemp("clock")
    return folder, by_clock(spark, source, folder)


def test_every_delivery_by_the_clock_is_spark_sql_over_its_snapshot(spark: Any, source: Path,
                                                                  clock_run: tuple[Path, list[Any]]) -> None:
    _, results = clock_run
    for _, result in results:
        got = [tuple(r) for r in spark.read.parquet(result.delivered).collect()]
        outcome = compare_results(reference(spark, source, result.index), got)
        assert outcome.equal, f"t{result.index}: {outcome.reason}"


def test_statistics_are_kept_from_the_landings_not_collected_again(clock_run: tuple[Path, list[Any]]) -> None:
    folder, results = clock_run
    work = [r.manifest["run"]["work"] for _, r in results]
    for point in work:  # the first collection is t1's landing pass; then each landing's sketch is merged
        assert point.get("statistics", {}).get("rows_in", 0) == 0
    first = json.loads((folder / "work" / "jobs" / "even" / "cycles" / results[0][1].cycle / "plans" /
                        "t001.plan.json").read_text())
    assert any("first statistics of sales, from its landing" in note for note in first["notes"])
    store = StatsStore(folder / "work" / "jobs" / "even")
    sales = store.load("sales")
    assert sales is not None and sales.source == "sketch" and sales.sketch is not None
    # t4, the deadline, weighs more than the next cycle's t1: its interval's sketch is left to
    # that run (tests/test_linked_landing.py runs it), and every other file is covered
    pending = results[-1][1].manifest["sketches_pending"]["sales"]["files"]
    assert len(pending) == 1 and "/i4-" in pending[0][0]
    assert sales.rows == SALES - SALES // 4 and not sales.stale
    # the columns the query compares rows on (its grouping, its filter) are sketched; the arrival
    # column, which it does not read, has its range only
    assert sales.columns["category"].ndv == 7 and sales.columns["price"].ndv == 90
    assert sales.columns["price"].min == 1 and sales.columns["price"].max == 90
    assert sales.columns["arrived_at"].ndv is None and sales.columns["arrived_at"].histogram is None
    assert sales.columns["arrived_at"].min is not None and sales.columns["arrived_at"].max is not None


def test_each_landing_reads_only_the_new_files(clock_run: tuple[Path, list[Any]]) -> None:
    _, results = clock_run
    for _, result in results:
        landed = sum(entry["rows"] for entry in result.manifest["landed"].values())
        # t1's pass is the first collection of statistics; later, the new files' footers show
        # their rows inside their interval, and no Spark job reads them to land them
        assert result.manifest["run"]["work"]["landing"]["rows_in"] == (landed if result.index == 1 else 0), result.index
        assert result.manifest["open_files"] == {"sales": []}


def test_the_intervals_to_come_are_forecast_and_every_job_has_a_purpose(clock_run: tuple[Path, list[Any]]) -> None:
    _, results = clock_run
    for _, result in results:
        run = result.manifest["run"]
        if result.index == 1:  # planned before anything was known of the data but its files' size
            assert run["forecast_rows"]["sales"] > 0
        else:  # the rate of the rows landed so far
            assert run["forecast_rows"]["sales"] == pytest.approx(SALES // 4, abs=1), result.index
        assert set(run["work"]) <= set(PURPOSES) | {UNTAGGED}
        assert "untagged" not in run["work"], run["work"]
        assert run["planning_seconds"] > 0
    first_plan = results[0][0].first_plans[(results[0][1].cycle, 1)]
    assert any("forecast" in note for note in first_plan.notes)
    assert results[-1][1].manifest["run"]["work"]["fragment"]["cpu_seconds"] > 0


def ran(folder: Path, label: str, index: int) -> list[tuple[Any, ...]]:
    """What the plan a time point ran does there: its fragments' outputs, kept states and SQL."""
    plan = json.loads((folder / "cycles" / label / "plans" / f"t{index:03d}.plan.json").read_text())
    return sorted((f["output"], f["keeps"] is not None, f["sql"]) for f in plan["fragments"] if f["time"] == index)


def test_plans_by_the_clock_are_the_simulated_plans_when_the_forecast_is_right(
        spark: Any, source: Path, clock_run: tuple[Path, list[Any]], tmp_path: Path) -> None:
    spec = load_spec(source / "spec.yaml")
    simulated = Runner(spec, spark, tmp_path / "sim", "auto", simulate=True)
    simulated.run_cycle()
    folder, results = clock_run
    label = results[0][1].cycle
    kept = [f for f in json.loads((folder / "work" / "jobs" / "even" / "cycles" / label / "plans" /
                                   "t002.plan.json").read_text())["fragments"] if f["keeps"]]
    assert kept, "the plan by the clock keeps no state: nothing incremental to compare"
    for _, result in results[1:]:
        index = result.index
        assert ran(folder / "work" / "jobs" / "even", label, index) == ran(simulated.store.root, label, index), index


def test_history_shows_each_runs_overhead_beside_its_plans_work(clock_run: tuple[Path, list[Any]]) -> None:
    from click.testing import CliRunner

    from tempura.cli import main

    folder, results = clock_run
    shown = CliRunner().invoke(main, ["history", str(folder / "spec.yaml"), "--workdir", str(folder / "work")],
                               env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert "overhead CPU (s)" in shown.output and "by purpose" in shown.output
    assert "model est. (s)" in shown.output and "measured CPU (s)" in shown.output
    assert shown.output.count("calibration: one second of the model's estimate came to ") == 1, shown.output
    assert "statistics" in shown.output and "landing" in shown.output and "fragment" in shown.output
    assert shown.output.count(f"sales {SALES // 4} ({SALES // 4})") == 3  # landed (forecast) from t2 on
    data = CliRunner().invoke(main, ["history", str(folder / "spec.yaml"), "--workdir", str(folder / "work"),
                                     "--format", "json"])
    runs = json.loads(data.output)["runs"]
    assert [r["work"]["landing"]["rows_in"] for r in runs] == [SALES // 4, 0, 0, 0]
    assert runs[-1]["forecast_rows"] == {"sales": SALES // 4} and runs[-1]["landed_rows"] == {"sales": SALES // 4}


def test_a_time_point_run_by_the_clock_in_its_own_process_is_measured_whole(source: Path, tmp_path: Path) -> None:
    """``benchmarks.clock``: interval 1's files arrive, a new process runs ``tempura run --now
    t1`` with Spark's event log on, and every job of that process is counted by its purpose."""
    from benchmarks.clock import ClockJob

    job = ClockJob.create(source / "spec.yaml", source / "staged", tmp_path / "job")
    assert job.arrive(1) >= 1
    figures = job.run_point(1, "auto")
    assert figures.returncode == 0, figures.output
    assert set(figures.by_purpose) <= set(PURPOSES) | {UNTAGGED}
    landing = figures.by_purpose["landing"]
    assert landing["records_read"] == SALES // 4 and landing["jobs"] >= 1
    assert figures.records_read >= SALES // 4 and figures.cpu_seconds > 0 and figures.jobs >= 1
    # Python and the JVM, executors included
    assert figures.process_cpu_seconds > figures.cpu_seconds, (figures.process_cpu_seconds, figures.cpu_seconds)
    assert figures.reported_cpu_seconds is not None and figures.reported_cpu_seconds > figures.cpu_seconds
    assert figures.wall_seconds >= figures.app_wall_seconds > 0, (figures.wall_seconds, figures.app_wall_seconds)


def test_a_run_reuses_the_planning_the_run_before_made_of_it(clock_run: tuple[Path, list[Any]]) -> None:
    """After committing t_i, the run re-plans t_{i+1} on; the run of t_{i+1}, a new runner, plans
    it again from the same manifest, statistics and forecast, and takes those plans."""
    folder, results = clock_run
    for _, result in results[1:]:
        plannings = result.manifest["run"]["plannings"]
        assert plannings["reused"] >= 1, (result.index, plannings)
    assert results[0][1].manifest["run"]["plannings"]["reused"] == 0
    assert list((folder / "work" / "jobs" / "even" / "plans").glob("*.plans"))
