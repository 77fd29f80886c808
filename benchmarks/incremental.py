"""``tempura bench incremental``: standing queries end to end on Spark, contender against contender.

Per scenario (``scenarios/``: the golden example, the TPC-H standing queries, the 7-day range
report, the change-data source, the TPC-DS standing reports), on the same data, in one run:

- ``batch``: tempura forced to recompute at every delivery;
- ``ivm``: tempura forced to incremental view maintenance;
- ``spark-streaming``: the query as a native Structured Streaming job triggered at each time point
  (:mod:`benchmarks.native_streaming`), where Spark supports it; where it does not, Spark's reason
  is reported;
- ``auto``: tempura's cost-based choice;
- ``floor`` (only when asked for): not a plan but a bound, :class:`benchmarks.floor.Floor`'s run
  of the batch plan over the rows landed in the last interval alone, measured at the last time
  point in the same rounds as the others, so that ``auto``'s last point is set against what no
  plan can beat on the same machine in the same run (its result is not the query's, and it is in
  no ratio but its own).

Each contender first replays one cycle unmeasured (a warm-up: the JVM compiles, Spark caches
file listings), then one cycle from scratch ``repeat`` times; the contenders alternate (each runs
first in turn, the others in an order reversed every other round, none twice in a row:
:func:`round_order`), so drift in the machine's state hits all alike and no contender always
runs after the same one; the JVM collects its garbage before each measured run.
Measured per time point: executor CPU seconds (Spark's status store) and wall seconds, taken as
medians over the repetitions; the objective is the spec's weights applied to the median CPU per
time point. That CPU is the plan's fragments'; landing the time point's intervals (reading the
sources, writing the landing) is measured apart, per contender (``landing_cpu_median``, and the
last point's in the verdict): every plan lands the same rows, but one that lands an interval laid
out pays for the layout there. Every delivered result of every run is checked against
``spark.sql`` over that time point's snapshot (:func:`tempura.scheduler.reference.reference`,
computed once per time point for all contenders); a contender that delivers a wrong result is
marked, and left out of the ratios.

Where ``auto``'s plan runs the same fragments as another contender's (equal
:func:`~tempura.scheduler.simulation.plan_digest`), the verdict says so (``same_plan_as``): the
difference between their measurements is then the machine's noise, not a choice, and a target
against that contender counts as met. Where only the last time point's fragments are the same
(``same_last_point_as``), so is the last point's CPU.

Targets, under ``deadline`` weights: ``auto``'s CPU at the last time point ≤ 0.35 × ``batch``'s and
≤ ``ivm``'s and ``spark-streaming``'s; ``auto``'s objective ≤ the best other contender's; the bytes
``auto``'s last time point selects to read (:func:`selected_bytes`: landed intervals, states, and
what pruned reads took of them) ≤ 2 × the intervals landed then plus what its pruned reads took.
JSON and a PNG chart go to the output folder.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from benchmarks.charts import colour, time_point_axis
from benchmarks.rounds import round_order, settle
from tempura.runtime import compare_results
from tempura.scheduler.reference import References
from tempura.scheduler.runner import PointResult
from tempura.scheduler.spec import Spec
from tempura.standing import StandingQuery

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONTENDERS = ("batch", "ivm", "spark-streaming", "auto")
FLOOR = "floor"  # a contender only when asked for: a bound, not a plan
LAST_POINT_TARGET = 0.35
BYTES_TARGET = 2.0  # the last point reads at most this many times its delta plus the buckets it touches
DEFAULT_SCENARIOS = ("sales_returns", "sales_returns_seed", "price_watch", "tpch_q01", "tpch_q03", "tpch_q05", "tpch_q10", "tpch_q12", "tpch_q13",
                     "tpch_q18", "weekly_revenue", "stock_cdc", "tpcds_store_star", "tpcds_window",
                     "tpcds_rollup", "tpcds_sales_returns")


@dataclass
class Attempt:
    """One replayed cycle of one contender."""

    cpu: list[float]
    wall: list[float]
    correct: bool
    detail: str = ""
    read_bytes: list[float] = field(default_factory=list)  # per time point: what its fragments selected to read
    bound_bytes: list[float] = field(default_factory=list)  # ... and the intervals landed then plus the buckets pruned reads took
    landing: list[float] = field(default_factory=list)  # per time point: executor CPU of landing its intervals (not in ``cpu``)

    @property
    def verdict(self) -> str:
        """What the log says of its deliveries."""
        return "ok" if self.correct else f"WRONG ({self.detail})"


@dataclass
class Contender:
    """A contender's runs on one scenario."""

    name: str
    unsupported: str | None = None
    uses: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    bound: bool = False  # the floor: a bound on the last point, not a result
    plans: set[str] = field(default_factory=set)  # digests of the plans its runs started with
    last_plans: set[str] = field(default_factory=set)  # digests of those plans' last time point

    def median(self, what: str) -> list[float]:
        series = [getattr(a, what) for a in self.attempts]
        return [statistics.median(values) for values in zip(*series)] if series else []

    @property
    def correct(self) -> bool:
        return bool(self.attempts) and all(a.correct for a in self.attempts)

    def objective(self, weights: Sequence[float]) -> float:
        return math.fsum(w * c for w, c in zip(weights, self.median("cpu")))

    def summary(self, weights: Sequence[float]) -> dict[str, Any]:
        if self.unsupported is not None:
            return {"unsupported": self.unsupported}
        return {
            "uses": self.uses,
            **({"bound": "the batch plan over the last interval's rows alone: a floor, not the result"}
               if self.bound else {}),
            "plans": sorted(self.plans),
            "correct": self.correct,
            "wrong": [a.detail for a in self.attempts if not a.correct],
            "cpu_median": self.median("cpu"),
            "wall_median": self.median("wall"),
            "objective": self.objective(weights),
            "runs": [{"cpu": a.cpu, "wall": a.wall} for a in self.attempts],
            **({"read_bytes_median": self.median("read_bytes"), "bound_bytes_median": self.median("bound_bytes")}
               if all(a.read_bytes for a in self.attempts) else {}),
            **({"landing_cpu_median": self.median("landing")} if all(a.landing for a in self.attempts) else {}),
        }


def selected_bytes(results: Sequence[PointResult]) -> tuple[list[float], list[float]]:
    """Per time point of a simulated cycle: the bytes its fragments selected to read (each source
    read's landed intervals, each state read's folder, or what a pruned read took of them, from
    the committed manifests' inventories), and the bound a plan reading only what the point's
    data touches would read: the intervals landed at the point and what its pruned reads took."""
    read: list[float] = []
    bound: list[float] = []
    before: dict[str, Any] = {}
    for result in results:
        manifest = result.manifest
        inventory = manifest.get("inventory", {})

        def size(path: str) -> float:
            return float(sum(inventory.get(path, {}).get("files", {}).values()))

        index = int(manifest["index"])
        states = {s["id"]: s for s in before.get("states", [])} | {s["id"]: s for s in manifest.get("states", [])}
        pruned = {p["read"]: p for f in manifest.get("fragments", []) for p in f.get("pruned_reads", [])}
        total = 0.0
        plan = result.plan
        for fragment in plan.at(index) if plan is not None else []:
            for r in fragment.sources:
                paths = [f"landing/{r.scan.table}/i={i:03d}" for i in range(r.start + 1, r.end + 1)]
                total += pruned[r.view]["bytes_read"] if r.view in pruned else sum(size(p) for p in paths)
            for state_id in fragment.states:
                if state_id in pruned:
                    total += pruned[state_id]["bytes_read"]
                elif state_id in states:
                    total += float(states[state_id].get("bytes", 0))
        landed = sum(size(f"landing/{name}/i={index:03d}") for name in manifest.get("landed", {}))
        read.append(total)
        bound.append(landed + sum(float(p["bytes_read"]) for p in pruned.values()))
        before = manifest
    return read, bound


def _tempura(spark: SparkSession, spec: Spec, method: str, workdir: Path, contender: Contender,
             references: References) -> Attempt:
    run = StandingQuery(spec, workdir, spark).simulate(method, check=True, references=references)
    contender.uses = run.uses
    contender.plans.add(run.plan_digest)
    contender.last_plans.add(run.last_digest)
    wrong = [f"t{p.index}: {p.detail}" for p in run.points if p.delivered and not p.correct]
    read, bound = selected_bytes(run.results)
    landing = [float(r.manifest["run"].get("landing_cpu_seconds") or 0.0) for r in run.results]
    return Attempt([p.cpu_seconds for p in run.points], [p.wall_seconds for p in run.points], not wrong, "; ".join(wrong),
                   read, bound, landing)


def _native(spark: SparkSession, spec: Spec, workdir: Path, references: References) -> Attempt:
    from benchmarks.native_streaming import NativeStreaming

    native = NativeStreaming(spark, spec, workdir / "native" / spec.name)
    cycle = spec.cycle(0)
    assert cycle is not None
    points = native.run()
    wrong = []
    for point in points:
        if point.index not in cycle.time_points.deliver:
            continue
        expected = references.at(spec, cycle, point.index).rows
        outcome = compare_results(expected, [tuple(r) for r in point.read(spark).collect()])
        if not outcome.equal:
            wrong.append(f"t{point.index}: {outcome.reason}")
    return Attempt([p.cpu_seconds for p in points], [p.wall_seconds for p in points], not wrong, "; ".join(wrong))


def run_scenario(spark: SparkSession, spec: Spec, workdir: Path, repeat: int,
                 contenders: Sequence[str] = CONTENDERS, log: Callable[[str], None] = print,
                 warmup: bool = True) -> dict[str, Contender]:
    """Every contender on ``spec``: a warm-up cycle each (unless ``warmup`` is off; a wrong result
    there is logged, and shows again in the measured runs), then ``repeat`` times, alternating."""
    from benchmarks.floor import Floor
    from benchmarks.native_streaming import NativeStreaming
    from tempura.errors import TempuraError

    found = {name: Contender(name, bound=name == FLOOR) for name in contenders}
    if "spark-streaming" in found:
        found["spark-streaming"].unsupported = NativeStreaming(spark, spec, workdir / "native" / spec.name).unsupported()
        if found["spark-streaming"].unsupported:
            log(f"{spec.name}: spark-streaming unsupported: {found['spark-streaming'].unsupported}")
    floor: Floor | None = None
    if FLOOR in found:
        try:
            floor = Floor(spark, spec, workdir / FLOOR)  # its own landing: the batch contender clears its own
        except TempuraError as error:
            found[FLOOR].unsupported = str(error)
            log(f"{spec.name}: floor unsupported: {error}")
    runnable = [c for c in contenders if found[c].unsupported is None]
    references = References(spark, spec)  # each time point's spark.sql once, for every contender

    def attempt_of(name: str) -> Attempt:
        if name == "spark-streaming":
            return _native(spark, spec, workdir, references)
        if name == FLOOR:
            assert floor is not None
            work = floor.measure(FLOOR)
            before = [0.0] * (floor.k - 1)
            return Attempt(before + [work.cpu_seconds], before + [work.wall_seconds], True)
        return _tempura(spark, spec, name, workdir, found[name], references)

    if warmup:
        for name in runnable:
            started = time.perf_counter()
            attempt = attempt_of(name)
            log(f"{spec.name} warm-up {name}: {time.perf_counter() - started:.1f}s elapsed, {attempt.verdict} (not measured)")
    for rep in range(repeat):
        for name in round_order(runnable, rep):
            settle(spark)
            started = time.perf_counter()
            attempt = attempt_of(name)
            found[name].attempts.append(attempt)
            log(f"{spec.name} run {rep + 1}/{repeat} {name}: cpu {sum(attempt.cpu):.2f}s, "
                f"{time.perf_counter() - started:.1f}s elapsed, {attempt.verdict}")
    return found


def verdicts(contenders: dict[str, Contender], weights: Sequence[float]) -> dict[str, Any]:
    """The ratios of ``auto`` to the others, and whether the targets are met."""
    auto = contenders.get("auto")
    others = {n: c for n, c in contenders.items()
              if n != "auto" and c.unsupported is None and c.correct and not c.bound}
    if auto is None or not auto.correct or not others:
        return {"comparable": False}
    last = auto.median("cpu")[-1]
    best_name = min(others, key=lambda n: others[n].objective(weights))
    best = others[best_name].objective(weights)
    same = [n for n, c in others.items() if c.plans and c.plans == auto.plans]
    same_last = [n for n, c in others.items() if c.last_plans and c.last_plans == auto.last_plans]
    out: dict[str, Any] = {
        "comparable": True,
        "auto_objective": auto.objective(weights),
        "best_other": best_name,
        "ratio_objective_auto_to_best_other": auto.objective(weights) / best if best > 0 else None,
        # running the best contender's very plan is its choice: what the runs differ by is noise
        "objective_target_met": auto.objective(weights) <= best or best_name in same,
        "same_plan_as": same,
        "same_last_point_as": same_last,
        "last_point_cpu": {n: c.median("cpu")[-1] for n, c in others.items()} | {"auto": last},
    }
    if "batch" in others and others["batch"].median("cpu")[-1] > 0:
        out["ratio_last_point_auto_to_batch"] = last / others["batch"].median("cpu")[-1]
    landed = {n: c.median("landing")[-1] for n, c in (others | {"auto": auto}).items() if all(a.landing for a in c.attempts)}
    if landed:  # beside the fragments' CPU: the same for every plan, but for intervals landed laid out
        out["last_point_landing_cpu"] = landed
    if all(a.read_bytes for a in auto.attempts):
        read, bound = auto.median("read_bytes")[-1], auto.median("bound_bytes")[-1]
        out["last_point_bytes"] = {"read": read, "delta_and_touched": bound,
                                   "ratio": read / bound if bound > 0 else None}
        out["bytes_target_met"] = bound > 0 and read <= BYTES_TARGET * bound
    floor = contenders.get(FLOOR)
    if floor is not None and floor.unsupported is None and floor.attempts:
        least = floor.median("cpu")[-1]
        out["last_point_floor"] = least
        out["ratio_last_point_auto_to_floor"] = last / least if least > 0 else None
        if "batch" in others and others["batch"].median("cpu")[-1] > 0:
            out["ratio_last_point_floor_to_batch"] = least / others["batch"].median("cpu")[-1]
    out["last_point_target_met"] = (
        out.get("ratio_last_point_auto_to_batch", math.inf) <= LAST_POINT_TARGET
        and all(last <= others[n].median("cpu")[-1] or n in same_last for n in ("ivm", "spark-streaming") if n in others))
    return out


def figure(results: dict[str, Any]) -> Any:
    """Median executor CPU per time point of each contender, one panel per scenario, each
    contender in its colour in every panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    cols = min(4, len(names)) or 1
    rows = math.ceil(len(names) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        contenders = results[name]["contenders"]
        shown = [(n, c) for n, c in contenders.items() if "cpu_median" in c]
        width = 0.8 / max(1, len(shown))
        k = max((len(c["cpu_median"]) for _, c in shown), default=0)
        for j, (n, c) in enumerate(shown):
            xs = [i + 1 - 0.4 + width * (j + 0.5) for i in range(len(c["cpu_median"]))]
            ax.bar(xs, c["cpu_median"], width, color=colour(n), label=n + ("" if c["correct"] else " (wrong)"))
        time_point_axis(ax, k)
        ax.set_title(name, fontsize=10)
        ax.set_ylabel("CPU s (median)")
        columns = min(3, len(shown)) or 1  # the legend in rows above the tallest bar, covering none
        ax.set_ylim(top=ax.get_ylim()[1] * (1.02 + 0.11 * math.ceil(len(shown) / columns)))
        ax.legend(fontsize=7, ncols=columns, loc="upper left")
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def chart(results: dict[str, Any], path: Path) -> None:
    """:func:`figure` as a PNG at ``path``."""
    import matplotlib.pyplot as plt

    fig = figure(results)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(spark: SparkSession, out: Path, workdir: Path, scale: float, repeat: int, scenarios: Sequence[str],
        contenders: Sequence[str] = CONTENDERS, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole benchmark; writes ``incremental-sf{scale}.json`` and ``.png`` into ``out``."""
    from scenarios import prepared_scenario

    results: dict[str, Any] = {}
    for name in scenarios:
        log(f"{name}: data at scale {scale:g}")
        spec = StandingQuery(prepared_scenario(spark, name, workdir / "scenarios", scale), workdir, spark).spec
        weights = spec.weights()
        found = run_scenario(spark, spec, workdir, repeat, contenders, log)
        results[name] = {
            "weights": list(weights),
            "contenders": {n: c.summary(weights) for n, c in found.items()},
            "verdict": verdicts(found, weights),
        }
    out.mkdir(parents=True, exist_ok=True)
    stem = f"incremental-sf{scale:g}"
    report = {"scale": scale, "repeat": repeat, "contenders": list(contenders), "scenarios": results,
              "files": [str(out / f"{stem}.json"), str(out / f"{stem}.png")]}
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2, default=str))
    chart(results, out / f"{stem}.png")
    return report


__all__ = ["CONTENDERS", "DEFAULT_SCENARIOS", "FLOOR", "run", "run_scenario", "verdicts"]
