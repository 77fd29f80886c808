"""Calibrating the fixed cost of a stage from a standing query's run history.

The cost model prices two kinds of work: per row and per byte (the Hive seed's constants), and a
fixed amount per Spark stage (``CostConstants.stage``). How much executor CPU one model
nanosecond of the first kind stands for differs from query to query (the byte constants assume
row-oriented files; Spark reads columnar ones, compressed, and skips columns), so no single
stage constant weighs the two kinds right for every query. A job's history has what it takes to
weigh them for *its* query: for each fragment that ran, the model's estimate split into its
variable part ``x`` (seconds) and the stages it charged ``s``, against the executor CPU seconds
``y`` Spark measured.

:func:`fit` finds ``α, β ≥ 0`` with ``y ≈ α·x + β·s``, by least squares on the relative error
(each fragment weighs the same, whatever its size): ``α`` is executor seconds per model second,
``β`` executor seconds per stage. The stage constant that prices a stage the way the history
does, in the model's own units, is ``β / α`` (seconds, times 10⁹ for nanoseconds). Only the ratio
matters to the planner: scaling every constant alike changes no choice.

The fit is refused (the declared constant stays) when it cannot tell the two kinds apart:

- fewer than :data:`MIN_FRAGMENTS` fragments with measurable CPU time;
- the two columns nearly proportional (every fragment with about the same variable work per
  stage): ``1 − cos²`` of the weighted columns below :data:`MIN_SPREAD`;
- a coefficient that is not positive (more stages would mean less CPU, or bytes would be free).

The result is kept within :data:`BOUNDS` of the declared value, so that one odd history cannot
take the model to an extreme. A spec that sets ``cost: {stage: …}`` pins the constant: it is
then never calibrated.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from tempura.cost.model import CostConstants

MIN_FRAGMENTS = 4
MIN_CPU_SECONDS = 0.005  # fragments measured below this are noise, left out
MIN_SPREAD = 0.05
WINDOW = 200  # the most recent fragments of the history that are used
BOUNDS = 100.0  # the calibrated constant stays within this factor of the declared one


@dataclass(frozen=True)
class Sample:
    """One fragment as it ran: model seconds of variable work, stages charged, CPU seconds."""

    variable: float
    stages: float
    cpu: float


@dataclass(frozen=True)
class Calibration:
    """The outcome of a fit: the stage constant (model ns) or ``None``, and why."""

    stage: float | None
    fragments: int  # the samples the fit used
    per_model_second: float = math.nan  # α: executor seconds per model second of variable work
    per_stage: float = math.nan  # β: executor seconds per stage
    error: float = math.nan  # median relative error of the fitted estimates
    reason: str = ""

    def describe(self, declared: float) -> str:
        """One line for ``tempura plan`` and the run history."""
        if self.stage is None:
            return f"stage cost not calibrated ({self.reason}); {declared / 1e9:.3g} s per stage as declared"
        return (f"stage cost calibrated from {self.fragments} fragments: {self.stage / 1e9:.3g} s per stage "
                f"(declared {declared / 1e9:.3g} s; one stage measured {self.per_stage * 1e3:.3g} ms of CPU, one model "
                f"second of work {self.per_model_second * 1e3:.3g} ms; median error {self.error:.0%}){self.reason}")


def samples(rows: Iterable[Mapping[str, Any]]) -> list[Sample]:
    """The usable fragments of history rows (``History.fragments()``): those with the estimate's
    split recorded and CPU time above :data:`MIN_CPU_SECONDS`, the most recent :data:`WINDOW`."""
    out = []
    for row in rows:
        values: list[Any] = [row.get(k) for k in ("estimated_seconds", "estimated_fixed_seconds", "estimated_stages", "cpu_seconds")]
        if any(value is None for value in values):
            continue
        estimated, fixed, stages, cpu = (float(value) for value in values)
        variable = estimated - fixed
        if cpu >= MIN_CPU_SECONDS and stages > 0 and variable > 0 and math.isfinite(variable):
            out.append(Sample(variable, stages, cpu))
    return out[-WINDOW:]


def fit(found: Sequence[Sample], declared: float) -> Calibration:
    """The stage constant (model nanoseconds) the samples support, within :data:`BOUNDS` of
    ``declared``; ``stage=None`` with the reason when they do not determine it."""
    n = len(found)
    if n < MIN_FRAGMENTS:
        return Calibration(None, n, reason=f"{n} fragment{'s' if n != 1 else ''} measured, {MIN_FRAGMENTS} needed")
    u = [s.variable / s.cpu for s in found]
    v = [s.stages / s.cpu for s in found]
    uu, vv, uv = math.fsum(a * a for a in u), math.fsum(b * b for b in v), math.fsum(a * b for a, b in zip(u, v))
    su, sv = math.fsum(u), math.fsum(v)
    det = uu * vv - uv * uv
    if det <= MIN_SPREAD * uu * vv:
        return Calibration(None, n, reason="the fragments' work per stage is too alike to tell stages from bytes")
    alpha = (su * vv - sv * uv) / det
    beta = (sv * uu - su * uv) / det
    if alpha <= 0 or beta <= 0:
        which = "variable work" if alpha <= 0 else "stages"
        return Calibration(None, n, alpha, beta, reason=f"the fit gives {which} no positive cost")
    errors = sorted(abs(alpha * s.variable + beta * s.stages - s.cpu) / s.cpu for s in found)
    stage = beta / alpha * 1e9
    note = ""
    low, high = declared / BOUNDS, declared * BOUNDS
    if declared > 0 and not low <= stage <= high:
        note = f", held to {BOUNDS:.0f}x the declared value from {stage / 1e9:.3g} s"
        stage = min(max(stage, low), high)
    return Calibration(stage, n, alpha, beta, errors[len(errors) // 2], note)


def calibrate(rows: Iterable[Mapping[str, Any]], declared: float) -> Calibration:
    """:func:`fit` over the usable fragments of history ``rows``."""
    return fit(samples(rows), declared)


def calibrated(constants: CostConstants, pinned: Iterable[str], rows: Iterable[Mapping[str, Any]]
               ) -> tuple[CostConstants, Calibration | None]:
    """``constants`` with the stage cost the history ``rows`` support, and the fit (``None`` when
    ``stage`` is among the ``pinned`` names: set by the spec or the command line)."""
    if "stage" in set(pinned):
        return constants, None
    found = calibrate(rows, constants.stage)
    if found.stage is None:
        return constants, found
    return dataclasses.replace(constants, stage=found.stage), found


__all__ = ["BOUNDS", "MIN_FRAGMENTS", "Calibration", "Sample", "calibrate", "calibrated", "fit", "samples"]
