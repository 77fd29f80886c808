"""Freshness as a schedule (:mod:`tempura.scheduler.freshness`): a ``target_lag`` spec loads as
the fewest evenly spaced points that meet it, its errors name the key, the candidates are
weighed by work and by how long results stay older than the target; and on Spark the runner
chooses the points at its first run, keeps them, runs them by the clock, and every delivery
equals ``spark.sql`` over that time point's snapshot."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.shop import columns_of, snapshot_result
from scenarios import prepared_scenario
from tempura.errors import TempuraError
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.freshness import FILE, candidate_points, choose, weigh
from tempura.scheduler.runner import Runner
from tempura.scheduler.spec import SpecError
from tempura.standing import StandingQuery

START = dt.datetime(2026, 11, 30)


def spec_file(tmp_path: Path, schedule: str, extra: str = "") -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    path = tmp_path / "spec.yaml"
    path.write_text("name: fresh\nquery: SELECT COUNT(*) AS n FROM t\n"
                    "sources:\n  t: {path: data, format: parquet, arrival: {column: ts}}\n"
                    f"schedule:\n{schedule}{extra}")
    return path


def test_a_target_lag_loads_as_the_fewest_points_that_meet_it(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, "  start: '2026-11-30T00:00:00'\n  target_lag: 5h\n"
                                          "  deadline: '2026-12-01T00:00:00'\n"))
    points = spec.time_points()
    assert points.k == 5 and points.deliver == (1, 2, 3, 4, 5)  # 24h / 5h, rounded up; every point delivers
    assert points.values[0] == START + dt.timedelta(hours=4, minutes=48)
    assert points.values[-1] == dt.datetime(2026, 12, 1)
    assert not spec.model.schedule.endless


def test_without_a_deadline_a_target_lag_schedule_is_endless(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, "  start: '2026-11-30T00:00:00'\n  target_lag: 15m\n"))
    assert spec.model.schedule.endless and spec.time_points().k == 8  # cycles of 8 target lags
    second = spec.cycle(1)
    assert second is not None and second.origin == START + dt.timedelta(hours=2)


@pytest.mark.parametrize("schedule, key, words", [
    ("  start: '2026-11-30T00:00:00'\n  target_lag: 1h\n  every: 1h\n", "schedule.every", "chooses the time points"),
    ("  start: '2026-11-30T00:00:00'\n  target_lag: 1h\n  points: 4\n", "schedule.points", "chooses the time points"),
    ("  target_lag: 1h\n", "schedule", "needs 'start'"),
    ("  start: '2026-11-30T00:00:00'\n  target_lag: 1h\n  deadline: '2026-11-29T00:00:00'\n", "schedule.deadline",
     "is not after start"),
    ("  start: '2026-11-30T00:00:00'\n  target_lag: 1h\n  deliver: last\n", "schedule.deliver", "every time point"),
    ("  start: '2026-11-30T00:00:00'\n  every: 1h\n  points: 2\n  lag_weight: 3\n", "schedule.lag_weight",
     "belongs with 'target_lag'"),
    ("  start: '2026-11-30T00:00:00'\n  target_lag: 1h\n  deadline: '2026-12-01T00:00:00'\n  endless: true\n",
     "schedule.deadline", "no deadline"),
])
def test_target_lag_errors_name_the_key(tmp_path: Path, schedule: str, key: str, words: str) -> None:
    with pytest.raises(SpecError) as raised:
        load_spec(spec_file(tmp_path, schedule))
    message = str(raised.value)
    assert re.search(r"spec\.yaml, line \d+: ", message) and f"{key}: " in message and words in message
    assert "\n" not in message


def test_weights_of_time_points_cannot_go_with_a_target_lag(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"objective\.weights: .*give a 'preset'"):
        load_spec(spec_file(tmp_path, "  start: '2026-11-30T00:00:00'\n  target_lag: 6h\n",
                            "objective: {weights: [1, 1]}\n"))


def test_the_candidates_and_how_they_are_weighed(tmp_path: Path) -> None:
    schedule = load_spec(spec_file(tmp_path, "  start: '2026-11-30T00:00:00'\n  target_lag: 3h\n"
                                             "  deadline: '2026-12-01T00:00:00'\n")).model.schedule
    assert candidate_points(schedule) == [2, 4, 8, 16]
    eight = weigh(schedule, 8, [10.0] * 8)  # every 3h, each run 10 s: each result 3h10s old at worst
    assert eight.every_seconds == 3 * 3600 and eight.worst_age_seconds == 3 * 3600 + 10
    assert eight.overshoot_seconds == 80 and eight.work_seconds == 80 and eight.objective == 160
    four = weigh(schedule, 4, [10.0] * 4)  # every 6h: 3h10s past the target at each point
    assert four.overshoot_seconds == 4 * (3 * 3600 + 10)


def test_more_points_are_taken_when_lag_weighs_more_than_work(tmp_path: Path) -> None:
    def schedule(weight: float) -> Any:
        return load_spec(spec_file(tmp_path, "  start: '2026-11-30T00:00:00'\n  target_lag: 3h\n"
                                             f"  deadline: '2026-12-01T00:00:00'\n  lag_weight: {weight}\n")).model.schedule

    def runs(n: int) -> list[float]:
        return [20.0] * n  # every run costs the same: more points, more work

    assert choose(schedule(0.5), runs).chosen.points == 8  # 8 × 20 s past the target cost less than 8 more runs
    assert choose(schedule(1.0), runs).chosen.points == 8  # a tie (320 s each): the fewer points
    chosen = choose(schedule(2.0), runs)
    assert chosen.chosen.points == 16 and chosen.chosen.overshoot_seconds == 0
    assert "within the target" in chosen.reason and "* " in chosen.text()
    assert choose(schedule(0.0), runs).chosen.points == 2  # lag worth nothing: the least work
    with pytest.raises(TempuraError, match="no number of time points has a plan"):
        choose(schedule(1.0), lambda n: None)


# -- on Spark ------------------------------------------------------------------------------------

FRESH_SCHEDULE = ("schedule:\n  start: \"2026-11-30T00:00:00\"\n  target_lag: 6h\n"
                  "  deadline: \"2026-12-01T00:00:00\"\n")


def fresh_scenario(spark: Any, tmp_path: Path) -> Path:
    """The ``shop_fresh_revenue`` scenario with a 6-hour target over its day (fewer points to run)."""
    spec = prepared_scenario(spark, "shop_fresh_revenue", tmp_path, 0.01)
    text = spec.read_text()
    text = text[:text.index("schedule:")] + FRESH_SCHEDULE + text[text.index("objective:"):]
    spec.write_text(text)
    return spec


@pytest.mark.spark
@pytest.mark.usefixtures("fast_spark")
def test_the_runner_chooses_keeps_and_runs_the_points(spark: Any, tmp_path: Path) -> None:
    spec_path = fresh_scenario(spark, tmp_path / "scenario")
    work = tmp_path / "work"
    first = Runner(load_spec(spec_path), spark, work, "auto")
    done = first.run_due(now=dt.datetime(2026, 11, 30, 13))
    choice = first.freshness
    assert choice is not None and choice.chosen.points in candidate_points(first.spec.model.schedule)
    kept = work / "jobs" / "shop_fresh_revenue" / FILE
    assert json.loads(kept.read_text())["chosen"] == choice.chosen.points
    step = dt.timedelta(days=1) / choice.chosen.points
    assert [r.time for r in done] == [START + step * i for i in range(1, choice.chosen.points + 1)
                                       if START + step * i <= dt.datetime(2026, 11, 30, 13)]
    before = kept.stat().st_mtime_ns
    later = Runner(load_spec(spec_path), spark, work, "auto")  # another run by the clock: the kept points
    done += later.run_due(now=dt.datetime(2026, 12, 1))
    assert later.freshness == choice and kept.stat().st_mtime_ns == before
    assert len(done) == choice.chosen.points
    data = spec_path.parent / "data"
    for result in done:
        assert result.delivered is not None
        expected, columns = snapshot_result(spark, first.spec, data, result.time)
        delivered = spark.read.parquet(result.delivered)
        assert columns_of(delivered) == columns  # the names and the types spark.sql gives
        outcome = compare_results(expected, [tuple(r) for r in delivered.collect()])
        assert outcome.equal, f"{result.time}: {outcome.reason}"
    status = StandingQuery(spec_path, workdir=work).status(now=dt.datetime(2026, 12, 1, 1))
    assert status.next is None and status.last is not None and status.last["index"] == choice.chosen.points
    # the points cannot move under committed ones
    spec_path.write_text(spec_path.read_text().replace("target_lag: 6h", "target_lag: 2h"))
    with pytest.raises(TempuraError, match=r"target_lag, start, deadline or lag_weight changed .* committed"):
        Runner(load_spec(spec_path), spark, work, "auto").run_due(now=dt.datetime(2026, 12, 1))


@pytest.mark.spark
@pytest.mark.usefixtures("fast_spark")
def test_plan_shows_the_candidates_and_the_choice(spark: Any, tmp_path: Path) -> None:
    spec_path = fresh_scenario(spark, tmp_path / "scenario")
    choice = StandingQuery(spec_path, workdir=tmp_path / "work", spark=spark).plan()
    assert choice.freshness is not None
    assert choice.plan.objective.k == choice.freshness.chosen.points  # the plan is over the chosen points
    text = choice.text()
    assert "time points for target_lag 6h over 1d" in text and "chosen: " in text
    assert [c.points for c in choice.freshness.candidates] == [1, 2, 4, 8]
    assert choice.to_json()["freshness"]["chosen"] == choice.freshness.chosen.points


@pytest.mark.spark
@pytest.mark.usefixtures("fast_spark")
def test_a_simulation_of_each_method_chooses_its_points_and_is_checked(spark: Any, tmp_path: Path) -> None:
    spec_path = fresh_scenario(spark, tmp_path / "scenario")
    query = StandingQuery(spec_path, workdir=tmp_path / "work", spark=spark)
    references = query.references()  # shared by the methods, whatever points each chooses
    for method in ("batch", "ivm"):
        run = query.simulate(method, check=True, references=references)
        assert run.points and all(p.correct for p in run.points), [(p.index, p.detail) for p in run.points]
        assert len(run.points) in candidate_points(query.spec.model.schedule)
