"""``tempura bench clock``: standing queries run the way users run them, and counted as they pay.

Per scenario, the generated data is split per interval (:func:`benchmarks.clock.split_by_interval`)
and each contender takes the cycle by the clock: before time point ``t_i`` its folders receive
interval ``i``'s files, and a **new process** runs the point, with Spark's event log on. The
contenders, in one run, alternating time point by time point, each in its own folders, in the
round's order (:func:`benchmarks.rounds.round_order`):

- ``auto`` and any forced method (``batch``, ``ivm``, …): ``tempura run SPEC --now t_i``
  (``--method``);
- ``spark-sql``: what a Spark user writes instead, a script that recomputes the query over the
  folders as they are at ``t_i`` (the rows of the cycle so far) with ``spark.sql`` and writes it,
  run at the time points whose result is due (it has nothing to do at the others);
- ``sdp-streaming`` and ``sdp-mv`` (``tempura bench sdp``): the query as a Spark Declarative
  Pipelines project, refreshed by ``spark-pipelines run`` (:mod:`benchmarks.sdp`).

Per time point and contender, medians over the rounds of the **whole run**: executor CPU of every
Spark job the process started (its event log), records and bytes read, jobs, the CPU of the
process tree (Python and the JVMs) and its wall time; beside them, labelled partial, tempura's fragments'
executor CPU and landing's, and the per-purpose split. The ratios: auto over each contender, and
auto's overhead (its whole run over its fragments and landing). Every result each contender
delivers is checked against ``spark.sql`` over that time point's snapshot of the whole data.
JSON to the output folder.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from benchmarks.clock import ClockJob, PointFigures, measured_process, split_by_interval
from benchmarks.rounds import round_order
from benchmarks.sdp import DESIGNS as SDP_DESIGNS
from benchmarks.sdp import SdpProject
from scenarios import copy_scenario
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.standing import METHODS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONTENDERS = ("auto", "batch", "spark-sql")
TEMPURA = METHODS  # the contenders that are tempura's runs
RECOMPUTE = """
import sys
from tempura.runtime.spark import get_spark
from tempura.scheduler import load_spec
from tempura.scheduler.reference import reference
spec = load_spec(sys.argv[1])
cycle = spec.cycle(0)
index = int(sys.argv[2])
reference(get_spark(), spec, cycle, index).write.mode("overwrite").parquet(sys.argv[3])
"""


def recompute_point(job: ClockJob, index: int, out: Path, events: Path) -> PointFigures:
    """The ``spark-sql`` contender's time point: a new process recomputing the query over the
    job's folders as they are, measured as :meth:`ClockJob.run_point` measures tempura's."""
    return measured_process(index, ["-c", RECOMPUTE, str(job.spec_path), str(index), str(out)], events)


def delivered_path(job: ClockJob, index: int) -> str | None:
    """Where tempura's run delivered time point ``index`` (its manifest says)."""
    spec = job.spec
    cycle = spec.cycle(0)
    assert cycle is not None
    manifest = job.workdir / "jobs" / spec.name / "cycles" / cycle.label / f"t{index:03d}.json"
    if not manifest.exists():
        return None
    return json.loads(manifest.read_text()).get("delivered")


def cycle_points(spark: SparkSession, contender: str, spec_path: Path, staged: Path, folder: Path,
                 expected: dict[int, list[tuple[Any, ...]]]) -> Iterator[dict[str, Any]]:
    """One cycle of ``contender`` by the clock in a fresh folder, a time point at a time: each
    point's figures, checked."""
    job = ClockJob.create(spec_path, staged, folder)
    cycle = job.spec.cycle(0)
    assert cycle is not None
    project = SdpProject.create(spark, job, contender, folder / "sdp") if contender in SDP_DESIGNS else None
    for index in range(1, cycle.last + 1):
        job.arrive(index)
        events = folder / "events" / f"t{index:03d}"
        if contender == "spark-sql":
            if index not in cycle.time_points.deliver:  # a user's recompute runs when its result is due
                yield {**PointFigures(index, 0, 0.0).to_json(), "checked": None, "ran": False}
                continue
            out = folder / "result" / f"t{index:03d}"
            figures = recompute_point(job, index, out, events)
            path: str | None = str(out)
        elif project is not None:
            if not project.runs_at(index):
                yield {**PointFigures(index, 0, 0.0).to_json(), "checked": None, "ran": False}
                continue
            figures = project.refresh(index, events)
            path = str(project.result_path()) if index in cycle.time_points.deliver else None
        else:
            figures = job.run_point(index, contender, events)
            path = delivered_path(job, index)
        entry = figures.to_json()
        entry["checked"] = None
        if figures.returncode != 0:
            entry["error"] = figures.output.strip().splitlines()[-1] if figures.output.strip() else "failed"
        elif index in expected and path is not None:
            got = [tuple(r) for r in spark.read.parquet(path).collect()]
            outcome = compare_results(expected[index], got)
            entry["checked"] = outcome.equal
            if not outcome.equal:
                entry["wrong"] = outcome.reason
        if contender in TEMPURA:
            manifest = job.workdir / "jobs" / job.spec.name / "cycles" / cycle.label / f"t{index:03d}.json"
            if manifest.exists():
                run = json.loads(manifest.read_text())["run"]
                entry["rows_landed"] = run.get("rows_landed")
                entry["planning_seconds"] = run.get("planning_seconds")
                entry["method_run"] = run.get("method")
        yield entry
    yield next_cycle_point(job, contender, project, cycle.last + 1, folder / "events" / "next-t001")


def next_cycle_point(job: ClockJob, contender: str, project: SdpProject | None, index: int,
                     events: Path) -> dict[str, Any]:
    """The next cycle's first time point, with no new file, as each contender's cron runs it:
    tempura's run (which takes what the cycle's last point left to it, such as a sketch),
    SDP's streaming tables' refresh (``sdp-streaming``); nothing for ``sdp-mv`` and
    ``spark-sql``, whose next work is the next result due. Counted beside the cycle, so that
    work moved off the last point is still paid for."""
    now = job.next_cycle_now()
    if now is None or contender == "spark-sql" or (project is not None and not project.runs_at(index)):
        return {**PointFigures(index, 0, 0.0).to_json(), "checked": None, "ran": False, "next_cycle": True}
    figures = project.refresh(index, events) if project is not None else job.run_point(index, contender, events, now=now)
    entry = {**figures.to_json(), "checked": None, "next_cycle": True}
    if figures.returncode != 0:
        entry["error"] = figures.output.strip().splitlines()[-1] if figures.output.strip() else "failed"
    return entry


def run_cycle(spark: SparkSession, contender: str, spec_path: Path, staged: Path, folder: Path,
              expected: dict[int, list[tuple[Any, ...]]]) -> list[dict[str, Any]]:
    """One cycle of ``contender`` by the clock in a fresh folder: each point's figures, checked."""
    return list(cycle_points(spark, contender, spec_path, staged, folder, expected))


def medians(cycles: Sequence[list[dict[str, Any]]], key: str) -> list[float]:
    return [statistics.median(float(c[i].get(key) or 0.0) for c in cycles) for i in range(len(cycles[0]))]


def purpose_medians(cycles: Sequence[list[dict[str, Any]]], purpose: str) -> list[float]:
    return purpose_medians_of(cycles, purpose, "cpu_seconds")


def purpose_medians_of(cycles: Sequence[list[dict[str, Any]]], purpose: str, key: str) -> list[float]:
    return [statistics.median(float(c[i]["by_purpose"].get(purpose, {}).get(key, 0.0)) for c in cycles)
            for i in range(len(cycles[0]))]


def summarize(runs: dict[str, list[list[dict[str, Any]]]],
              after: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Per contender, the medians per time point (and of ``after``, the next cycle's first point,
    where measured); auto's ratios against each other contender and its overhead over its own
    fragments and landing."""
    out: dict[str, Any] = {}
    for name, cycles in runs.items():
        following = (after or {}).get(name) or []
        out[name] = {
            "next_cycle_t1": {key: statistics.median(float(p.get(key) or 0.0) for p in following)
                              for key in ("cpu_seconds", "records_read", "process_cpu_seconds", "wall_seconds")}
            if following else None,
            "cpu_seconds": medians(cycles, "cpu_seconds"),
            "records_read": medians(cycles, "records_read"),
            "process_cpu_seconds": medians(cycles, "process_cpu_seconds"),
            "wall_seconds": medians(cycles, "wall_seconds"),
            "jobs": medians(cycles, "jobs"),
            "fragments_cpu_seconds (partial)": purpose_medians(cycles, "fragment"),
            "landing_cpu_seconds (partial)": purpose_medians(cycles, "landing"),
            "statistics_cpu_seconds (partial)": purpose_medians(cycles, "statistics"),
            "correct": all(p.get("checked") is not False and "error" not in p for c in cycles for p in c)
            and all("error" not in p for p in following),
            "checked_points": sum(1 for c in cycles for p in c if p.get("checked") is True),
        }
    if "auto" in out:
        auto = out["auto"]
        ratios: dict[str, Any] = {}
        for name, other in out.items():
            if name == "auto":
                continue
            ratios[name] = {
                key: [a / b if b else None for a, b in zip(auto[key], other[key])]
                for key in ("cpu_seconds", "records_read", "process_cpu_seconds", "wall_seconds")}
            ratios[name]["cpu_seconds_summed"] = sum(auto["cpu_seconds"]) / max(1e-9, sum(other["cpu_seconds"]))
            ratios[name]["cpu_seconds_summed_with_next"] = summed_with_next(auto) / max(1e-9, summed_with_next(other))
        auto["overhead"] = [c / (f + land) if f + land > 0 else None for c, f, land in
                            zip(auto["cpu_seconds"], auto["fragments_cpu_seconds (partial)"],
                                auto["landing_cpu_seconds (partial)"])]
        # where the plan reads nothing, the delta's one read is the statistics' pass over it: the
        # same figure with that pass counted as the delta's landing (labelled apart)
        reads = purpose_medians_of(runs["auto"], "statistics", "records_read")
        auto["overhead (statistics' read of the delta as its landing)"] = [
            c / (f + land + (st if r > 0 else 0.0)) if f + land + (st if r > 0 else 0.0) > 0 else None
            for c, f, land, st, r in zip(auto["cpu_seconds"], auto["fragments_cpu_seconds (partial)"],
                                         auto["landing_cpu_seconds (partial)"], auto["statistics_cpu_seconds (partial)"],
                                         reads)]
        out["auto_ratios"] = ratios
        designs = [d for d in SDP_DESIGNS if d in out]
        if designs:
            out["against_sdp"] = against_sdp(auto, {d: out[d] for d in designs})
    return out


def summed_with_next(figures: dict[str, Any]) -> float:
    """A contender's executor CPU summed over the cycle and the next cycle's first point."""
    following = figures.get("next_cycle_t1") or {}
    return sum(figures["cpu_seconds"]) + float(following.get("cpu_seconds") or 0.0)


def against_sdp(auto: dict[str, Any], designs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``auto`` against SDP's best design — the one whose whole-run executor CPU summed over the
    cycle is least, as a user would pick one — and against each: at the last time point, summed,
    and the wall time at each point where the design ran (``None`` where it had nothing to run)."""
    best = min(designs, key=lambda d: sum(designs[d]["cpu_seconds"]))
    out: dict[str, Any] = {"best": best}
    for design, figures in designs.items():
        out[design] = {
            "last_cpu_ratio": auto["cpu_seconds"][-1] / figures["cpu_seconds"][-1] if figures["cpu_seconds"][-1] else None,
            "summed_cpu_ratio": sum(auto["cpu_seconds"]) / max(1e-9, sum(figures["cpu_seconds"])),
            "summed_with_next_cpu_ratio": summed_with_next(auto) / max(1e-9, summed_with_next(figures)),
            "wall_ratio": [a / b if b else None for a, b in zip(auto["wall_seconds"], figures["wall_seconds"])],
            "process_cpu_ratio_summed": sum(auto["process_cpu_seconds"]) / max(1e-9, sum(figures["process_cpu_seconds"])),
        }
    return out


def run(spark: SparkSession, out: Path, workdir: Path, scenario: str, scale: float, repeat: int,
        contenders: Sequence[str] = CONTENDERS, name: str = "clock") -> dict[str, Any]:
    """The benchmark of one scenario; writes ``<name>-<scenario>.json`` under ``out``. In each
    round the contenders alternate time point by time point (at ``t_i`` each runs its point, in
    the round's order, before any runs ``t_{i+1}``): one process at a time, each in its own
    folders."""
    import importlib

    from tempura.scheduler.reference import reference

    root = workdir / f"{name}-{scenario}"
    shutil.rmtree(root, ignore_errors=True)
    spec_path = copy_scenario(scenario, root / "data")
    generator = importlib.import_module(f"scenarios.{scenario}.generate")
    generator.generate(spark, spec_path.parent, scale)
    spec = load_spec(spec_path)
    counts = split_by_interval(spark, spec, root / "staged")
    cycle = spec.cycle(0)
    assert cycle is not None
    expected = {i: [tuple(r) for r in reference(spark, spec, cycle, i).collect()] for i in range(1, cycle.last + 1)
                if i in cycle.time_points.deliver}
    runs: dict[str, list[list[dict[str, Any]]]] = {c: [] for c in contenders}
    after: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    for warm in contenders:  # a cycle each, unmeasured: the first process pays for caches the others find
        run_cycle(spark, warm, spec_path, root / "staged", root / f"warm-{warm}", expected)
    for rep in range(repeat):
        order = round_order(list(contenders), rep)
        cycles = {c: cycle_points(spark, c, spec_path, root / "staged", root / f"{c}-{rep}", expected) for c in order}
        taken: dict[str, list[dict[str, Any]]] = {c: [] for c in order}
        for _ in range(cycle.last):
            for contender in order:
                taken[contender].append(next(cycles[contender]))
        for contender in order:
            runs[contender].append(taken[contender])
            after[contender].append(next(cycles[contender]))  # the next cycle's t1
    result = {"scenario": scenario, "scale": scale, "repeat": repeat, "rows_per_interval": counts,
              "contenders": list(contenders), "runs": runs, "next_cycle_t1": after, "summary": summarize(runs, after)}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}-{scenario}.json").write_text(json.dumps(result, indent=1, default=str))
    return result
