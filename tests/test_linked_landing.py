"""Linked landings, on Spark, by the clock: an interval that is exactly the new files of an
append-only parquet source is landed by hard links to them, not by writing its rows again, and
every method's delivery is still ``spark.sql`` over its snapshot. A source file removed after its
interval landed changes nothing; a file holding a late row, or rows of a later interval, makes its
interval a written one; a run killed while linking is finished by the next."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks import faults
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

QUERY = ("SELECT category, SUM(price) AS revenue, COUNT(*) AS orders, MAX(price) AS top FROM sales WHERE price > 5 "
         "GROUP BY category")
SPEC = "\n".join([
    "name: linked", f"query: {QUERY}",
    "sources: {sales: {path: data/sales, format: parquet, arrival: {column: arrived_at}}}",
    'schedule: {start: "2026-11-22T00:00:00", every: 6h, points: 4, deliver: every}',
    "objective: {preset: deadline}", "late: reject", "cost: {stage: 0.01}", ""])
START = dt.datetime(2026, 11, 22)
PER_INTERVAL = 400


def rows(spark: Any, first: int, count: int, hours: float) -> Any:
    """``count`` orders from id ``first``, arriving evenly over 6 hours from ``START + hours``."""
    return spark.range(first, first + count).selectExpr(
        "concat('o', id) AS o_id", "concat('c', CAST(pmod(hash(id), 5) AS STRING)) AS category",
        "CAST(1 + pmod(hash(id, 2), 40) AS BIGINT) AS price",
        f"TIMESTAMP '{START}' + make_interval(0, 0, 0, 0, 0, 0, CAST({hours * 3600} + (id - {first} + 0.5) * "
        f"{6 * 3600 / count} AS INT)) AS arrived_at")


def put(frame: Any, folder: Path, name: str) -> Path:
    """``frame`` written as one parquet file ``folder/name.parquet``."""
    staging = folder.parent / f".staging-{name}"
    frame.coalesce(1).write.mode("overwrite").parquet(str(staging))
    part = next(staging.glob("*.parquet"))
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.parquet"
    shutil.move(str(part), target)
    shutil.rmtree(staging)
    return target


def arrive(spark: Any, data: Path, everything: Path, index: int) -> Path:
    """Interval ``index``'s orders: one new file in the source folder ``data``, and the same
    rows appended to ``everything`` (the reference's); returns the file."""
    frame = rows(spark, (index - 1) * PER_INTERVAL, PER_INTERVAL, 6 * (index - 1))
    frame.write.mode("append").parquet(str(everything))
    return put(frame, data, f"i{index}")


def reference(spark: Any, everything: Path, index: int) -> list[tuple[Any, ...]]:
    end = START + dt.timedelta(hours=6 * index)
    spark.read.parquet(str(everything)).where(
        f"arrived_at > TIMESTAMP '{START}' AND arrived_at <= TIMESTAMP '{end}'").createOrReplaceTempView("sales")
    return [tuple(r) for r in spark.sql(QUERY).collect()]


def run_point(spark: Any, folder: Path, index: int, method: str) -> Any:
    runner = Runner(load_spec(folder / "spec.yaml"), spark, folder / "work", method)
    done = runner.run_due(now=START + dt.timedelta(hours=6 * index))
    assert [r.index for r in done] == [index]
    return done[0]


def check(spark: Any, everything: Path, result: Any) -> None:
    got = [tuple(r) for r in spark.read.parquet(result.delivered).collect()]
    outcome = compare_results(reference(spark, everything, result.index), got)
    assert outcome.equal, f"t{result.index}: {outcome.reason}"


def job(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "spec.yaml").write_text(SPEC)
    return folder, folder / "data" / "sales"


@pytest.mark.parametrize("method", ["ivm", "streaming", "batch"])
def test_whole_new_files_are_linked_and_every_delivery_is_the_reference(method: str, spark: Any, tmp_path: Path) -> None:
    """Each interval's file arrives at its time point: the interval's folder holds a hard link to
    it (the same file), the manifest says so, the landing's pass read the new rows once, and
    the delivery at every point is the reference; a source file removed after it landed (its
    link keeps its bytes) changes no later delivery."""
    folder, data = job(tmp_path)
    everything = tmp_path / "everything"
    for index in range(1, 5):
        source = arrive(spark, data, everything, index)
        result = run_point(spark, folder, index, method)
        check(spark, everything, result)
        landed = result.manifest["landed"]["sales"]
        assert landed["linked"] is True and landed["rows"] == PER_INTERVAL, landed
        work = result.manifest["run"]["work"]
        # after t1 (the first statistics: one pass), the footers show the rows inside, and the
        # new rows' sketch is observed on the plan's read of them: no job of its own reads them
        assert work["landing"]["rows_in"] == (PER_INTERVAL if index == 1 else 0)
        assert work.get("statistics", {}).get("rows_in", 0) == 0
        if index < 4:
            assert_statistics(spark, folder, everything, index * PER_INTERVAL)
        else:  # the deadline: its sketch is left to the next run, which weighs less
            assert [f[0] for f in result.manifest["sketches_pending"]["sales"]["files"]] == [source.as_uri()]
            assert_statistics(spark, folder, None, 3 * PER_INTERVAL)
        folder_files = [p for p in Path(landed["path"].removeprefix("file://")).iterdir() if p.suffix == ".parquet"]
        assert len(folder_files) == 1 and os.path.samefile(folder_files[0], source)
        if index == 2:
            (data / "i1.parquet").unlink()  # upstream retention: the landed interval keeps its link
    after = run_next_cycle(spark, folder, method)  # no new file: it sketches t4's
    assert after.manifest["run"]["work"]["statistics"]["rows_in"] == PER_INTERVAL
    assert after.manifest["run"]["work"]["landing"]["rows_in"] == 0  # the files cycle 1 closed are not read again
    assert "sketches_pending" not in after.manifest
    assert_statistics(spark, folder, everything, 4 * PER_INTERVAL)


def assert_statistics(spark: Any, folder: Path, everything: Path | None, landed: int) -> None:
    """The job's statistics of ``sales`` count ``landed`` rows; with ``everything``, its counts
    and ranges (taken from footers and the arrival column read on the driver) and its distinct
    values and lengths are Spark's own aggregate over those rows."""
    stats = Runner(load_spec(folder / "spec.yaml"), spark, folder / "work", "ivm").stats_store.load("sales")
    assert stats is not None and stats.rows == landed and not stats.stale
    if everything is None:
        return
    whole = spark.read.parquet(str(everything)).selectExpr(
        "min(price) AS lo", "max(price) AS hi", "unix_micros(min(arrived_at)) / 1e6 AS early",
        "unix_micros(max(arrived_at)) / 1e6 AS late", "count(DISTINCT category) AS categories",
        "sum(octet_length(category)) / count(*) AS length", "count(*) AS n").collect()[0]
    assert whole["n"] == landed
    price, arrived, category = stats.columns["price"], stats.columns["arrived_at"], stats.columns["category"]
    assert (price.min, price.max, price.nulls) == (whole["lo"], whole["hi"], 0)
    assert (arrived.min, arrived.max, arrived.nulls) == (whole["early"], whole["late"], 0)
    assert category.ndv == whole["categories"] and category.avg_len == pytest.approx(float(whole["length"]))


NEXT_T1 = START + dt.timedelta(hours=30)  # the next cycle's first time point


def run_next_cycle(spark: Any, folder: Path, method: str) -> Any:
    """The next cycle's t1, with no new file."""
    runner = Runner(load_spec(folder / "spec.yaml"), spark, folder / "work", method)
    done = runner.run_due(now=NEXT_T1)
    assert [(r.cycle, r.index) for r in done] == [("20261123T000000", 1)]
    return done[0]


def test_a_point_whose_plan_reads_nothing_sketches_the_new_files_on_a_pass_of_their_own(spark: Any,
                                                                                      tmp_path: Path) -> None:
    """Delivered at the last point only, ``batch`` reads nothing at t2 and t3: their new files
    are linked, and sketched for the statistics by a pass of their own (purpose statistics); t4's,
    the deadline's, is left to the next cycle's t1. The statistics then count every row."""
    folder, data = job(tmp_path)
    (folder / "spec.yaml").write_text(SPEC.replace("deliver: every", "deliver: last"))
    everything = tmp_path / "everything"
    for index in range(1, 5):
        arrive(spark, data, everything, index)
        result = run_point(spark, folder, index, "batch")
        work = result.manifest["run"]["work"]
        assert result.manifest["landed"]["sales"]["linked"] is True
        assert work["landing"]["rows_in"] == (PER_INTERVAL if index == 1 else 0)
        assert work.get("statistics", {}).get("rows_in", 0) == (PER_INTERVAL if index in (2, 3) else 0), work
        assert_statistics(spark, folder, None, min(index, 3) * PER_INTERVAL)  # t4's is left to the next run
    check(spark, everything, result)
    run_next_cycle(spark, folder, "batch")
    assert_statistics(spark, folder, everything, 4 * PER_INTERVAL)


def test_a_new_cycle_reads_its_new_files_and_the_files_left_open_not_the_history(spark: Any, tmp_path: Path) -> None:
    """Interval 4's file also holds rows of the next cycle's first interval: it is left open at
    t4. The next cycle's t1 reads that file and its own new one, not the three files the first
    cycle closed, and delivers ``spark.sql`` over the rows arriving in its interval."""
    folder, data = job(tmp_path)
    everything = tmp_path / "everything"
    for index in range(1, 5):
        frame = rows(spark, (index - 1) * PER_INTERVAL, PER_INTERVAL, 6 * (index - 1))
        if index == 4:  # and 100 orders arriving from 00:00 to 06:00 of the next day
            frame = frame.unionByName(rows(spark, 50_000, 100, 24))
        frame.write.mode("append").parquet(str(everything))
        put(frame, data, f"i{index}")
        result = run_point(spark, folder, index, "ivm")
    assert result.manifest["open_files"]["sales"] == [(data / "i4.parquet").as_uri()]
    extra = rows(spark, 60_000, 50, 24)
    extra.write.mode("append").parquet(str(everything))
    put(extra, data, "next1")
    after = run_next_cycle(spark, folder, "ivm")
    landing = after.manifest["run"]["work"]["landing"]
    assert landing["rows_in"] == PER_INTERVAL + 100 + 50, landing  # i4 and next1 only
    assert after.manifest["landed"]["sales"]["rows"] == 150
    spark.read.parquet(str(everything)).where(
        f"arrived_at > TIMESTAMP '{START + dt.timedelta(hours=24)}' AND arrived_at <= "
        f"TIMESTAMP '{NEXT_T1}'").createOrReplaceTempView("sales")
    want = [tuple(r) for r in spark.sql(QUERY).collect()]
    got = [tuple(r) for r in spark.read.parquet(after.delivered).collect()]
    outcome = compare_results(want, got)
    assert outcome.equal, outcome.reason


def test_every_point_weighing_alike_sketches_the_last_interval_at_once(spark: Any, tmp_path: Path) -> None:
    """Under ``objective: total`` the next run weighs no less than the last point: t4's sketch is
    observed on its own read, and nothing is left pending."""
    folder, data = job(tmp_path)
    (folder / "spec.yaml").write_text(SPEC.replace("preset: deadline", "preset: total"))
    everything = tmp_path / "everything"
    for index in range(1, 5):
        arrive(spark, data, everything, index)
        result = run_point(spark, folder, index, "ivm")
        assert "sketches_pending" not in result.manifest
    check(spark, everything, result)
    assert_statistics(spark, folder, everything, 4 * PER_INTERVAL)


def test_a_run_killed_after_catching_up_a_sketch_counts_each_row_once(spark: Any, tmp_path: Path) -> None:
    """t4's sketch is left to the next cycle's t1. ``kill -9`` there once it has been merged (the
    plan made, nothing committed): the next run finds the files covered, sketches nothing
    again, and the statistics count every row once."""
    folder, data = job(tmp_path)
    (folder / "spec.yaml").write_text(SPEC.replace("deliver: every", "deliver: last")
                                      + f"spark: {json.dumps(faults.SHORT_LIVED_SPARK)}\n")
    everything = tmp_path / "everything"
    for index in range(1, 5):
        arrive(spark, data, everything, index)
        run_point(spark, folder, index, "ivm")
    assert_statistics(spark, folder, None, 3 * PER_INTERVAL)
    args = ["run", str(folder / "spec.yaml"), "--method", "ivm", "--workdir", str(folder / "work"),
            "--now", NEXT_T1.isoformat()]
    dead = faults.run_subprocess(args, "planned@t1")
    assert dead.code == -9, dead.last_lines()
    assert not list((folder / "work").rglob("20261123T000000/t001.json"))
    assert_statistics(spark, folder, everything, 4 * PER_INTERVAL)  # merged before the kill
    again = faults.run_in_process(args)
    assert again.code == 0 and not again.exception, again.last_lines()
    manifest = json.loads(next((folder / "work").rglob("20261123T000000/t001.json")).read_text())
    assert manifest["run"]["work"].get("statistics", {}).get("rows_in", 0) == 0
    assert_statistics(spark, folder, everything, 4 * PER_INTERVAL)


@pytest.mark.parametrize("zone", ["UTC", None])
def test_footers_of_files_another_writer_wrote(zone: str | None, spark: Any, tmp_path: Path) -> None:
    """Files pyarrow wrote, their arrivals as instants (``zone`` UTC): read on the driver, the
    footers and arrival column show each interval's rows inside, and no Spark job lands them.
    As local times (no zone), Spark reads the column as a timestamp without a time zone: the
    landing's own pass tells the rows' intervals. Either way every delivery is the reference."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, data = job(tmp_path)
    data.mkdir(parents=True)
    everything = tmp_path / "everything"
    for index in range(1, 5):
        frame = rows(spark, (index - 1) * PER_INTERVAL, PER_INTERVAL, 6 * (index - 1))
        frame.write.mode("append").parquet(str(everything))
        table = pa.Table.from_pandas(frame.toPandas(), preserve_index=False)
        arrived = table.column("arrived_at").cast(pa.timestamp("us", tz=zone))
        table = table.set_column(table.schema.get_field_index("arrived_at"), "arrived_at", arrived)
        pq.write_table(table, data / f"i{index}.parquet")
        result = run_point(spark, folder, index, "ivm")
        check(spark, everything, result)
        work = result.manifest["run"]["work"]
        assert result.manifest["landed"]["sales"]["linked"] is True
        assert work["landing"]["rows_in"] == (PER_INTERVAL if index == 1 or zone is None else 0), work


def test_a_file_with_a_late_row_is_written_and_the_late_row_set_aside(spark: Any, tmp_path: Path) -> None:
    """Interval 2's file holds a row arriving in interval 1 (late, ``late: reject``): interval 2
    is written, not linked, and its late row is set aside; intervals 1, 3 and 4 are linked."""
    folder, data = job(tmp_path)
    everything = tmp_path / "everything"
    for index in range(1, 5):
        frame = rows(spark, (index - 1) * PER_INTERVAL, PER_INTERVAL, 6 * (index - 1))
        frame.write.mode("append").parquet(str(everything))
        if index == 2:  # one row arriving at 01:00, in interval 1, found only now
            frame = frame.unionByName(rows(spark, 10_000, 1, 1))
        put(frame, data, f"i{index}")
        result = run_point(spark, folder, index, "ivm")
        check(spark, everything, result)
        landed = result.manifest["landed"]["sales"]
        assert landed.get("linked", False) is (index != 2), (index, landed)
        assert landed["rejected"] == (1 if index == 2 else 0) and landed["rows"] == PER_INTERVAL


def test_a_file_holding_rows_of_a_later_interval_is_written_and_read_again(spark: Any, tmp_path: Path) -> None:
    """Interval 1's file holds interval 2's rows too: interval 1 is written (its file stays open),
    and so is interval 2, which reads the open file with its own; interval 3's new file alone is
    linked."""
    folder, data = job(tmp_path)
    everything = tmp_path / "everything"
    both = rows(spark, 0, 2 * PER_INTERVAL, 0).selectExpr(
        "o_id", "category", "price", f"TIMESTAMP '{START}' + (arrived_at - TIMESTAMP '{START}') * 2 AS arrived_at")
    both.write.mode("append").parquet(str(everything))
    put(both, data, "i1")
    linked = []
    for index in range(1, 5):
        if index >= 3:
            frame = rows(spark, index * PER_INTERVAL, PER_INTERVAL, 6 * (index - 1))
            frame.write.mode("append").parquet(str(everything))
            put(frame, data, f"i{index}")
        result = run_point(spark, folder, index, "ivm")
        check(spark, everything, result)
        linked.append(result.manifest["landed"]["sales"].get("linked", False))
    assert linked == [False, False, True, True]


def killed_at_t2_and_run_again(spark: Any, tmp_path: Path, phase: str) -> Path:
    """t1 run, then ``kill -9`` at ``phase`` of t2 (in a subprocess), then t2 run again: checks
    that the second run delivers the reference at t2 from a linked interval; returns the job's
    folder."""
    folder, data = job(tmp_path)
    (folder / "spec.yaml").write_text(SPEC + f"spark: {json.dumps(faults.SHORT_LIVED_SPARK)}\n")
    everything = tmp_path / "everything"
    args = ["run", str(folder / "spec.yaml"), "--method", "ivm", "--workdir", str(folder / "work")]
    for index in (1, 2):
        arrive(spark, data, everything, index)
        if index == 1:
            first = faults.run_in_process([*args, "--now", (START + dt.timedelta(hours=6)).isoformat()])
            assert first.code == 0, first.last_lines()
    at_t2 = [*args, "--now", (START + dt.timedelta(hours=12)).isoformat()]
    dead = faults.run_subprocess(at_t2, f"{phase}@t2")
    assert dead.code == -9, dead.last_lines()
    again = faults.run_in_process(at_t2)
    assert again.code == 0 and not again.exception, again.last_lines()
    manifest = json.loads(next((folder / "work").rglob("t002.json")).read_text())
    assert manifest["landed"]["sales"]["linked"] is True
    got = [tuple(r) for r in spark.read.parquet(manifest["delivered"]).collect()]
    outcome = compare_results(reference(spark, everything, 2), got)
    assert outcome.equal, outcome.reason
    return folder


def test_a_run_killed_while_linking_is_finished_by_the_next(spark: Any, tmp_path: Path) -> None:
    """``kill -9`` with interval 2's links made under the pending folder, not yet in place: the
    next run lands interval 2 again and delivers the reference at t2."""
    killed_at_t2_and_run_again(spark, tmp_path, "landing")


@pytest.mark.parametrize("phase", ["delivered", "manifest"])
def test_a_run_killed_around_the_sketchs_merge_counts_each_row_once(phase: str, spark: Any, tmp_path: Path) -> None:
    """A linked interval's sketch, observed on the fragment's read, is merged into the
    statistics after the fragments and before the commit. ``kill -9`` before the merge (the
    delivery in place) or after it (the manifest not yet written): the next run lands and
    runs t2 again, and the statistics count each of its rows once, not never nor twice."""
    folder = killed_at_t2_and_run_again(spark, tmp_path, phase)
    stats = Runner(load_spec(folder / "spec.yaml"), spark, folder / "work", "ivm").stats_store.load("sales")
    assert stats is not None and stats.rows == 2 * PER_INTERVAL and not stats.stale
