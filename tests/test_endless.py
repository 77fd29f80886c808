"""Endless schedules on Spark: totals to date, refreshed every 12 hours, whose cycles carry one
another on. Every method delivers, at every time point of several cycles, what ``spark.sql``
gives over all the rows since the schedule's start (a change feed whose deletions reach rows of
earlier cycles, and a join with a dimension that keeps its history from before the start). A
state lives on from one cycle to the next, so a refresh after a restart reads its interval and
the state, not the history; the history's folders are compacted when the cost model says so; a
cycle whose predecessor did not finish lands the history from the sources; ``check`` finds a
lost history folder; and the spec refuses ``endless`` where it cannot hold."""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from tempura.runtime import compare_results
from tempura.runtime.store import JobStore
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import PointResult, Runner
from tempura.scheduler.spec import Spec, SpecError
from tempura.standing import METHODS

START = dt.datetime(2026, 11, 20)
SCHEDULE = f"schedule:\n  start: '{START.isoformat()}'\n  every: 12h\n  points: 2\n  deliver: every\n  endless: true\n"
TOTALS = "SELECT category, SUM(price) AS total, COUNT(*) AS n FROM sales GROUP BY category"
CLICKS = ("SELECT u.country, COUNT(*) AS clicks, SUM(c.cost) AS cost FROM clicks c JOIN users u ON c.user_id = u.id "
          "GROUP BY u.country")


def feed(spark: Any, folder: Path) -> None:
    """A change feed of sales over the day before the start and the first three days: 1,200
    insertions, and 150 deletions, each of a sale inserted earlier (often days before, in an
    earlier cycle; some before the start, which never counted)."""
    rng = random.Random(11)
    rows = []
    for _ in range(1200):
        when = START - dt.timedelta(days=1) + dt.timedelta(minutes=rng.randrange(4 * 24 * 60))
        rows.append((rng.choice("abcd"), rng.randrange(1, 90), when, "I"))
    for sale in rng.sample([r for r in rows if r[2] > START], 150):
        later = sale[2] + dt.timedelta(minutes=rng.randrange(1, 2 * 24 * 60))
        if later < START + dt.timedelta(days=3):
            rows.append((sale[0], sale[1], later, "D"))
    spark.createDataFrame(rows, "category STRING, price INT, changed_at TIMESTAMP, _op STRING").coalesce(1) \
        .write.mode("overwrite").parquet(str(folder / "data" / "sales"))


def clicks(spark: Any, folder: Path) -> None:
    """Users registering from ten days before the start; clicks, each after its user registered."""
    rng = random.Random(5)
    users = [(i, rng.choice(["de", "fr", "jp"]), START - dt.timedelta(days=10) + dt.timedelta(hours=rng.randrange(12 * 24)))
             for i in range(150)]
    events = []
    for _ in range(1500):
        user = rng.choice(users)
        events.append((user[0], rng.randrange(1, 30), user[2] + dt.timedelta(minutes=rng.randrange(1, 4 * 24 * 60))))
    spark.createDataFrame(users, "id INT, country STRING, registered_at TIMESTAMP").coalesce(1) \
        .write.mode("overwrite").parquet(str(folder / "data" / "users"))
    spark.createDataFrame(events, "user_id INT, cost INT, clicked_at TIMESTAMP").coalesce(1) \
        .write.mode("overwrite").parquet(str(folder / "data" / "clicks"))


def totals_spec(folder: Path, extra: str = "") -> Spec:
    (folder / "spec.yaml").write_text(
        f"name: totals\nquery: {TOTALS}\nsources:\n  sales:\n    path: data/sales\n    arrival: {{column: changed_at}}\n"
        f"    changes: {{op_column: _op}}\n{SCHEDULE}{extra}")
    return load_spec(folder / "spec.yaml")


@pytest.fixture(scope="module")
def sales(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("endless_sales")
    feed(fast_spark, folder)
    return folder


@pytest.fixture(scope="module")
def dimension(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("endless_clicks")
    clicks(fast_spark, folder)
    (folder / "spec.yaml").write_text(
        f"name: clicks\nquery: |\n  {CLICKS}\nsources:\n  users:\n    path: data/users\n    arrival: {{column: registered_at}}\n"
        f"    history: keep\n  clicks:\n    path: data/clicks\n    arrival: {{column: clicked_at}}\n{SCHEDULE}")
    return folder


def job(data: Path, tmp_path: Path) -> Path:
    """A copy of a data folder to run a job in."""
    shutil.copytree(data, tmp_path / "job")
    return tmp_path / "job"


def run_cycles(spark: Any, spec: Spec, workdir: Path, method: str, cycles: range) -> list[tuple[int, PointResult]]:
    """Run the cycles, each by a new runner (a restart), checking every delivery against the
    reference; returns each cycle's results."""
    out = []
    for n in cycles:
        cycle = spec.cycle(n)
        assert cycle is not None
        for result in Runner(spec, spark, workdir, method, simulate=True).run_cycle(cycle):
            out.append((n, result))
            if result.delivered is None:
                continue
            expected = [tuple(r) for r in reference(spark, spec, cycle, result.index).collect()]
            outcome = compare_results(expected, [tuple(r) for r in spark.read.parquet(result.delivered).collect()])
            assert outcome.equal, f"{method} cycle {n} point {result.index}: {outcome.reason}"
    return out


@pytest.mark.spark
@pytest.mark.parametrize("method", METHODS)
def test_every_method_keeps_totals_to_date_over_a_change_feed(method: str, fast_spark: Any, sales: Path,
                                                              tmp_path: Path) -> None:
    spec = totals_spec(sales)
    results = run_cycles(fast_spark, spec, tmp_path / "work", method, range(3))
    carries = [r for n, r in results if n > 0 and r.index == 1]
    assert len(carries) == 2 and all(r.manifest["run"]["method"] == "carry" and r.delivered is None for r in carries)
    assert sum(1 for _, r in results if r.delivered) == 6


@pytest.mark.spark
@pytest.mark.parametrize("method", METHODS)
def test_every_method_joins_clicks_since_the_start_with_every_user(method: str, fast_spark: Any, dimension: Path,
                                                                   tmp_path: Path) -> None:
    run_cycles(fast_spark, load_spec(dimension / "spec.yaml"), tmp_path / "work", method, range(2))


@pytest.mark.spark
def test_a_state_lives_on_so_a_refresh_after_a_restart_reads_its_interval_not_the_history(
        fast_spark: Any, sales: Path, tmp_path: Path) -> None:
    spec = totals_spec(sales)
    results = run_cycles(fast_spark, spec, tmp_path / "work", "ivm", range(4))
    last_carry = next(r for n, r in results if n == 3 and r.index == 1)
    kept = last_carry.manifest["states"]
    assert kept and all(s["key"].startswith(("SS[1]|", "PS[1]|")) for s in kept), kept
    history = last_carry.manifest["measured"]["sales"][0][0]
    refresh = next(r for n, r in results if n == 3 and r.index == 2)
    landed = refresh.manifest["landed"]["sales"]["rows"]
    read = sum(f["rows_in"] for f in refresh.manifest["fragments"])
    state_rows = sum(s["rows"] for s in kept)
    assert read <= 2 * (landed + state_rows) < history, (read, landed, state_rows, history)


@pytest.mark.spark
def test_history_is_compacted_as_the_cost_model_says(fast_spark: Any, sales: Path, tmp_path: Path) -> None:
    """At this size merging the history's folders costs less than keeping them for a cycle, and
    a carry compacts them into one; with writes priced out of reach, the carries list every
    landed folder instead. Both deliver the reference."""
    compacted = run_cycles(fast_spark, totals_spec(sales), tmp_path / "a", "batch", range(3))
    folder = job(sales, tmp_path)
    chained = run_cycles(fast_spark, totals_spec(folder, "cost: {dfs_write: 1e12}\n"), tmp_path / "b", "batch", range(3))

    def history(results: list[tuple[int, PointResult]], n: int) -> list[dict[str, Any]]:
        carry = next(r for m, r in results if m == n and r.index == 1)
        return list(carry.manifest["history"]["sales"])

    assert [len(history(compacted, n)) for n in (1, 2)] == [1, 1]
    assert "compacted sales: 2 folders" in next(r.reason for m, r in compacted if m == 1 and r.index == 1)
    assert [len(history(chained, n)) for n in (1, 2)] == [2, 4]  # cycle 0's two intervals, then cycle 1's too


@pytest.mark.spark
def test_a_cycle_whose_predecessor_did_not_finish_lands_the_history_from_the_sources(
        fast_spark: Any, sales: Path, tmp_path: Path) -> None:
    spec = totals_spec(sales)
    first = spec.cycle(0)
    assert first is not None
    Runner(spec, fast_spark, tmp_path / "work", "ivm", simulate=True).run_cycle(first, until=1)
    results = run_cycles(fast_spark, spec, tmp_path / "work", "ivm", range(1, 2))
    carry = results[0][1]
    assert "did not finish: the history was landed from the sources" in carry.reason
    assert carry.manifest["states"] == [] and carry.manifest["measured"]["sales"][0][0] > 0


@pytest.mark.spark
def test_check_finds_a_lost_history_folder(fast_spark: Any, sales: Path, tmp_path: Path) -> None:
    spec = totals_spec(job(sales, tmp_path), "cost: {dfs_write: 1e12}\n")
    results = run_cycles(fast_spark, spec, tmp_path / "work", "batch", range(2))
    store = JobStore(tmp_path / "work" / "jobs" / "totals" / "simulate-batch")
    cycle = spec.cycle(1)
    assert cycle is not None
    newest = results[-1][1].manifest
    assert store.verify(cycle.label, newest) == []
    lost = store.root / newest["history"]["sales"][0]["path"]
    shutil.rmtree(lost)
    problems = store.verify(cycle.label, newest)
    assert problems and str(lost) in problems[0] and "is missing" in problems[0], problems


@pytest.mark.parametrize(("schedule", "extra", "message"), [
    ("schedule:\n  at: ['2026-11-20T06:00:00', '2026-11-20T12:00:00']\n  endless: true\n", "",
     "schedule.endless: the time points listed in 'at' make one cycle"),
    ("schedule:\n  start: '2026-11-20T00:00:00'\n  points: 2\n  range: {length: 1d, slide: 12h}\n  endless: true\n", "",
     "schedule.endless: a range query's window drops old rows"),
    (SCHEDULE.replace("deliver: every", "deliver: [1]"), "output: {path: out, mode: delta}\n",
     "schedule.deliver: an endless schedule's delta output counts each cycle's first change"),
    (SCHEDULE, "", "sources.sales.key: keys are checked within a cycle"),
])
def test_endless_where_it_cannot_hold_is_refused(schedule: str, extra: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "data" / "sales").mkdir(parents=True)
    key = "    key: id\n" if "key" in message else ""
    (tmp_path / "spec.yaml").write_text(
        f"name: e\nquery: SELECT COUNT(*) AS n FROM sales\nsources:\n  sales:\n    path: data/sales\n"
        f"    arrival: {{column: at}}\n{key}{schedule}{extra}")
    with pytest.raises(SpecError) as raised:
        load_spec(tmp_path / "spec.yaml")
    assert message in str(raised.value) and "spec.yaml, line" in str(raised.value), str(raised.value)


@pytest.mark.spark
def test_a_run_by_the_clock_runs_the_carry_before_the_cycles_first_time_point(fast_spark: Any, sales: Path,
                                                                              tmp_path: Path) -> None:
    spec = totals_spec(sales)
    second = spec.cycle(1)
    assert second is not None
    results = Runner(spec, fast_spark, tmp_path / "work", "auto").run_due(START + dt.timedelta(days=1, hours=12))
    assert [(r.cycle, r.index) for r in results] == [(spec.cycle(0).label, 1), (spec.cycle(0).label, 2),  # type: ignore[union-attr]
                                                     (second.label, 1), (second.label, 2)]
    assert results[2].manifest["run"]["method"] == "carry" and str(results[2].time) == str(second.origin)
    expected = [tuple(r) for r in reference(fast_spark, spec, second, 2).collect()]
    assert compare_results(expected, [tuple(r) for r in fast_spark.read.parquet(results[3].delivered).collect()]).equal
    from click.testing import CliRunner

    from tempura.cli import main

    shown = CliRunner(env={"COLUMNS": "400"}).invoke(main, ["history", str(spec.path), "--workdir", str(tmp_path / "work")])
    assert shown.exit_code == 0 and f"took over the {spec.cycle(0).title}'s history" in shown.output, shown.output  # type: ignore[union-attr]


@pytest.mark.spark
def test_the_endless_benchmark_runs_both_contenders_alternating_and_checks_every_cycle(fast_spark: Any,
                                                                                      tmp_path: Path) -> None:
    from benchmarks import endless

    report = endless.run(fast_spark, tmp_path / "out", tmp_path / "work", days=2, per_day=400, log=lambda _: None)
    assert report["correct"] and [(r["cycle"], r["contender"]) for r in report["rows"]] == [
        (0, "auto"), (0, "batch"), (1, "batch"), (1, "auto")]
    assert all(r["history_rows"] > 0 for r in report["rows"] if r["cycle"] == 1)
    assert (tmp_path / "out" / "endless.json").is_file() and (tmp_path / "out" / "endless.png").stat().st_size > 0


@pytest.mark.spark
@pytest.mark.parametrize("phase", ["manifest", "committed"])
def test_a_run_killed_at_the_carry_is_finished_by_the_next(phase: str, fast_spark: Any, sales: Path,
                                                            tmp_path: Path) -> None:
    """``tempura run`` by the clock through cycle 1's first time point, in a subprocess killed
    (``kill -9``) at its carry: with everything taken over in place but not committed, or just
    after the commit. The next run commits the carry once, and delivers the reference."""
    from benchmarks import faults

    folder = job(sales, tmp_path)
    spec = totals_spec(folder, f"spark: {json.dumps(faults.SUBPROCESS_SPARK)}\n")
    second = spec.cycle(1)
    assert second is not None
    args = ["run", str(spec.path), "--method", "ivm", "--now", str(second.time_points.values[0]), "--workdir",
            str(tmp_path / "work")]
    dead = faults.run_subprocess(args, f"{phase}@t1#2")  # t1 of cycle 0 reaches it first; the carry second
    assert dead.code == -9, dead.last_lines()
    store = JobStore(tmp_path / "work" / "jobs" / "totals")
    assert store.manifest(second.label, 1) is None if phase == "manifest" else store.manifest(second.label, 1)
    again = faults.run_in_process(args)
    assert again.code == 0 and not again.exception, again.last_lines()
    carry = store.manifest(second.label, 1)
    assert carry is not None and carry["run"]["method"] == "carry" and carry["states"], carry
    assert not store.pending(second.label).exists()
    delivered = store.manifest(second.label, 2)
    assert delivered is not None and delivered["delivered"]
    expected = [tuple(r) for r in reference(fast_spark, spec, second, 2).collect()]
    assert compare_results(expected, [tuple(r) for r in fast_spark.read.parquet(delivered["delivered"]).collect()]).equal
