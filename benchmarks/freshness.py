"""A ``target_lag`` schedule against fixed schedules of 2, 4, 8 and 16 points, run by the clock.

The scenario ``shop_fresh_revenue`` asks for the shop's revenue per hour at most 3 hours old
through a day. The contenders are its own spec (tempura chooses the points:
:mod:`tempura.scheduler.freshness`) and the same query on fixed schedules of ``n`` evenly spaced
points over the day (``every: 24h/n``, every point delivering). Each runs by the clock as cron
runs it: before each time point the files of the rows that arrived by then land (as new files),
and ``tempura run SPEC --now t_i`` runs in a process of its own, measured whole (its wall
seconds and its process tree's CPU: :func:`benchmarks.clock.measured_process`). The
``target_lag`` job's choice is made by its first process, run at the first point any candidate
has (a quarter of the day at most: ``start + target_lag / 2``) with the rows arrived by then.

Per contender, the objective the choice weighs, measured: the seconds of every process it ran
(``work``), plus ``lag_weight`` times the seconds its results were older than the target
(``past target``: the result of ``t_{i-1}`` stands until ``t_i``'s process ends, so it grows
``Δ + w_i`` old, ``w_i`` that process's wall seconds). Beside it, the model's objective for
that number of points (the choice's own table), and every delivery checked against
``spark.sql`` over the snapshot of its time point. The contenders alternate, one cycle each per
round, and are reported as ratios of medians to the ``target_lag`` job.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from benchmarks.clock import ENTRY, PointFigures, measured_process
from benchmarks.shop import columns_of, snapshot_result
from scenarios import prepared_scenario
from tempura.runtime import compare_results
from tempura.runtime.storage import LOCAL
from tempura.runtime.store import JobStore
from tempura.scheduler import load_spec
from tempura.scheduler.freshness import FILE, load_choice, with_choice
from tempura.tvr.arrival import sql_literal

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCENARIO = "shop_fresh_revenue"
FIXED = (2, 4, 8, 16)
GRID = 16  # the finest step of any contender: the day in 16 intervals, on which every point lies


@dataclass
class Cycle:
    """One contender's cycle by the clock: what each process cost and each delivery's check."""

    contender: str  # "target_lag" or "n points"
    points: int
    processes: list[PointFigures] = field(default_factory=list)
    delivered_at: dict[int, float] = field(default_factory=dict)  # t_i -> wall seconds of the process delivering it
    correct: int = 0
    wrong: list[str] = field(default_factory=list)
    every_seconds: float = 0.0
    target_seconds: float = 0.0
    lag_weight: float = 1.0

    @property
    def work_seconds(self) -> float:
        return math.fsum(p.wall_seconds for p in self.processes)

    @property
    def cpu_seconds(self) -> float:
        return math.fsum(p.process_cpu_seconds for p in self.processes)

    @property
    def past_target_seconds(self) -> float:
        return math.fsum(max(0.0, self.every_seconds + w - self.target_seconds) for w in self.delivered_at.values())

    @property
    def objective(self) -> float:
        return self.work_seconds + self.lag_weight * self.past_target_seconds

    def to_json(self) -> dict[str, Any]:
        return {"contender": self.contender, "points": self.points, "processes": len(self.processes),
                "work_seconds": round(self.work_seconds, 2), "process_cpu_seconds": round(self.cpu_seconds, 2),
                "past_target_seconds": round(self.past_target_seconds, 2), "objective": round(self.objective, 2),
                "correct": self.correct, "wrong": self.wrong,
                "wall_per_process": [round(p.wall_seconds, 2) for p in self.processes]}


def stage(spark: SparkSession, spec_path: Path, out: Path) -> list[dt.datetime]:
    """Each source's rows apart per interval of the :data:`GRID` under ``out/<source>/g=NN/``
    (``g=00``: at or before the start); returns the grid's instants."""
    spec = load_spec(spec_path)
    schedule = spec.model.schedule
    assert isinstance(schedule.start, dt.datetime) and isinstance(schedule.deadline, dt.datetime)
    step = (schedule.deadline - schedule.start) / GRID
    grid = [schedule.start + step * g for g in range(GRID + 1)]
    for name, source in spec.sources.items():
        frame = spark.read.parquet(spec.location(name))
        column = source.arrival.column
        assert column is not None
        for g, upper in enumerate(grid):
            low = f"`{column}` > {sql_literal(grid[g - 1])} AND " if g > 0 else ""
            frame.where(f"{low}`{column}` <= {sql_literal(upper)}").coalesce(1).write.mode("overwrite") \
                .parquet(str(out / name / f"g={g:02d}"))
    return grid


class Job:
    """A contender's folder: its spec, its SQL, its source folders fed from the staged grid."""

    def __init__(self, scenario_spec: Path, staged: Path, folder: Path, schedule: str | None) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for path in scenario_spec.parent.iterdir():
            if path.suffix in (".yaml", ".sql"):
                shutil.copyfile(path, folder / path.name)
        self.spec_path = folder / scenario_spec.name
        if schedule is not None:  # a fixed schedule in place of the target
            text = self.spec_path.read_text()
            self.spec_path.write_text(text[:text.index("schedule:")] + schedule + text[text.index("objective:"):])
        self.folder, self.staged, self.workdir = folder, staged, folder / "work"
        self.landed = -1
        for name in load_spec(self.spec_path).sources:
            (folder / "data" / name).mkdir(parents=True, exist_ok=True)

    def arrive(self, grid: Sequence[dt.datetime], now: dt.datetime) -> None:
        """Land the staged files of every grid interval ending by ``now`` not landed yet."""
        spec = load_spec(self.spec_path)
        upto = max(g for g, t in enumerate(grid) if t <= now)
        for g in range(self.landed + 1, upto + 1):
            for name in spec.sources:
                for part in sorted((self.staged / name / f"g={g:02d}").glob("*.parquet")):
                    shutil.copyfile(part, self.folder / "data" / name / f"g{g:02d}-{part.name}")
        self.landed = max(self.landed, upto)

    def run(self, index: int, now: dt.datetime) -> PointFigures:
        events = self.folder / "events" / f"p{index:03d}-{time.time_ns()}"
        figures = measured_process(index, ["-c", ENTRY, "run", str(self.spec_path), "--now", now.isoformat(),
                                           "--workdir", str(self.workdir)], events)
        if figures.returncode != 0:
            raise RuntimeError(f"{self.spec_path} at {now}: exit {figures.returncode}: {figures.output[-600:]}")
        return figures

    def store(self) -> JobStore:
        return JobStore(self.workdir / "jobs" / load_spec(self.spec_path).name, storage=LOCAL)


def fixed_schedule(start: dt.datetime, points: int) -> str:
    every = int(dt.timedelta(days=1).total_seconds()) // points
    return (f"schedule:\n  start: \"{start.isoformat()}\"\n  every: {every}s\n  points: {points}\n"
            "  deliver: every\n")


def run_cycle(spark: SparkSession, scenario_spec: Path, staged: Path, grid: Sequence[dt.datetime], folder: Path,
              points: int | None) -> Cycle:
    """One contender's cycle by the clock (``points``: a fixed schedule; ``None``: the target's)."""
    target = load_spec(scenario_spec).model.schedule
    assert isinstance(target.target_lag, dt.timedelta) and isinstance(target.start, dt.datetime)
    job = Job(scenario_spec, staged, folder, None if points is None else fixed_schedule(target.start, points))
    cycle = Cycle("target_lag" if points is None else f"{points} points", points or 0,
                  target_seconds=target.target_lag.total_seconds(), lag_weight=target.lag_weight)
    store = job.store()

    def measured(index: int, at: dt.datetime) -> None:
        figures = job.run(index, at)
        cycle.processes.append(figures)
        for i in committed(store):
            cycle.delivered_at.setdefault(i, figures.wall_seconds)  # what this process committed

    spec = load_spec(job.spec_path)
    if points is None:  # the first process chooses, at the earliest point of any candidate
        first = target.start + target.target_lag / 2
        job.arrive(grid, first)
        measured(0, first)
        choice = load_choice(store.root, LOCAL)
        assert choice is not None, f"no {FILE} after the first run"
        cycle.points = choice.chosen.points
        spec = with_choice(spec, choice)
    values = [v for v in spec.cycle(0).time_points.values if isinstance(v, dt.datetime)]  # type: ignore[union-attr]
    cycle.every_seconds = (values[1] - values[0]).total_seconds() if len(values) > 1 else 86400.0
    for i, at in enumerate(values, start=1):
        if i not in cycle.delivered_at:
            job.arrive(grid, at)
            measured(i, at)
    label = spec.cycle(0).label  # type: ignore[union-attr]
    data = scenario_spec.parent / "data"
    for i, at in enumerate(values, start=1):
        manifest = store.manifest(label, i)
        if manifest is None or manifest.get("delivered") is None:
            cycle.wrong.append(f"t{i}: no delivery")
            continue
        expected, columns = snapshot_result(spark, spec, data, at)
        got = spark.read.parquet(str(manifest["delivered"]))
        outcome = compare_results(expected, [tuple(r) for r in got.collect()])
        if outcome.equal and columns_of(got) == columns:
            cycle.correct += 1
        else:
            cycle.wrong.append(f"t{i} ({at}): {outcome.reason or f'columns {columns_of(got)}, not {columns}'}")
    return cycle


def committed(store: JobStore) -> list[int]:
    """The time points the job has committed (its schedules here have one cycle)."""
    return [i for label in store.cycles() for i in store.manifest_indices(label)]


def run(spark: SparkSession, folder: Path, scale: float, rounds: int,
        say: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Every contender by the clock, ``rounds`` times, alternating; the report."""
    began = time.perf_counter()
    scenario_spec = prepared_scenario(spark, SCENARIO, folder / "scenarios", scale)
    staged = folder / "staged"
    grid = stage(spark, scenario_spec, staged)
    contenders: list[int | None] = [None, *FIXED]
    cycles: list[Cycle] = []
    for r in range(rounds):
        order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
        for points in order:
            name = "target_lag" if points is None else f"fixed{points}"
            say(f"round {r + 1}: {name}")
            cycles.append(run_cycle(spark, scenario_spec, staged, grid, folder / "runs" / name, points))
    choice = load_choice(folder / "runs" / "target_lag" / "work" / "jobs" / SCENARIO, LOCAL)
    model = {c.points: round(c.objective, 1) for c in choice.candidates} if choice is not None else {}
    summary = []
    base = statistics.median(c.objective for c in cycles if c.contender == "target_lag")
    for name in ["target_lag", *(f"{n} points" for n in FIXED)]:
        mine = [c for c in cycles if c.contender == name]
        objective = statistics.median(c.objective for c in mine)
        summary.append({
            "contender": name, "points": mine[-1].points, "rounds": len(mine),
            "median_objective": round(objective, 1), "ratio_to_target_lag": round(objective / base, 3),
            "median_work_seconds": round(statistics.median(c.work_seconds for c in mine), 1),
            "median_process_cpu_seconds": round(statistics.median(c.cpu_seconds for c in mine), 1),
            "median_past_target_seconds": round(statistics.median(c.past_target_seconds for c in mine), 1),
            "model_objective": model.get(mine[-1].points),
            "deliveries_equal_to_spark_sql": f"{sum(c.correct for c in mine)}/{sum(c.points for c in mine)}",
        })
    return {"scenario": SCENARIO, "scale": scale, "rounds": rounds, "seconds": round(time.perf_counter() - began, 1),
            "choice": choice.to_json() if choice is not None else None, "summary": summary,
            "cycles": [c.to_json() for c in cycles]}


def write_report(report: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "freshness.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    return path
