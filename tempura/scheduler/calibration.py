"""Calibrating the fixed cost of a stage from the run histories.

The cost model prices two kinds of work: per row and per byte (the Hive seed's constants), and a
fixed amount per Spark stage (``CostConstants.stage``). How much executor CPU one model
nanosecond of the first kind stands for differs from query to query (the byte constants assume
row-oriented files; Spark reads columnar ones, compressed, and skips columns; a ``LIKE`` is
priced like any filter), while a stage's fixed work is much the same whatever the query. So no
single stage constant weighs the two kinds right for every query, and the histories have what it
takes to weigh them per query: for each fragment that ran, the model's estimate split into its
variable part ``x`` (seconds) and the stages it charged ``s``, against the executor CPU seconds
``y`` Spark measured.

:func:`fit` finds, by least squares on the relative error (each fragment weighs the same,
whatever its size), ``y ≈ α_j·x + β·s``: a rate ``α_j`` per job (executor seconds per model
second of its query's work) and one rate ``β`` per stage, shared by the jobs of a workdir (one
Spark setup). The job's own fragments fit its ``α``; every job's fragments fit ``β``, so a job
whose fragments all have one shape (a recomputation) is calibrated with the stage cost its
neighbours measured. The stage constant that prices a stage the way the histories do, in the
job's model units, is ``β / α`` (seconds, times 10⁹ for nanoseconds). Only the ratio matters to
the planner: scaling every constant alike changes no choice.

The fit is refused (the declared constant stays) when it cannot tell the two kinds apart:

- fewer than :data:`MIN_OWN` fragments of the job with measurable CPU time, or fewer than
  :data:`MIN_FRAGMENTS` in all plus one per other job (a job of one fragment counts for
  nothing: its own rate fits it exactly);
- stages that the jobs' variable work explains (every fragment of a job with about the same
  variable work per stage): the squared norm of the stage column left after each job's work
  column is projected out, below :data:`MIN_SPREAD` of its whole;
- a rate that is not positive (more stages would mean less CPU, or work would be free); another
  job whose own rate comes out negative is left out of the fit first;
- a job whose fragments one rate of work does not describe: each of its fragments, held out, is
  predicted from the rate its other fragments fit (with the shared ``β``), and one predicted more
  than :data:`MAX_MISS` times off refuses the fit. The model's estimate of variable work need not
  be in proportion to the CPU across fragment shapes (a broadcast probe of a small delta against
  a recomputation's joins and aggregations over every row, say); a rate fitted to one shape and
  applied to the other plans would then weigh stages against work wrongly, and flip a plan the
  evidence does not support.

The result is kept within :data:`BOUNDS` of the declared value, so that one odd history cannot
take the model to an extreme. A spec that sets ``cost: {stage: …}`` pins the constant: it is
then never calibrated. From one time point to the next in a cycle the runner moves it at most
:data:`MAX_STEP` times either way (:func:`damped`): a fit over a few fragments more can swing,
and each swing would flip plans the evidence does not support.

**The keys a probe touches** (``CostConstants.probe_keys``). A pruned read records the buckets it
read against those the plan expected from its estimate of the probe's distinct keys
(``estimated_buckets_read``, made with the factor then in use, ``probe_keys``). Where a layout
prunes, the keys are few against the buckets and the buckets touched grow with the keys, so
``Σ measured / Σ (expected / factor)`` over the job's recent pruned reads is what the raw key
estimates are off by: the factor the next plan multiplies them by (at least :data:`MIN_OWN`
reads; within :data:`KEY_BOUNDS` either way; ``cost: {probe_keys: …}`` pins it). A change feed's
delta, where a deletion and its re-insertion count as two keys, is the case it corrects most.

**What a model second is worth** (:func:`model_factor`, :func:`model_factor_words`): the
executor CPU seconds measured against the model's estimate, summed over the job's fragments
that ran — the one factor ``tempura history`` and ``tempura plan`` show beside the model's
figures, so that a user can read an estimate in measured seconds.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from tempura.cost.model import CostConstants
from tempura.runtime.storage import Location
from tempura.scheduler.history import history_at

MIN_OWN = 2  # fragments of the job itself: what its own rate is fitted to
MIN_FRAGMENTS = 4  # fragments in all, with those of the workdir's other jobs
MIN_CPU_SECONDS = 0.005  # fragments measured below this are noise, left out
MIN_SPREAD = 0.05
WINDOW = 200  # the most recent fragments of each history that are used
BOUNDS = 100.0  # the calibrated constant stays within this factor of the declared one
MAX_MISS = 1.5  # a held-out fragment predicted further off than this factor refuses the fit
KEY_BOUNDS = 10.0  # the calibrated key factor stays within this factor of 1
MAX_STEP = 3.0  # from one time point's plan to the next, the fitted stage cost moves at most this factor


def damped(fitted: float, before: float | None) -> tuple[float, str | None]:
    """The stage cost a time point plans with when the fit gives ``fitted`` and the time point
    before planned with ``before`` (model ns; ``None``: no time point before in the cycle): at
    most :data:`MAX_STEP` times either way from ``before``, so that the fit over a few more
    fragments cannot swing the plans back and forth (1 s, then 70 s, then 2 s per stage); a
    fit that stays where it is gets there in a few time points. The note says when it held."""
    if before is None or before <= 0 or fitted <= 0:
        return fitted, None
    held = min(max(fitted, before / MAX_STEP), before * MAX_STEP)
    if held == fitted:
        return fitted, None
    return held, (f"stage cost fitted at {fitted / 1e9:.3g} s, moved at most {MAX_STEP:g}x from the time point "
                  f"before's {before / 1e9:.3g} s: {held / 1e9:.3g} s")


@dataclass(frozen=True)
class Sample:
    """One fragment as it ran: model seconds of variable work, stages charged, CPU seconds, and
    the job (history) it belongs to."""

    variable: float
    stages: float
    cpu: float
    job: str = ""


@dataclass(frozen=True)
class Calibration:
    """The outcome of a fit: the stage constant (model ns) or ``None``, and why."""

    stage: float | None
    fragments: int  # the job's own samples the fit used
    pooled: int = 0  # all samples, the other jobs' included
    per_model_second: float = math.nan  # α: the job's executor seconds per model second of variable work
    per_stage: float = math.nan  # β: executor seconds per stage, shared by the jobs
    error: float = math.nan  # median relative error of the job's fitted estimates
    reason: str = ""
    probe_keys: float | None = None  # the calibrated factor on probes' key estimates, if there is one
    probe_reads: int = 0  # the pruned reads it was calibrated from

    def describe(self, declared: float) -> str:
        """One line for ``tempura plan`` and the run history."""
        keys = (f"; probes' key estimates times {self.probe_keys:.3g} (the buckets {self.probe_reads} pruned reads "
                f"touched against the expected)") if self.probe_keys is not None else ""
        if self.stage is None:
            return f"stage cost not calibrated ({self.reason}); {declared / 1e9:.3g} s per stage as declared{keys}"
        others = f", {self.pooled - self.fragments} of other jobs for the cost of a stage" if self.pooled > self.fragments else ""
        return (f"stage cost calibrated from {self.fragments} fragments{others}: {self.stage / 1e9:.3g} s per stage "
                f"(declared {declared / 1e9:.3g} s; one stage measured {self.per_stage * 1e3:.3g} ms of CPU, one model "
                f"second of work {self.per_model_second * 1e3:.3g} ms; median error {self.error:.0%}){self.reason}{keys}")


def samples(rows: Iterable[Mapping[str, Any]], job: str = "") -> list[Sample]:
    """The usable fragments of history rows (``History.fragments()``): those with the estimate's
    split recorded and CPU time above :data:`MIN_CPU_SECONDS`, the most recent :data:`WINDOW`."""
    out = []
    for row in rows:
        values: list[Any] = [row.get(k) for k in ("estimated_seconds", "estimated_fixed_seconds", "estimated_stages", "cpu_seconds")]
        if any(value is None for value in values):
            continue
        estimated, fixed, stages, cpu = (float(value) for value in values)
        sample = Sample(estimated - fixed, stages, cpu, job)
        if cpu >= MIN_CPU_SECONDS and _usable(sample):
            out.append(sample)
    return out[-WINDOW:]


def _weighted(group: Sequence[Sample]) -> tuple[list[float], list[float]]:
    """The work and stage columns of a job, each fragment divided by its CPU (``u = x/y``,
    ``v = s/y``): least squares on them is least squares on the relative error."""
    return [s.variable / s.cpu for s in group], [s.stages / s.cpu for s in group]


def _rate_per_stage(jobs: Iterable[Sequence[Sample]]) -> tuple[float, float]:
    """``β`` of the joint fit over ``jobs``, and the share of the stage column (its squared norm)
    that the jobs' own work columns leave to it."""
    # each job's α_j(β) = (Σu − β·Σuv) / Σu²; the residual of a sample is then β·b − a, with
    # a = 1 − u·Σu/Σu² and b = v − u·Σuv/Σu²
    ab = bb = vv = 0.0
    for group in jobs:
        u, v = _weighted(group)
        uu, su, uv = math.fsum(x * x for x in u), math.fsum(u), math.fsum(x * y for x, y in zip(u, v))
        for x, y in zip(u, v):
            a, b = 1.0 - x * su / uu, y - x * uv / uu
            ab, bb, vv = ab + a * b, bb + b * b, vv + y * y
    return (ab / bb if bb > 0 else math.nan), (bb / vv if vv > 0 else 0.0)


def _rate_of_work(group: Sequence[Sample], beta: float) -> float:
    """``α`` of one job given ``β``."""
    u, v = _weighted(group)
    return (math.fsum(u) - beta * math.fsum(x * y for x, y in zip(u, v))) / math.fsum(x * x for x in u)


def fit(own: Sequence[Sample], declared: float, others: Sequence[Sample] = ()) -> Calibration:
    """The stage constant (model nanoseconds) for the job of ``own``, within :data:`BOUNDS` of
    ``declared``; ``stage=None`` with the reason when the samples do not determine it.

    ``others``: fragments of other jobs run on the same Spark (their ``job`` tells them apart).
    Each job has its own rate ``α_j`` (its query's work per model second), and all share the rate
    per stage ``β`` (a property of the cluster). The fit minimises ``Σ (α_j·x + β·s − y)² / y²``:
    for a given ``β`` each ``α_j`` has a closed form, and what remains is linear in ``β``.

    A job of one fragment says nothing about ``β`` (its ``α`` fits it exactly), so only jobs of
    two or more count; another job whose own rate comes out negative contradicts the model and is
    left out, once. The fit needs :data:`MIN_FRAGMENTS` fragments in one job and one more per
    other job: residual degrees of freedom beyond the rates themselves."""
    own = [s for s in own if _usable(s)]
    n = len(own)
    if n < MIN_OWN:
        return Calibration(None, n, n, reason=f"{n} fragment{'s' if n != 1 else ''} of this job measured, {MIN_OWN} needed")
    own_job = own[0].job
    if any(sample.job != own_job for sample in own):
        raise ValueError("the job's own samples must all carry its job")
    grouped: dict[str, list[Sample]] = {}
    for sample in others:
        if sample.job != own_job and _usable(sample):
            grouped.setdefault(sample.job, []).append(sample)
    jobs = [own, *(group for group in grouped.values() if len(group) >= 2)]
    beta, spread = _rate_per_stage(jobs)
    if beta > 0:
        kept = [jobs[0], *(group for group in jobs[1:] if _rate_of_work(group, beta) > 0)]
        if len(kept) < len(jobs):
            jobs = kept
            beta, spread = _rate_per_stage(jobs)
    pooled = sum(len(group) for group in jobs)
    if pooled - len(jobs) < MIN_FRAGMENTS - 1:
        return Calibration(None, n, pooled, reason=f"{pooled} fragments measured in {len(jobs)} job{'s' if len(jobs) > 1 else ''}, "
                                                   f"{MIN_FRAGMENTS} needed in one job (one more per other job)")
    if spread <= MIN_SPREAD:
        return Calibration(None, n, pooled, reason="the fragments' work per stage is too alike to tell stages from bytes")
    alpha = _rate_of_work(own, beta)
    if alpha <= 0 or not beta > 0:
        which = "this job's variable work" if alpha <= 0 else "stages"
        return Calibration(None, n, pooled, alpha, beta, reason=f"the fit gives {which} no positive cost")
    miss = _held_out_miss(own, beta)
    if miss is not None:
        return Calibration(None, n, pooled, alpha, beta, reason=miss)
    errors = sorted(abs(alpha * s.variable + beta * s.stages - s.cpu) / s.cpu for s in own)
    stage = beta / alpha * 1e9
    note = ""
    low, high = declared / BOUNDS, declared * BOUNDS
    if declared > 0 and not low <= stage <= high:
        note = f", held to {BOUNDS:.0f}x the declared value from {stage / 1e9:.3g} s"
        stage = min(max(stage, low), high)
    return Calibration(stage, n, pooled, alpha, beta, errors[len(errors) // 2], note)


def _held_out_miss(own: Sequence[Sample], beta: float) -> str | None:
    """Why one rate of work does not describe the job's fragments, or ``None`` when it does:
    the fragment predicted worst (beyond :data:`MAX_MISS` either way) from the rate of the others,
    its stages costed at ``beta``."""
    worst, why = MAX_MISS, None
    for i, sample in enumerate(own):
        alpha = _rate_of_work([*own[:i], *own[i + 1:]], beta)
        predicted = max(alpha, 0.0) * sample.variable + beta * sample.stages
        off = max(predicted / sample.cpu, sample.cpu / predicted)
        if off > worst:
            worst = off
            why = (f"one rate of work does not describe this job's fragments: held out, one of {sample.variable:.3g} "
                   f"model seconds and {sample.stages:g} stages is predicted at {predicted:.3g} s of CPU from the "
                   f"others, {sample.cpu:.3g} s measured")
    return why


def _usable(sample: Sample) -> bool:
    return all(math.isfinite(x) and x > 0 for x in (sample.variable, sample.stages, sample.cpu))


def other_jobs(workdir: Location, own: Location) -> dict[str, list[dict[str, Any]]]:
    """The fragments of every history under ``workdir``'s jobs but ``own`` (each job's and each
    of its simulations', :func:`~tempura.runtime.store.job_histories`), read without writing."""
    from tempura.runtime.store import job_histories

    def key(path: Location) -> str:
        return str(path.resolve()) if isinstance(path, Path) else str(path)

    mine = key(own)
    return {str(path): history_at(path, read_only=True).fragments() for path in job_histories(workdir)
            if key(path) != mine}


def calibrate(rows: Iterable[Mapping[str, Any]], declared: float,
              other_jobs: Mapping[str, Iterable[Mapping[str, Any]]] | None = None) -> Calibration:
    """:func:`fit` over the usable fragments of the job's history ``rows`` and, for the cost of a
    stage, those of ``other_jobs`` (name -> history rows)."""
    others = [s for name, found in (other_jobs or {}).items() for s in samples(found, name or "?")]
    return fit(samples(rows), declared, others)


def for_job(constants: CostConstants, pinned: Iterable[str], workdir: Location, history: Location
            ) -> tuple[CostConstants, Calibration | None]:
    """:func:`calibrated` for the job whose history is at ``history``, with the fragments of
    every other history under ``workdir``."""
    return calibrated(constants, pinned, history_at(history, read_only=True).fragments(), other_jobs(workdir, history))


def key_factor(rows: Iterable[Mapping[str, Any]]) -> tuple[float | None, int]:
    """The factor on probes' key estimates the history ``rows`` support (``None`` below
    :data:`MIN_OWN` pruned reads), and the pruned reads it rests on: the buckets measured
    against the raw estimate's (the recorded expectation divided by the factor it was made with)."""
    found = []
    for row in rows:
        measured, expected = row.get("pruned_buckets_read"), row.get("estimated_buckets_read")
        if measured is None or expected is None or float(expected) <= 0:
            continue
        found.append((float(measured), float(expected) / float(row.get("probe_keys") or 1.0)))
    found = found[-WINDOW:]
    if len(found) < MIN_OWN:
        return None, len(found)
    ratio = math.fsum(m for m, _ in found) / math.fsum(e for _, e in found)
    return min(max(ratio, 1.0 / KEY_BOUNDS), KEY_BOUNDS), len(found)


def model_factor(rows: Iterable[Mapping[str, Any]]) -> tuple[float | None, int]:
    """Measured executor CPU seconds per second of the model's estimate, over the fragments of
    history ``rows`` with both figures (the most recent :data:`WINDOW`), and how many there are;
    ``None`` when no fragment has both."""
    found = [(float(row["cpu_seconds"]), float(row["estimated_seconds"])) for row in rows
             if row.get("cpu_seconds") is not None and row.get("estimated_seconds") is not None
             and float(row["estimated_seconds"]) > 0]
    found = found[-WINDOW:]
    estimated = math.fsum(e for _, e in found)
    if not found or estimated <= 0:
        return None, 0
    return math.fsum(c for c, _ in found) / estimated, len(found)


def model_factor_words(rows: Iterable[Mapping[str, Any]]) -> str:
    """One line: what a second of the model's estimate came to in measured CPU seconds, and over
    how many fragments (or that nothing is measured yet)."""
    factor, n = model_factor(rows)
    if factor is None:
        return ("calibration: the model's estimates are in model seconds; no fragment of this job is measured yet, "
                "so how they compare with measured CPU seconds is not known")
    return (f"calibration: one second of the model's estimate came to {factor:.3g} s of measured CPU "
            f"(over the {n} fragment{'s' if n != 1 else ''} of this job that ran)")


def calibrated(constants: CostConstants, pinned: Iterable[str], rows: Iterable[Mapping[str, Any]],
               other_jobs: Mapping[str, Iterable[Mapping[str, Any]]] | None = None
               ) -> tuple[CostConstants, Calibration | None]:
    """``constants`` with the stage cost the history ``rows`` (and ``other_jobs``') support and
    the factor on probes' key estimates its pruned reads support, and the fit (``None`` when
    both ``stage`` and ``probe_keys`` are among the ``pinned`` names: set by the spec or the
    command line)."""
    pinned, rows = set(pinned), list(rows)
    found: Calibration | None = None
    if "stage" not in pinned:
        found = calibrate(rows, constants.stage, other_jobs)
        if found.stage is not None:
            constants = dataclasses.replace(constants, stage=found.stage)
    if "probe_keys" not in pinned:
        factor, reads = key_factor(rows)
        if factor is not None:
            constants = dataclasses.replace(constants, probe_keys=factor)
            found = dataclasses.replace(found or Calibration(None, 0, reason="set by the spec"), probe_keys=factor,
                                        probe_reads=reads)
    return constants, found


__all__ = ["BOUNDS", "KEY_BOUNDS", "MAX_MISS", "MIN_FRAGMENTS", "MIN_OWN", "Calibration", "Sample", "calibrate", "calibrated", "fit",
           "for_job", "key_factor", "model_factor", "model_factor_words", "other_jobs", "samples"]
