"""Freshness as a schedule: a ``target_lag`` spec's time points, chosen by cost.

``schedule: {start: …, target_lag: 2h, deadline: …}`` asks that a delivered result be at most
``target_lag`` old, and leaves the time points to tempura. They are a dimension of the plan
space: each candidate number of points ``n``, evenly spaced over the cycle, is planned as any
schedule is (the whole multi-time-point plan, under the job's method), and weighed:

- **work**: the plan's cost at every point, what a run does around it (landing, statistics:
  :func:`~tempura.scheduler.planning.run_overhead`), in the model's seconds, with the fixed
  start of a run by the clock (:data:`RUN_START_SECONDS`: a process and a Spark session) and
  its planning (measured as the candidate is planned: a run plans the points still to come);
- **lag**: the delivery made at ``t_i`` is current until the next one lands, at
  ``t_{i+1} + w_{i+1}`` (``w`` the run's estimated seconds), so a result grows ``Δ + w`` old
  (``Δ`` the step); the seconds during which it is older than the target,
  ``Σ max(0, Δ + w_i - target_lag)``, weigh ``lag_weight`` each.

More points cost more fixed work; fewer leave results older. :func:`choose` takes the candidate
of least ``work + lag_weight · overshoot`` (fewer points on a tie), and ``tempura plan`` prints
the table (:meth:`FreshnessChoice.text`). A job keeps its choice in ``freshness.json`` in its
folder, made at its first run (:func:`settled`), so that its time points never move under
committed ones; a changed ``target_lag``, ``start``, ``deadline`` or ``lag_weight`` is chosen
again only while nothing is committed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from tempura.errors import TempuraError
from tempura.runtime.storage import Location, Storage
from tempura.scheduler.spec import ScheduleSpec, Spec, with_points
from tempura.scheduler.spec.schedule import freshness_span, lag_points

if TYPE_CHECKING:
    from tempura.cost.model import CostConstants
    from tempura.scheduler.planning import Prepared

RUN_START_SECONDS = 6.0
"""What a run by the clock pays before any work of its own: starting a process and a local
Spark session (measured at 5–6 s on a 2-core machine). The model's estimate of a run's fixed
part; the candidates differ chiefly by how many of these they pay."""

FACTORS = (0.25, 0.5, 1, 2)
"""The candidates, as multiples of the fewest points that meet the target (:func:`lag_points`)."""

MAX_POINTS = 32
"""The most time points a candidate plans over (planning grows faster than the points: 16 take
seconds, 32 most of a minute), unless it is the fewest that meet the target."""

FILE = "freshness.json"


@dataclass(frozen=True)
class Candidate:
    """A number of time points, evenly spaced, with what it costs and how old it leaves results."""

    points: int
    every_seconds: float
    run_seconds: tuple[float, ...]  # per time point, the model's estimate of the whole run
    overshoot_seconds: float  # Σ over intervals of the seconds a result is older than the target
    worst_age_seconds: float  # the oldest a result grows
    objective: float  # work + lag_weight · overshoot

    @property
    def work_seconds(self) -> float:
        return math.fsum(self.run_seconds)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "run_seconds": list(self.run_seconds)}

    @staticmethod
    def from_json(raw: dict[str, Any]) -> Candidate:
        return Candidate(int(raw["points"]), float(raw["every_seconds"]), tuple(float(s) for s in raw["run_seconds"]),
                         float(raw["overshoot_seconds"]), float(raw["worst_age_seconds"]), float(raw["objective"]))


@dataclass(frozen=True)
class FreshnessChoice:
    """The time points chosen for a ``target_lag`` schedule, among the candidates weighed."""

    target_lag_seconds: float
    lag_weight: float
    start: str
    span_seconds: float
    chosen: Candidate
    candidates: tuple[Candidate, ...]
    reason: str

    def matches(self, schedule: ScheduleSpec) -> bool:
        """Whether the choice was made for this schedule's target, start, span and weight."""
        assert isinstance(schedule.target_lag, dt.timedelta)
        return (self.target_lag_seconds == schedule.target_lag.total_seconds() and self.start == str(schedule.start)
                and self.span_seconds == freshness_span(schedule).total_seconds() and self.lag_weight == schedule.lag_weight)

    def text(self) -> str:
        """The candidates side by side and the choice, as ``tempura plan`` prints them."""
        lines = [f"time points for target_lag {duration_words(self.target_lag_seconds)} over "
                 f"{duration_words(self.span_seconds)} from {self.start} (lag_weight {self.lag_weight:g}; "
                 "work is the model's estimate, in seconds):",
                 f"  {'points':>6}  {'every':>8}  {'work (s)':>9}  {'oldest result':>13}  "
                 f"{'past target (s)':>15}  {'objective':>9}"]
        for c in self.candidates:
            mark = "*" if c.points == self.chosen.points else " "
            lines.append(f"{mark} {c.points:>6}  {duration_words(c.every_seconds):>8}  {c.work_seconds:>9.1f}  "
                         f"{duration_words(c.worst_age_seconds):>13}  {c.overshoot_seconds:>15.1f}  {c.objective:>9.1f}")
        lines.append(f"chosen: {self.chosen.points} time points, every {duration_words(self.chosen.every_seconds)}: "
                     f"{self.reason}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"target_lag_seconds": self.target_lag_seconds, "lag_weight": self.lag_weight, "start": self.start,
                "span_seconds": self.span_seconds, "chosen": self.chosen.points,
                "candidates": [c.to_json() for c in self.candidates], "reason": self.reason}

    @staticmethod
    def from_json(raw: dict[str, Any]) -> FreshnessChoice:
        candidates = tuple(Candidate.from_json(c) for c in raw["candidates"])
        chosen = next(c for c in candidates if c.points == int(raw["chosen"]))
        return FreshnessChoice(float(raw["target_lag_seconds"]), float(raw["lag_weight"]), str(raw["start"]),
                               float(raw["span_seconds"]), chosen, candidates, str(raw["reason"]))


def duration_words(seconds: float) -> str:
    """``1h30m``, ``45m``, ``12s``: a length of time in words a schedule uses."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{seconds:.3g}s" if seconds < 10 else f"{whole}s"
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{v}{u}" for v, u in parts if v) or "0s"


def candidate_points(schedule: ScheduleSpec) -> list[int]:
    """The numbers of time points weighed: multiples (:data:`FACTORS`) of the fewest that meet
    the target, at least one, at most :data:`MAX_POINTS` (the fewest that meet it always)."""
    least = lag_points(schedule)
    found = {least}
    for factor in FACTORS:
        n = max(1, round(least * factor))
        if n <= MAX_POINTS:
            found.add(n)
    return sorted(found)


def weigh(schedule: ScheduleSpec, points: int, run_seconds: Sequence[float]) -> Candidate:
    """Candidate ``points`` with its runs' estimated seconds: the work, and how long results
    stay older than the target."""
    assert isinstance(schedule.target_lag, dt.timedelta)
    step = with_points(schedule, points).every
    assert isinstance(step, dt.timedelta)
    every = step.total_seconds()
    target = schedule.target_lag.total_seconds()
    ages = [every + w for w in run_seconds]  # the result older than t_{i-1} until t_i's lands
    overshoot = math.fsum(max(0.0, age - target) for age in ages)
    work = math.fsum(run_seconds)
    return Candidate(points, every, tuple(run_seconds), overshoot, max(ages, default=every),
                     work + schedule.lag_weight * overshoot)


def choose(schedule: ScheduleSpec, runs: Callable[[int], Sequence[float] | None]) -> FreshnessChoice:
    """The candidate of least objective, ``runs(n)`` giving each one's runs' seconds (``None``:
    no plan with that many points). The fewest points win a tie."""
    assert isinstance(schedule.target_lag, dt.timedelta)
    weighed = []
    for n in candidate_points(schedule):
        seconds = runs(n)
        if seconds is not None:
            weighed.append(weigh(schedule, n, seconds))
    if not weighed:
        raise TempuraError("schedule.target_lag: no number of time points has a plan")
    best = min(weighed, key=lambda c: (c.objective, c.points))
    least = lag_points(schedule)
    if best.overshoot_seconds == 0:
        reason = "results stay within the target" + (
            ", at the least work" if best.points == least else
            f"; fewer points would leave them older (the run itself takes {max(best.run_seconds):.1f} s)")
    else:
        fewer = [c for c in weighed if c.points < best.points]
        more = [c for c in weighed if c.points > best.points]
        why = []
        if more:
            more_c = min(more, key=lambda c: c.points)
            why.append(f"{more_c.points} points would cost {more_c.work_seconds - best.work_seconds:.1f} s more work "
                       f"to save {best.overshoot_seconds - more_c.overshoot_seconds:.1f} s past the target")
        if fewer:
            why.append(f"fewer would leave results older for longer")
        reason = (f"results are older than the target for {best.overshoot_seconds:.1f} s in all, the least objective"
                  + (f" ({'; '.join(why)})" if why else ""))
    span = freshness_span(schedule).total_seconds()
    return FreshnessChoice(schedule.target_lag.total_seconds(), schedule.lag_weight, str(schedule.start), span, best,
                           tuple(weighed), reason)


def planned_runs(base: Prepared, method: str, output: str, constants: CostConstants | None = None
                 ) -> Callable[[int], list[float] | None]:
    """Per candidate number of points, the model's seconds of each run: ``base``'s query and
    statistics planned over that many points under ``method``, the sources' rows forecast over
    its intervals as a run by the clock forecasts them, plus what a run does around its plan
    and :data:`RUN_START_SECONDS`."""
    from tempura.scheduler.planning import Forecast, Prepared, arrival_model, for_cycle, plan_spec, run_overhead

    def runs(points: int) -> list[float] | None:
        spec = with_points_of(base.spec, points)
        arrival, notes = arrival_model(spec, None, measure_data=False)
        cycle = spec.cycle(0)
        assert cycle is not None
        prepared, _ = for_cycle(Prepared(spec, base.catalog, base.query, base.estimator, arrival, notes), cycle,
                                forecast=Forecast(1))
        began = time.perf_counter()
        try:
            plans = plan_spec(prepared, [method], (), output, constants=constants)
        except TempuraError:
            return None
        planning = time.perf_counter() - began  # measured: each run plans its points to come again
        if method not in plans:
            return None
        around = run_overhead(prepared, constants)
        times = plans[method].cost.times[:points]
        return [(t + a) / 1e9 + RUN_START_SECONDS + planning * (points - i) / points
                for i, (t, a) in enumerate(zip(times, around))]

    return runs


def with_choice(spec: Spec, choice: FreshnessChoice) -> Spec:
    """``spec`` with the chosen time points."""
    schedule = with_points(spec.model.schedule, choice.chosen.points)
    return dataclasses.replace(spec, model=spec.model.model_copy(update={"schedule": schedule}))


def with_points_of(spec: Spec, points: int) -> Spec:
    """``spec`` with ``points`` time points over its ``target_lag`` schedule's span."""
    return dataclasses.replace(spec, model=spec.model.model_copy(
        update={"schedule": with_points(spec.model.schedule, points)}))


def load_choice(root: Location, storage: Storage) -> FreshnessChoice | None:
    """The choice a job keeps in its folder, if any; a damaged file is an error naming it."""
    text = storage.read_text(root / FILE)
    if text is None:
        return None
    try:
        return FreshnessChoice.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError, StopIteration):
        raise TempuraError(f"{root / FILE}: not a choice of time points tempura wrote (remove it to choose again, "
                           "before anything is committed)") from None


def save_choice(root: Location, storage: Storage, choice: FreshnessChoice) -> None:
    """Keep ``choice`` in the job's folder, written atomically."""
    storage.mkdirs(root)
    storage.write_atomically(root / FILE, json.dumps(choice.to_json(), indent=2))


def settled(spec: Spec, root: Location, storage: Storage, committed: bool,
            choose_now: Callable[[], FreshnessChoice] | None, keep: bool = True) -> tuple[Spec, FreshnessChoice | None]:
    """``spec`` with the time points its job chose (kept in ``freshness.json``): a spec without
    ``target_lag`` as it is; with no kept choice, or one made for another target while nothing
    is ``committed``, chosen now (``choose_now``) and kept, or, without ``choose_now``, the
    fewest points that meet the target (``keep=False``: chosen, not kept; what ``plan`` shows).
    A kept choice for another target once time points are committed is an error: the points
    cannot move under them."""
    schedule = spec.model.schedule
    if schedule.target_lag is None:
        return spec, None
    kept = load_choice(root, storage)
    if kept is not None and kept.matches(schedule):
        return with_choice(spec, kept), kept
    if kept is not None and committed:
        raise TempuraError(f"{spec.path}: schedule.target_lag, start, deadline or lag_weight changed since the job "
                           f"chose its {kept.chosen.points} time points ({root / FILE}); its committed time points "
                           "stand on them: restore the schedule, or start the job afresh in a new workdir")
    if choose_now is None:
        return spec, None
    choice = choose_now()
    if keep:
        save_choice(root, storage, choice)
    return with_choice(spec, choice), choice
