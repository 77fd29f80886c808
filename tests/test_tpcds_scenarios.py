"""The TPC-DS scenarios of ``scenarios/`` on Spark: their data arrives as their specs declare
(sales by their ticket's date key, returns within 180 days of their ticket, on the calendar the
schedules cut), and a simulated cycle delivers, at every time point under ``auto``, what
``spark.sql`` returns over that time point's snapshot (``reference``).

The cycles run here are the two whose shape only TPC-DS gives the suite: a window over an
aggregate of the sales, and sales joined with returns that arrive up to 180 days after them.
All four cycles took 7.6 minutes at scale 0.01 on two cores shared with other work; the star
join's and the ROLLUP's are checked by ``tempura bench incremental`` (every delivery against
``spark.sql``), a star join with an aggregate as a standing query in
``tests/test_tpcds_standing.py`` (q42) and ROLLUP's standing plans in
``tests/test_grouping_sets.py``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from scenarios import copy_scenario, prepared_scenario, tpcds as shared
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.simulation import simulate
from tempura.scheduler.spec import Spec
from tempura.standing import StandingQuery
from tempura.tvr.layout import BUCKET, interval_slices, slices_after

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SCALE = 0.01  # TPC-DS's scale factor: 28,810 store sales
SCENARIOS = ("tpcds_store_star", "tpcds_window", "tpcds_rollup", "tpcds_sales_returns")
CHECKED = ("tpcds_window", "tpcds_sales_returns")  # run here; see the module's docstring

@pytest.fixture(scope="module")
def folder(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario copies, each with its data at :data:`SCALE` (TPC-DS generated once, in the
    shared cache beside them)."""
    root = tmp_path_factory.mktemp("tpcds_scenarios")
    for name in SCENARIOS:
        if name in CHECKED:
            prepared_scenario(spark, name, root, SCALE)
        else:
            copy_scenario(name, root)
    return root


def delivering_every_point(spec_path: Path) -> Spec:
    """The spec at ``spec_path`` delivering at every time point."""
    text = spec_path.read_text().replace("deliver: last", "deliver: every")
    target = spec_path.with_name("every-query.yaml")
    target.write_text(text)
    return load_spec(target)


def test_the_scenarios_exist_and_share_one_schedule_over_the_sales_calendar(folder: Path) -> None:
    from scenarios import names

    assert set(SCENARIOS) <= set(names())
    for name in SCENARIOS:
        spec = load_spec(folder / name / "spec.yaml")
        assert spec.time_points().values == tuple(shared.START + i * shared.EVERY for i in range(1, 5)), name
    assert shared.START + 4 * shared.EVERY == shared.END >= shared.LAST_DATE_SK >= shared.FIRST_DATE_SK > shared.START


def test_the_data_arrives_as_the_specs_declare(spark: Any, folder: Path) -> None:
    """Sales carry their ticket's date key (also where ``dsdgen`` left the line's own NULL), so
    a ticket lands once; the calendar is the declared one; every return lands in the cycle, at
    most 180 days after its ticket, and holds a ticket of the sales."""
    data = folder / "tpcds_sales_returns" / "data"
    sales = spark.read.parquet(str(data / "store_sales"))
    sales.createOrReplaceTempView("sales")
    spark.read.parquet(str(data / "store_returns")).createOrReplaceTempView("returns")
    first, last, undated, moved = spark.sql(
        "SELECT min(ss_sold_date_sk), max(ss_sold_date_sk), count_if(ss_sold_date_sk IS NULL), "
        "count_if(ss_sold_date_sk <> ss_ticket_date_sk) FROM sales").first()
    assert (first, last) == (shared.FIRST_DATE_SK, shared.LAST_DATE_SK)
    assert undated > 0 and moved == 0  # undated lines exist, and dated ones keep their date
    raw = spark.read.parquet(str(shared.cache_folder(data.parent, SCALE) / "store_sales.parquet")).count()
    assert sales.count() == raw and sales.where("ss_ticket_date_sk IS NULL").count() == 0
    assert spark.sql("SELECT ss_ticket_number FROM sales GROUP BY ss_ticket_number "
                     "HAVING count(DISTINCT ss_ticket_date_sk) > 1").count() == 0
    tickets = "SELECT DISTINCT ss_ticket_number, ss_ticket_date_sk FROM sales"
    outside = spark.sql(
        f"SELECT count(*) FROM returns LEFT JOIN ({tickets}) t ON sr_ticket_number = ss_ticket_number "
        f"WHERE ss_ticket_date_sk IS NULL OR sr_returned_date_sk IS NULL "
        f"OR sr_returned_date_sk NOT BETWEEN ss_ticket_date_sk AND ss_ticket_date_sk + {shared.RETURN_LAG} "
        f"OR sr_returned_date_sk > {shared.END}").first()[0]
    assert outside == 0
    assert spark.sql("SELECT count(*) FROM returns").first()[0] > 1000


def test_every_scenario_delivers_the_reference_at_every_time_point(spark: Any, folder: Path, tmp_path: Path) -> None:
    """Each checked scenario's cycle under ``auto``, delivering at every time point; each delivery
    equals ``spark.sql`` over its snapshot, and the last one has rows (else the check would prove
    little)."""
    wrong = []
    for name in CHECKED:
        spec_path = folder / name / "spec.yaml"
        spec = delivering_every_point(spec_path)
        k = spec.time_points().k
        run = simulate(spark, spec, "auto", tmp_path)
        assert [p.index for p in run.points] == list(range(1, k + 1)), name
        assert all(p.delivered for p in run.points), name
        wrong += [f"{name} t{p.index}: {p.detail}" for p in run.points if not p.correct]
        assert reference(spark, spec, spec.cycle(0), k).count() > 0, name  # type: ignore[arg-type]
    assert not wrong, wrong


def test_late_returns_read_only_the_time_slices_their_tickets_reach(spark: Any, folder: Path, tmp_path: Path) -> None:
    """With stages and file opens priced at nothing (so that this scale plans incrementally, as
    scale 1 does), the sales of interval 3 land in time slices by their ticket's date: at
    ``t4``, the returns of ``(t3, t4]`` (at most 180 days after their tickets) are matched with
    the slices of interval 3 after ``t3 - 180`` alone. The delivery is ``spark.sql``'s, the
    landing's layout is in the manifest, and the bounded read took only the slices the plan
    named, and fewer bytes than the interval."""
    job = tmp_path / "job"
    shutil.copytree(folder / "tpcds_sales_returns", job)
    spec_path = job / "spec.yaml"
    spec_path.write_text(spec_path.read_text() + "cost: {file_open: 0, stage: 0}\n")
    run = StandingQuery(spec_path, tmp_path / "work", spark=spark).simulate("auto", check=True)
    checked = [p for p in run.points if p.delivered]
    assert [p.index for p in checked] == [4] and checked[0].correct, [p.detail for p in checked]
    plan = run.results[0].plan
    assert plan is not None
    layout = plan.layouts["store_sales"][3]
    assert layout.sliced and layout.column == "ss_ticket_date_sk" and layout.buckets > 1
    assert run.results[2].manifest["landed"]["store_sales"]["layout"] == layout.to_json()
    spec = load_spec(spec_path)
    values = spec.time_points().values
    planned = slices_after(interval_slices(values, None, 3, layout.buckets) or [], values[2] - 180)  # type: ignore[operator]
    bounded = [(f, p) for f in run.results[3].manifest["fragments"] for p in f.get("pruned_reads", []) if p.get("sliced")]
    assert bounded, "no read of interval 3 bounded in time"
    for fragment, read in bounded:
        assert read["read"] == "store_sales__ss_2_3", read
        assert read["buckets"] == layout.buckets and 0 < read["buckets_read"] <= len(planned) < layout.buckets, read
        assert 0 < read["bytes_read"] < read["bytes"], read
        assert "pruned_buckets_read" not in fragment  # no probe's keys: nothing for their calibration


def test_a_run_killed_with_a_sliced_interval_in_place_is_finished_by_the_next(spark: Any, folder: Path,
                                                                              tmp_path: Path) -> None:
    """``tempura run --now 2452186`` (date keys have no clock: the run names the time point it runs
    up to) killed (``kill -9``, a subprocess) once the sales of interval 3 are in place
    in their time slices but before ``t3`` commits; run again, it finishes the cycle: every time
    point is committed, each delivery is ``spark.sql``'s, interval 3 is sliced as the plan says,
    and ``t4`` reads only some of its slices."""
    from benchmarks import faults

    job = tmp_path / "job"
    shutil.copytree(folder / "tpcds_sales_returns", job)
    spec_path = job / "spec.yaml"
    spec_path.write_text(spec_path.read_text() + "cost: {file_open: 0, stage: 0}\n")
    query = StandingQuery(spec_path, tmp_path / ".stats", spark=spark)
    query.analyze()
    stats = query.job_folder()
    assert isinstance(stats, Path)
    trial = faults.new_trial(faults.Scenario("tpcds_sales_returns", job, stats / "stats"), "killed-sliced",
                             faults.SHORT_LIVED_SPARK)
    dead = faults.run_subprocess(trial.run_args("auto", 3), "landed@t3")  # the first source: store_sales
    assert dead.code == -9, f"not killed at landed@t3: {dead.last_lines()}"
    store, label = trial.store(), trial.cycle().label
    assert store.manifest_path(label, 2).exists() and not store.manifest_path(label, 3).exists()
    assert any(p.name.startswith(BUCKET) for p in store.landing_interval(label, "store_sales", 3).iterdir())  # sliced
    clock = faults.run_in_process(["run", str(trial.spec_path), "--workdir", str(trial.workdir)])
    assert not clock.one_line_error() and "--now 2451272" in clock.errors[0], clock.last_lines()  # date keys: no clock
    again = faults.run_in_process(trial.run_args("auto"))
    assert again.code == 0 and not again.exception, again.last_lines()
    verdict = faults.check(spark, trial)
    assert verdict.ok and verdict.checked == [1, 2, 3, 4], verdict.describe()
    layout = store.manifest(label, 3)["landed"]["store_sales"]["layout"]  # type: ignore[index]
    assert layout["sliced"] and layout["buckets"] > 1, layout
    last = store.manifest(label, 4)
    assert last is not None
    reads = [p for f in last["fragments"] for p in f.get("pruned_reads", []) if p.get("sliced")]
    assert reads and all(0 < p["buckets_read"] < p["buckets"] for p in reads), reads
