"""Simulated cycles of a standing query under one method, measured and checked.

:func:`simulate` replays cycle 0 of a spec with the runner (``tempura run --simulate``), from a
clean job folder, under ``auto`` or a forced method, and returns what each time point did: wall
and executor CPU seconds (Spark's status store), the estimate the plan made, and — for every
delivered result — whether it equals ``spark.sql`` over that time point's snapshot
(:mod:`tempura.scheduler.reference`). The demo and ``tempura bench incremental`` compare methods
with it.

The *measured objective* of a run is the spec's objective applied to what was measured:
``Σ w_i · cpu_i``, with ``cpu_i`` the executor CPU seconds of time point ``i``; the *estimated
objective* is the first plan's ``Σ w_i · c_i``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from tempura.runtime import compare_results
from tempura.runtime.outputs import SELF_DESCRIBING, read_output
from tempura.runtime.storage import Location
from tempura.scheduler.reference import References
from tempura.scheduler.runner import PointResult, Runner
from tempura.scheduler.spec import Spec
from tempura.tvr.zset import MULT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tempura.tvr.plan import MultiTimePlan


@dataclass
class PointMeasure:
    """One time point of a simulated run."""

    index: int
    wall_seconds: float
    cpu_seconds: float
    estimated_seconds: float
    fragments: int
    delivered: bool
    correct: bool | None = None  # None: nothing delivered, or not checked
    detail: str = ""


@dataclass
class MethodRun:
    """A whole simulated cycle under one method."""

    spec: str
    method: str
    uses: str  # the rules the first plan uses (``ivm+ojv`` …)
    weights: tuple[float, ...]
    estimated_objective: float  # seconds
    points: list[PointMeasure] = field(default_factory=list)
    plan_digest: str = ""  # the first plan's fragments (time point, SQL, output): equal digests run the same work
    last_digest: str = ""  # the same of its fragments at the last time point
    results: list[PointResult] = field(default_factory=list, repr=False, compare=False)  # the runner's, per time point

    @property
    def measured_objective(self) -> float:
        """``Σ w_i · cpu_i`` in seconds."""
        return math.fsum(w * p.cpu_seconds for w, p in zip(self.weights, self.points))

    @property
    def cpu_seconds(self) -> float:
        return math.fsum(p.cpu_seconds for p in self.points)

    @property
    def wall_seconds(self) -> float:
        return math.fsum(p.wall_seconds for p in self.points)

    @property
    def correct(self) -> bool:
        """Every delivered result checked and equal to the reference."""
        return all(p.correct for p in self.points if p.delivered)

    def to_json(self) -> dict[str, Any]:
        data = asdict(dataclasses.replace(self, results=[]))
        del data["results"]
        data["measured_objective"] = self.measured_objective
        data["correct"] = self.correct
        return data


def plan_digest(plan: MultiTimePlan, at: int | None = None) -> str:
    """A digest of what ``plan`` runs (at time point ``at`` only, when given): each fragment's
    time point, Spark SQL and output. Two plans with one digest do the same work (whatever method
    label they carry)."""
    text = "\n".join(f"{f.time}|{f.delivers}|{f.keeps}|{f.sql()}" for f in plan.fragments if at is None or f.time == at)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def consolidated(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with a last column of multiplicities, the multiplicities of equal rows summed and
    the rows whose sum is 0 left out."""
    counts: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        counts[tuple(row[:-1])] += int(row[-1])
    return [(*values, m) for values, m in counts.items() if m]


def signed_difference(now: Sequence[tuple[Any, ...]], before: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The change from the bag ``before`` to the bag ``now`` as rows with multiplicities."""
    return consolidated([(*r, 1) for r in now] + [(*r, -1) for r in before])


def simulate(spark: SparkSession, spec: Spec, method: str, workdir: Location, check: bool = True,
             progress: Callable[[str, int, int], None] | None = None,
             references: References | None = None, verbose: bool = False) -> MethodRun:
    """Run cycle 0 of ``spec`` under ``method`` from scratch (an earlier simulation of the same
    method in ``workdir`` is deleted first); ``check``: compare every delivered result with
    :func:`~tempura.scheduler.reference.reference`, kept in ``references`` (given: shared with
    other runs over the same sources); ``verbose``: progress names fragments by the memo's forms
    too."""
    runner = Runner(spec, spark, workdir, method, simulate=True, progress=progress, verbose=verbose)
    with runner.lock_held():
        runner.clear()
        runner.settle_points()  # a target_lag schedule's points, chosen afresh
        spec = runner.spec
        if check and references is None:
            references = References(spark, spec)
        return _simulated(spark, spec, method, runner, references if check else None)


def _simulated(spark: SparkSession, spec: Spec, method: str, runner: Runner, references: References | None
               ) -> MethodRun:
    from pyspark.sql.types import LongType, StructField, StructType

    cycle = spec.cycle(0)
    assert cycle is not None
    results = runner.run_cycle(cycle)  # the landing checks the sources before anything is planned
    first = runner.first_plans[(cycle.label, 1)]
    run = MethodRun(spec.name, method, "+".join(first.methods), tuple(first.objective.weights),
                    first.cost.weighted / 1e9, plan_digest=plan_digest(first),
                    last_digest=plan_digest(first, at=cycle.last))
    for result in results:
        run.results.append(result)
        info = result.manifest["run"]
        point = PointMeasure(result.index, float(info["wall_seconds"]), float(info["cpu_seconds"]),
                             float(info["estimated_seconds"]), len(result.manifest.get("fragments", [])),
                             result.delivered is not None)
        if references is not None and result.delivered is not None:
            owed = references.at(spec, cycle, result.index)
            expected = owed.rows
            fmt = runner.output.format if runner.output is not None else "parquet"
            delta = first.output == "delta"
            schema = None if fmt in SELF_DESCRIBING else (
                StructType([*owed.schema.fields, StructField(MULT, LongType())]) if delta else owed.schema)
            actual = [tuple(r) for r in read_output(spark, result.delivered, fmt, schema).collect()]
            if delta:  # the change since the time point before, as signed rows
                before = references.at(spec, cycle, result.index - 1).rows if result.index > 1 else []
                expected, actual = signed_difference(expected, before), consolidated(actual)
            outcome = compare_results(expected, actual)
            point.correct, point.detail = outcome.equal, outcome.reason
        run.points.append(point)
    return run


__all__ = ["MethodRun", "PointMeasure", "consolidated", "plan_digest", "signed_difference", "simulate"]
