"""``tempura bench replanning``: what reusing plannings saves a job run by the clock.

A scenario's cycle is run by the clock (:mod:`benchmarks.clock`: each time point's files land
just before it) with a new :class:`~tempura.scheduler.runner.Runner` per time point, as a new
process would make, in this process, twice per round: with the job's plannings reused
(:mod:`tempura.scheduler.plan_cache`) and with every planning made, alternating which goes first.
Per time point: the wall time of every planning the run makes — before landing, after it, and
the re-plan of the rest after committing — a partial figure (planning only, in a warm JVM);
and the plannings reused and made. Every delivered result is checked against ``spark.sql``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from benchmarks.clock import ClockJob, split_by_interval
from scenarios import copy_scenario
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.plan_cache import PlanCache
from tempura.scheduler.reference import reference
from tempura.scheduler.runner import Runner

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MODES = ("reused", "planned")


def timed_planning(runner: Runner, spent: list[float]) -> None:
    """Add the wall time of each of ``runner``'s plannings to ``spent[0]``."""
    planned: Callable[..., Any] = runner._planned

    def measured(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return planned(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began

    runner._planned = measured  # type: ignore[method-assign]


def run_cycle(spark: SparkSession, spec_path: Path, staged: Path, folder: Path, mode: str,
              expected: dict[int, list[tuple[Any, ...]]]) -> list[dict[str, Any]]:
    job = ClockJob.create(spec_path, staged, folder)
    cycle = job.spec.cycle(0)
    assert cycle is not None
    points = []
    for index in range(1, cycle.last + 1):
        job.arrive(index)
        runner = Runner(load_spec(job.spec_path), spark, job.workdir, "auto")
        if mode == "planned":
            runner.plan_cache = PlanCache(keep=False)
        spent = [0.0]
        timed_planning(runner, spent)
        (result,) = runner.run_due(now=cycle.time_points.value(index))
        entry: dict[str, Any] = {"index": index, "planning_seconds": spent[0],
                                 "plannings": result.manifest["run"].get("plannings"), "checked": None}
        if index in expected and result.delivered:
            got = [tuple(r) for r in spark.read.parquet(result.delivered).collect()]
            entry["checked"] = compare_results(expected[index], got).equal
        points.append(entry)
    return points


def run(spark: SparkSession, out: Path, workdir: Path, scenario: str, scale: float, repeat: int) -> dict[str, Any]:
    """The benchmark; writes ``replanning-<scenario>.json`` under ``out``."""
    import importlib

    root = workdir / f"replanning-{scenario}"
    shutil.rmtree(root, ignore_errors=True)
    spec_path = copy_scenario(scenario, root / "data")
    importlib.import_module(f"scenarios.{scenario}.generate").generate(spark, spec_path.parent, scale)
    spec = load_spec(spec_path)
    split_by_interval(spark, spec, root / "staged")
    cycle = spec.cycle(0)
    assert cycle is not None
    expected = {i: [tuple(r) for r in reference(spark, spec, cycle, i).collect()] for i in range(1, cycle.last + 1)
                if i in cycle.time_points.deliver}
    run_cycle(spark, spec_path, root / "staged", root / "warm", "planned", expected)  # unmeasured
    runs: dict[str, list[list[dict[str, Any]]]] = {m: [] for m in MODES}
    for rep in range(repeat):
        for mode in (MODES if rep % 2 == 0 else tuple(reversed(MODES))):
            runs[mode].append(run_cycle(spark, spec_path, root / "staged", root / f"{mode}-{rep}", mode, expected))
    medians = {m: [statistics.median(c[i]["planning_seconds"] for c in cycles) for i in range(cycle.last)]
               for m, cycles in runs.items()}
    summary = {"planning_seconds (partial)": medians,
               "ratio reused / planned": [a / b if b else None for a, b in zip(medians["reused"], medians["planned"])],
               "correct": all(p["checked"] is not False for cycles in runs.values() for c in cycles for p in c)}
    result = {"scenario": scenario, "scale": scale, "repeat": repeat, "runs": runs, "summary": summary}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"replanning-{scenario}.json").write_text(json.dumps(result, indent=1, default=str))
    return result


__all__ = ["MODES", "run", "run_cycle", "timed_planning"]
