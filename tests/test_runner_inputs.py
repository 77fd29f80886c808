"""The runner on awkward inputs, on Spark: a periodic range query delivers ``spark.sql`` over its
window ``(t - length, t]`` at every time point (the leaving rows landed as deletions, states kept
across windows); late rows are set aside under ``late: reject`` and taken into the next interval
under ``late: next``; a file whose schema drifted stops its time point with a one-line error and
commits nothing until it is removed; an interval in which nothing arrives commits and delivers;
a missing source folder and an unimportable ``on_run`` hook are one-line errors; the hook gets
one summary per committed time point; ``tempura run`` reports a bad input in one line."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tempura.cli import main
from tempura.errors import TempuraError
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.runner import PointResult, RunError, Runner

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SALES = "category string, price int, arrived_at string"
QUERY = "SELECT category, SUM(price) AS total, COUNT(*) AS n FROM sales GROUP BY category"
HOOK_MODULE = "tempura_inputs_hook_sink"

Rows = list[tuple[Any, ...]]


def add_file(spark: Any, folder: Path, name: str, rows: Rows, schema: str = SALES) -> Path:
    """Write ``rows`` as the single parquet file ``folder/name`` (``arrived_at`` given as text is
    cast to a timestamp in the session's time zone)."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(rows, schema)
    if "arrived_at string" in schema:
        frame = frame.withColumn("arrived_at", F.col("arrived_at").cast("timestamp"))
    staging = folder.parent / f".staging-{name}"
    frame.coalesce(1).write.mode("overwrite").parquet(str(staging))
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    next(staging.glob("part-*.parquet")).replace(target)
    shutil.rmtree(staging)
    return target


def spec_text(schedule: str, extra: str = "") -> str:
    return (f"name: inputs\nquery: |\n  {QUERY}\nsources:\n  sales:\n    path: data/sales\n"
            f"    arrival: {{column: arrived_at}}\nschedule:\n{schedule}{extra}")


def reference(spark: Any, files: list[tuple[Path, str, str]], query: str = QUERY) -> Rows:
    """``spark.sql(query)`` over the rows of each file arriving in its ``(low, high]``."""
    frames = [spark.read.parquet(str(path)).where(f"arrived_at > TIMESTAMP '{low}' AND arrived_at <= TIMESTAMP '{high}'")
              for path, low, high in files]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    union.createOrReplaceTempView("sales")
    return [tuple(r) for r in spark.sql(query).collect()]


def delivered(spark: Any, result: PointResult) -> Rows:
    assert result.delivered is not None, f"t{result.index} delivered nothing"
    return [tuple(r) for r in spark.read.parquet(result.delivered).collect()]


def assert_equal(expected: Rows, got: Rows, what: str) -> None:
    outcome = compare_results(expected, got)
    assert outcome.equal, f"{what}: {outcome.reason} (expected {sorted(expected)}, got {sorted(got)})"


def one_line_error(error: BaseException) -> str:
    text = str(error)
    assert isinstance(error, TempuraError), f"{type(error).__name__}: {text}"
    assert text and "\n" not in text, text
    return text


def manifests(workdir: Path) -> list[str]:
    return sorted(p.name for p in workdir.rglob("t[0-9][0-9][0-9].json"))


# ---------------------------------------------------------------------------------------------
# A periodic range query: windows of two days sliding by one.

RANGE_START = dt.datetime(2026, 1, 1)
LENGTH = dt.timedelta(days=2)
RANGE_ROWS: Rows = [
    ("x", 1, "2025-12-30 12:00:00"),  # before every window
    ("a", 2, "2025-12-31 00:00:00"),  # on t1 - length: outside (the window is open on the left)
    ("c", 4, "2025-12-31 12:00:00"),  # in the first window only: its group leaves at t2
    ("a", 8, "2026-01-01 00:00:00"),
    ("b", 16, "2026-01-01 18:00:00"),
    ("b", 16, "2026-01-01 18:00:00"),  # a duplicate row
    ("a", 32, "2026-01-02 00:00:00"),  # on t1: inside
    ("b", 64, "2026-01-02 06:00:00"),
    ("a", 128, "2026-01-03 00:00:00"),
    # nothing arrives in (t2, t3]: that interval only deletes
    ("d", 256, "2026-01-04 12:00:00"),  # a group appearing at t4
    ("b", 512, "2026-01-05 00:00:00"),
    ("a", 1024, "2026-01-05 06:00:00"),  # after the last time point
]
RANGE_SCHEDULE = '  start: "2026-01-01T00:00:00"\n  points: 4\n  range: {length: 2d, slide: 1d}\n  deliver: every\n'


# (insertions, deletions) landed per time point: the rows arriving in (t_{i-1}, t_i] (at t1, the
# whole first window) and the rows arriving in (t_{i-1} - length, t_i - length].
RANGE_LANDED = [(5, 0), (2, 2), (0, 3), (2, 2)]


@dataclass
class RangeJob:
    data: Path
    runs: dict[str, list[PointResult]] = field(default_factory=dict)
    expected: dict[int, Rows] = field(default_factory=dict)  # spark.sql over each window


@pytest.fixture(scope="module")
def range_job(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> RangeJob:
    folder = tmp_path_factory.mktemp("range")
    job = RangeJob(add_file(spark, folder / "data" / "sales", "all.parquet", RANGE_ROWS))
    (folder / "spec.yaml").write_text(spec_text(RANGE_SCHEDULE))
    spec = load_spec(folder / "spec.yaml")
    job.runs["ivm"] = Runner(spec, spark, folder / "work", "ivm", simulate=True).run_cycle()
    for i in range(1, 5):
        t = RANGE_START + i * dt.timedelta(days=1)
        job.expected[i] = reference(spark, [(job.data, str(t - LENGTH), str(t))])
    return job


@pytest.mark.parametrize("method", ["ivm"])  # auto: tests/test_scenarios.py (weekly_revenue)
def test_range_query_delivers_its_window_at_every_time_point(method: str, spark: Any, range_job: RangeJob) -> None:
    results = range_job.runs[method]
    assert [r.index for r in results] == [1, 2, 3, 4]
    assert [r.time for r in results] == [RANGE_START + i * dt.timedelta(days=1) for i in range(1, 5)]
    assert [sorted(c for c, *_ in range_job.expected[i]) for i in range(1, 5)] == [
        ["a", "b", "c"], ["a", "b"], ["a", "b"], ["b", "d"]]
    for r in results:
        assert_equal(range_job.expected[r.index], delivered(spark, r), f"{method} t{r.index}")


@pytest.mark.parametrize("method", ["ivm"])
def test_range_query_lands_arrivals_and_leaving_rows_as_deletions(method: str, range_job: RangeJob) -> None:
    landed = [r.manifest["landed"]["sales"] for r in range_job.runs[method]]
    assert [(n["rows"] - n["deletions"], n["deletions"]) for n in landed] == RANGE_LANDED, landed


def test_a_range_query_is_planned_as_a_source_that_deletes(spark: Any, range_job: RangeJob) -> None:
    """The window's leaving rows are deletions, so every planning of the spec (``tempura plan``
    as well as the runner) prices its snapshots as consolidated and merges no MIN or MAX."""
    from tempura.scheduler.planning import arrival_model

    folder = range_job.data.parents[2]  # <folder>/data/sales/all.parquet
    ranged, _ = arrival_model(load_spec(folder / "spec.yaml"), spark)
    assert not ranged.insert_only("sales")
    (folder / "plain.yaml").write_text(spec_text(RANGE_SCHEDULE.replace("  range: {length: 2d, slide: 1d}\n", "  every: 1d\n")))
    plain, _ = arrival_model(load_spec(folder / "plain.yaml"), spark)
    assert plain.insert_only("sales")


def test_a_change_feed_without_deletions_so_far_is_not_insert_only(spark: Any, tmp_path: Path) -> None:
    """A source declared as change data may deliver deletions later even if its files hold none
    yet: the arrival model leaves their share unknown, so no plan merges a MIN or MAX over them."""
    from tempura.scheduler.planning import arrival_model

    add_file(spark, tmp_path / "data" / "sales", "all.parquet", [(c, p, t, "I") for c, p, t in RANGE_ROWS],
             SALES + ", _op string")
    (tmp_path / "spec.yaml").write_text(spec_text(RANGE_SCHEDULE.replace("  range: {length: 2d, slide: 1d}\n", "  every: 1d\n"))
                                        .replace("    arrival: {column: arrived_at}\n",
                                                 "    arrival: {column: arrived_at}\n    changes: {op_column: _op}\n"))
    model, _ = arrival_model(load_spec(tmp_path / "spec.yaml"), spark)
    # by t1 (everything landed up to then) 7 rows, then 2, none and 2; one arrives after t4
    assert model.source("sales").fractions == pytest.approx((7 / 11, 2 / 11, 0.0, 2 / 11))
    assert not model.insert_only("sales")


def test_range_query_under_ivm_reads_states_kept_across_windows(range_job: RangeJob) -> None:
    results = range_job.runs["ivm"]
    reused = []
    for before, r in zip(results, results[1:]):
        assert r.plan is not None
        kept = {s["id"] for s in before.manifest["states"]}
        reused += [(r.index, f.id, state) for f in r.plan.at(r.index) for state in f.states if state in kept]
    assert reused, "no fragment after t1 reads a state saved at an earlier time point"


EXTREMES = "SELECT category, MIN(price) AS low, MAX(price) AS high FROM sales GROUP BY category"


@pytest.mark.parametrize("method", ["ivm", "auto"])
def test_a_window_that_deletes_nothing_at_first_still_deletes_after_replanning(method: str, spark: Any, range_job: RangeJob,
                                                                              tmp_path: Path) -> None:
    """``t1`` lands no deletion (the first window is all arrivals), so what re-planning measured
    says nothing about the leaving rows to come: MIN and MAX must not be merged over them (the
    category ``a`` loses its minimum at ``t2``)."""
    folder = range_job.data.parents[2]
    shutil.copytree(folder / "data", tmp_path / "data")
    (tmp_path / "spec.yaml").write_text(spec_text(RANGE_SCHEDULE).replace(QUERY, EXTREMES))
    results = Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work", method, simulate=True).run_cycle()
    assert [r.manifest["landed"]["sales"]["deletions"] for r in results] == [d for _, d in RANGE_LANDED]
    assert all(r.replanned for r in results[:-1])
    for r in results:
        t = RANGE_START + r.index * dt.timedelta(days=1)
        expected = reference(spark, [(range_job.data, str(t - LENGTH), str(t))], EXTREMES)
        assert_equal(expected, delivered(spark, r), f"{method} t{r.index}")


# ---------------------------------------------------------------------------------------------
# Late rows, schema drift, empty intervals and the on_run hook, run by the clock (run_due).

ORIGIN = "2026-03-01 00:00:00"
T1, T2, T3 = (dt.datetime(2026, 3, 1, h) for h in (6, 12, 18))
CLOCK_SCHEDULE = '  start: "2026-03-01T00:00:00"\n  every: 6h\n  points: 3\n  deliver: every\n'
EARLIER: Rows = [("a", 1000, "2026-02-28 23:00:00")]  # the previous cycle's: never in this one
LATE_FILE: Rows = [
    ("a", 1, "2026-03-01 05:00:00"),  # late: arrived before t1, but its file appears at t2
    ("b", 2, "2026-03-01 06:00:00"),  # late: arrived at t1 exactly
    ("c", 4, "2026-02-28 22:00:00"),  # before the cycle's origin: neither late nor on time
    ("a", 8, "2026-03-01 07:00:00"),
    ("b", 16, "2026-03-01 12:00:00"),
]
LATE_ROWS = {("a", 1), ("b", 2)}
HOOK_CODE = """\
import json
import pathlib

SINK = pathlib.Path(__file__).with_name("summaries.jsonl")


def record(summary):
    with SINK.open("a") as out:
        out.write(json.dumps(summary, default=str) + "\\n")
"""


@dataclass
class ClockJob:
    folder: Path
    earlier: Path
    late_file: Path
    results: dict[int, PointResult] = field(default_factory=dict)
    errors: list[tuple[Path, BaseException, list[str]]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def work(self) -> Path:
        return self.folder / "work"


def clock_job(spark: Any, folder: Path, late: str, extra: str = "") -> ClockJob:
    (folder / "spec.yaml").write_text(spec_text(CLOCK_SCHEDULE, f"late: {late}\n{extra}"))
    sales = folder / "data" / "sales"
    earlier = add_file(spark, sales, "earlier.parquet", EARLIER)
    return ClockJob(folder, earlier, sales / "late.parquet")


def run_due(spark: Any, job: ClockJob, method: str, now: dt.datetime) -> None:
    """What ``tempura run`` from cron does: a fresh runner runs the time points due by ``now``."""
    for r in Runner(load_spec(job.folder / "spec.yaml"), spark, job.work, method).run_due(now):
        job.results[r.index] = r


@pytest.fixture(scope="module")
def rejecting(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> ClockJob:
    job = clock_job(spark, tmp_path_factory.mktemp("reject"), "reject")
    run_due(spark, job, "auto", T1 + dt.timedelta(minutes=5))
    add_file(spark, job.earlier.parent, job.late_file.name, LATE_FILE)
    run_due(spark, job, "auto", T2 + dt.timedelta(minutes=5))
    return job


@pytest.fixture(scope="module")
def taking_next(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> ClockJob:
    """``late: next`` with an ``on_run`` hook; before t2 runs, a drifted file (an added column,
    then a retyped one) stops it twice."""
    folder = tmp_path_factory.mktemp("next")
    (folder / "hooks").mkdir()
    (folder / "hooks" / f"{HOOK_MODULE}.py").write_text(HOOK_CODE)
    job = clock_job(spark, folder, "next", f"hooks: {{on_run: '{HOOK_MODULE}:record'}}\n")
    sales = job.earlier.parent
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder / "hooks"))
        patch.delitem(sys.modules, HOOK_MODULE, raising=False)
        run_due(spark, job, "ivm", T1 + dt.timedelta(minutes=5))
        add_file(spark, sales, job.late_file.name, LATE_FILE)
        drifted: list[tuple[str, Rows, str]] = [
            ("added.parquet", [("a", 64, "2026-03-01 08:00:00", "x")], SALES + ", channel string"),
            ("retyped.parquet", [("a", 64, "2026-03-01 08:00:00")], "category string, price bigint, arrived_at string"),
        ]
        for name, rows, schema in drifted:
            bad = add_file(spark, sales, name, rows, schema)
            with pytest.raises(Exception) as caught:
                run_due(spark, job, "ivm", T2 + dt.timedelta(minutes=5))
            job.errors.append((bad, caught.value, manifests(job.work)))
            bad.unlink()
        run_due(spark, job, "ivm", T2 + dt.timedelta(minutes=5))
        run_due(spark, job, "ivm", T3 + dt.timedelta(minutes=5))
        sink = folder / "hooks" / "summaries.jsonl"
        job.summaries = [json.loads(line) for line in sink.read_text().splitlines()] if sink.exists() else []
        sys.modules.pop(HOOK_MODULE, None)
    return job


def test_late_rows_are_rejected_and_set_aside(spark: Any, rejecting: ClockJob) -> None:
    t2 = rejecting.results[2]
    on_time = reference(spark, [(rejecting.earlier, ORIGIN, str(T2)), (rejecting.late_file, str(T1), str(T2))])
    assert_equal(on_time, delivered(spark, t2), "t2 under late: reject")
    assert t2.manifest["run"]["rejected_rows"] == 2 and t2.manifest["run"]["late_rows"] == 0
    assert t2.manifest["landed"]["sales"]["rejected"] == 2
    assert t2.manifest["landed"]["sales"]["rows"] == 2
    folder = rejecting.work / "jobs" / "inputs" / "cycles" / t2.cycle / "rejected" / "sales" / "i=002"
    set_aside = {(r["category"], r["price"]) for r in spark.read.parquet(str(folder)).collect()}
    assert set_aside == LATE_ROWS
    assert spark.read.parquet(str(folder)).count() == 2


def test_late_rows_are_taken_into_the_next_interval(spark: Any, taking_next: ClockJob) -> None:
    t2 = taking_next.results[2]
    everything = reference(spark, [(taking_next.earlier, ORIGIN, str(T2)), (taking_next.late_file, ORIGIN, str(T2))])
    assert_equal(everything, delivered(spark, t2), "t2 under late: next")
    assert t2.manifest["run"]["late_rows"] == 2 and t2.manifest["run"]["rejected_rows"] == 0
    assert t2.manifest["landed"]["sales"]["rows"] == 4  # two late rows and two on time
    assert not (taking_next.work / "jobs" / "inputs" / "cycles" / t2.cycle / "rejected").exists()


@pytest.mark.parametrize("job_name", ["rejecting", "taking_next"])
def test_nothing_arrived_at_t1_delivers_an_empty_result(job_name: str, spark: Any, request: pytest.FixtureRequest) -> None:
    job: ClockJob = request.getfixturevalue(job_name)
    t1 = job.results[1]
    assert reference(spark, [(job.earlier, ORIGIN, str(T1))]) == []
    assert delivered(spark, t1) == []
    assert t1.manifest["run"]["rows_landed"] == 0
    assert job.folder.joinpath("work", "jobs", "inputs", "cycles", t1.cycle, "t001.json").exists()


def test_an_empty_interval_later_in_the_cycle_delivers_the_result_so_far(spark: Any, taking_next: ClockJob) -> None:
    t3 = taking_next.results[3]
    assert t3.manifest["run"]["rows_landed"] == 0 and t3.manifest["landed"]["sales"]["new_files"] == 0
    expected = reference(spark, [(taking_next.earlier, ORIGIN, str(T3)), (taking_next.late_file, ORIGIN, str(T3))])
    assert len(expected) == 2
    assert_equal(expected, delivered(spark, t3), "t3, an empty interval")


def test_schema_drift_stops_the_time_point_until_the_file_is_removed(spark: Any, taking_next: ClockJob) -> None:
    assert len(taking_next.errors) == 2
    for bad, error, committed in taking_next.errors:
        text = one_line_error(error)
        assert "schema drift" in text and bad.name in text, text
        assert committed == ["t001.json"], f"{bad.name}: {committed}"
    assert "adds channel" in str(taking_next.errors[0][1])
    assert "price is bigint, not int" in str(taking_next.errors[1][1])
    t2 = taking_next.results[2]  # run once the files were removed
    everything = reference(spark, [(taking_next.earlier, ORIGIN, str(T2)), (taking_next.late_file, ORIGIN, str(T2))])
    assert_equal(everything, delivered(spark, t2), "t2 after the drifted files were removed")
    seen = taking_next.results[3].manifest["seen_files"]["sales"]
    assert sorted(Path(f).name for f in seen) == ["earlier.parquet", "late.parquet"]


def test_the_hook_gets_one_summary_per_committed_time_point(taking_next: ClockJob) -> None:
    summaries = taking_next.summaries
    assert [s["time_point"] for s in summaries] == [1, 2, 3]
    keys = {"spec", "cycle", "time_point", "time", "method", "rows_landed", "late_rows", "rejected_rows", "delivered",
            "replanned", "plan_changed", "reason", "fragments", "wall_seconds", "cpu_seconds"}
    for s in summaries:
        assert keys <= s.keys(), keys - s.keys()
        assert s["spec"] == "inputs" and s["method"] == "ivm"
        assert s["delivered"] == taking_next.results[s["time_point"]].delivered
    assert [s["rows_landed"] for s in summaries] == [0, 4, 0]
    assert [s["late_rows"] for s in summaries] == [0, 2, 0]
    assert [s["replanned"] for s in summaries] == [True, True, False]  # the last time point has nothing left to plan
    assert [s["time"] for s in summaries] == [str(T1), str(T2), str(T3)]


# ---------------------------------------------------------------------------------------------
# Inputs that stop a job before anything runs.


def test_a_missing_source_folder_is_a_one_line_error_and_nothing_is_committed(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(spec_text(CLOCK_SCHEDULE))
    spec = load_spec(tmp_path / "spec.yaml")
    with pytest.raises(RunError) as caught:
        Runner(spec, spark, tmp_path / "work", "auto", simulate=True).run_cycle()
    text = one_line_error(caught.value)
    assert "sources.sales.path" in text and "does not exist" in text, text
    assert manifests(tmp_path / "work") == []
    assert not list((tmp_path / "work").rglob("landing"))


def test_a_key_column_the_source_lacks_is_a_one_line_error_and_nothing_is_committed(spark: Any, tmp_path: Path) -> None:
    add_file(spark, tmp_path / "data" / "sales", "earlier.parquet", EARLIER)
    text = spec_text(CLOCK_SCHEDULE).replace("    arrival: {column: arrived_at}\n",
                                             "    arrival: {column: arrived_at}\n    key: sale_id\n")
    (tmp_path / "spec.yaml").write_text(text)
    with pytest.raises(RunError) as caught:
        Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work", "auto", simulate=True).run_cycle()
    message = one_line_error(caught.value)
    assert "sources.sales.key: column 'sale_id' is not one of the source's columns (arrived_at, category, price)" in message
    assert manifests(tmp_path / "work") == []


def test_an_unimportable_hook_is_a_one_line_error(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add_file(spark, tmp_path / "data" / "sales", "earlier.parquet", EARLIER)
    (tmp_path / "spec.yaml").write_text(spec_text(CLOCK_SCHEDULE, "hooks: {on_run: 'no_such_hook_module:record'}\n"))
    with pytest.raises(RunError) as caught:
        Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work")
    text = one_line_error(caught.value)
    assert "hooks.on_run" in text and "cannot import no_such_hook_module" in text, text
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "tempura_inputs_hook_empty.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "hooks"))
    monkeypatch.delitem(sys.modules, "tempura_inputs_hook_empty", raising=False)
    (tmp_path / "spec.yaml").write_text(spec_text(CLOCK_SCHEDULE, "hooks: {on_run: 'tempura_inputs_hook_empty:record'}\n"))
    with pytest.raises(RunError) as caught:
        Runner(load_spec(tmp_path / "spec.yaml"), spark, tmp_path / "work")
    text = one_line_error(caught.value)
    assert "hooks.on_run" in text and "has no function record" in text, text


def test_tempura_run_reports_a_bad_input_in_one_line(spark: Any, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text(CLOCK_SCHEDULE))
    result = CliRunner().invoke(main, ["run", str(spec), "--simulate", "--workdir", str(tmp_path / "work")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "sources.sales.path" in lines[0] and "Traceback" not in result.output
    assert manifests(tmp_path / "work") == []


def test_a_spark_error_is_not_logged_with_the_jvm_stack_trace(spark: Any, capfd: pytest.CaptureFixture[str]) -> None:
    """PySpark would log each Spark error it converts, with the JVM's stack trace, as JSON on
    standard error; tempura's session has those loggers off (errors are reported in one line)."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):
        spark.sql("SELECT missing_column FROM VALUES (1) AS v(a)").collect()
    err = capfd.readouterr().err
    assert "QueryContextLogger" not in err and "\tat org.apache.spark" not in err, err
