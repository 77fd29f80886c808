"""The time points of a spec's schedule, cycle by cycle: :class:`Cycle`, the values of cycle
``n`` (:func:`cycle_values`) and the cycle under way at a moment (:func:`cycle_index_at`), each
computed from ``start`` and the step, never by listing cycles; a ``target_lag`` schedule's
time points, evenly spaced over its span (:func:`with_points`)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Literal

from tempura.scheduler.spec.model import ScheduleSpec, time_of_day
from tempura.tvr.time import TimePoints, TimeValue, cycle_words


def cycle_values(schedule: ScheduleSpec, n: int) -> tuple[TimeValue | None, tuple[TimeValue, ...]] | None:
    """Cycle ``n``'s origin ``t_0`` (rows arriving at or before it belong to earlier cycles;
    ``None``: no earlier cycle) and its time points; ``None`` when the schedule has no cycle
    ``n`` (explicit ``at`` values make one cycle, as does a ``deadline``; a cycle past the year
    9999 does not exist).
    Only cycle ``n``'s values are computed: a schedule that started years ago is not replayed."""
    if schedule.at is not None and not all(isinstance(v, str) for v in schedule.at):
        return (None, tuple(schedule.at)) if n == 0 else None  # type: ignore[arg-type]
    if schedule.deadline is not None and n > 0:  # a target_lag schedule up to a deadline: one cycle
        return None
    try:
        if schedule.at is not None:
            assert schedule.start is not None
            day = schedule.start.date() if isinstance(schedule.start, dt.datetime) else schedule.start
            if not isinstance(day, dt.date):
                raise ValueError("times of day need a date or timestamp 'start'")
            midnight = dt.datetime.combine(day + dt.timedelta(days=n), dt.time())
            return midnight, tuple(midnight + time_of_day(str(v)) for v in schedule.at)
        start, step, points = _generated(schedule)
        origin = start if n == 0 else generate_time_points(start, step, 1, after=n * points - 1)[0]
        return origin, generate_time_points(start, step, points, after=n * points)
    except OverflowError:
        if n == 0:
            raise ValueError("the time points run past the largest date (9999-12-31)") from None
        return None


def cycle_index_at(schedule: ScheduleSpec, moment: TimeValue) -> int | None:
    """The index of the last cycle whose first time point is at or before ``moment`` (the cycle
    whose time points span it, or the one just before it when it falls between two cycles);
    ``None`` if ``moment`` is before the schedule's first time point. Computed from ``start`` and
    the step, not by listing cycles: a schedule starting in 1991 finds today's cycle at once. A
    date ``moment`` is taken as its midnight on a timestamp schedule; a timestamp as its date on
    a date schedule."""
    if schedule.at is not None and not all(isinstance(v, str) for v in schedule.at):
        first: TimeValue = schedule.at[0]  # type: ignore[assignment]
        return 0 if _not_after(first, _like(moment, first)) else None
    if schedule.at is not None:
        assert schedule.start is not None
        day = schedule.start.date() if isinstance(schedule.start, dt.datetime) else schedule.start
        if not isinstance(day, dt.date):
            raise ValueError("times of day need a date or timestamp 'start'")
        first_point = dt.datetime.combine(day, dt.time()) + time_of_day(str(schedule.at[0]))
        at = _like(moment, first_point)
        assert isinstance(at, dt.datetime)
        days = (at - first_point) // dt.timedelta(days=1)
        return days if days >= 0 else None
    start, step, points = _generated(schedule)
    at = _like(moment, start)
    if isinstance(start, dt.datetime):
        assert isinstance(at, dt.datetime) and isinstance(step, dt.timedelta)
        steps = (at - start) // step  # the last time point at or before the moment: t_steps
    elif isinstance(start, dt.date):
        assert isinstance(at, dt.date) and isinstance(step, dt.timedelta)
        steps = (at - start).days // step.days
    else:
        assert isinstance(at, (int, float)) and isinstance(start, (int, float)) and isinstance(step, int)
        steps = int((at - start) // step)
    # Cycle n's first time point is t_{n·points + 1}.
    if steps < 1:
        return None
    return 0 if schedule.deadline is not None else (steps - 1) // points


LAGS_PER_CYCLE = 8
"""A ``target_lag`` schedule without a ``deadline`` is endless, in cycles this many target lags long."""


def freshness_span(schedule: ScheduleSpec) -> dt.timedelta:
    """A ``target_lag`` schedule's cycle: from ``start`` to ``deadline``, or, without one, of
    :data:`LAGS_PER_CYCLE` target lags (the schedule is then endless)."""
    assert isinstance(schedule.start, dt.datetime) and isinstance(schedule.target_lag, dt.timedelta)
    if schedule.deadline is None:
        return LAGS_PER_CYCLE * schedule.target_lag
    assert isinstance(schedule.deadline, dt.datetime)
    return schedule.deadline - schedule.start


def lag_points(schedule: ScheduleSpec) -> int:
    """The fewest time points, evenly spaced over :func:`freshness_span`, that are at most
    ``target_lag`` apart."""
    assert isinstance(schedule.target_lag, dt.timedelta)
    return max(1, math.ceil(freshness_span(schedule) / schedule.target_lag))


def with_points(schedule: ScheduleSpec, points: int) -> ScheduleSpec:
    """A ``target_lag`` schedule with ``points`` time points evenly spaced (by whole seconds)
    after ``start``, the last at or just before the deadline."""
    step = dt.timedelta(seconds=max(1, int(freshness_span(schedule).total_seconds()) // points))
    return schedule.model_copy(update={"every": step, "points": points})


def _generated(schedule: ScheduleSpec) -> tuple[TimeValue, dt.timedelta | int, int]:
    """A generated schedule's ``start``, step (``every``, or a range's slide) and points per cycle."""
    step = schedule.every if schedule.every is not None else (schedule.range.slide if schedule.range else None)
    assert schedule.start is not None and schedule.points is not None and step is not None
    return schedule.start, step, schedule.points


def _like(moment: TimeValue, reference: TimeValue) -> TimeValue:
    """``moment`` as a value of ``reference``'s kind, to compare or subtract the two."""
    if isinstance(reference, dt.datetime):
        if isinstance(moment, dt.datetime):
            if (moment.tzinfo is None) != (reference.tzinfo is None):
                raise ValueError(f"{moment} and the schedule's {reference} differ in having a time zone")
            return moment
        if isinstance(moment, dt.date):
            return dt.datetime.combine(moment, dt.time(), tzinfo=reference.tzinfo)
    elif isinstance(reference, dt.date):
        if isinstance(moment, dt.datetime):
            return moment.date()
        if isinstance(moment, dt.date):
            return moment
    elif isinstance(moment, (int, float)) and not isinstance(moment, bool):
        return moment
    raise ValueError(f"{moment!r} is not a time point of this schedule ({time_kind(reference)} values)")


def _not_after(first: TimeValue, moment: TimeValue) -> bool:
    return bool(first <= moment)  # type: ignore[operator]


def generate_time_points(start: TimeValue, every: dt.timedelta | int, points: int, after: int = 0) -> tuple[TimeValue, ...]:
    """``start + (after + i) * every`` for ``i = 1..points``; dates step by whole days, integers
    by integers."""
    steps = range(after + 1, after + points + 1)
    if isinstance(start, dt.datetime):
        if not isinstance(every, dt.timedelta):
            raise ValueError(f"timestamps step by a duration such as 6h, not by {every}")
        return tuple(start + i * every for i in steps)
    if isinstance(start, dt.date):
        if not isinstance(every, dt.timedelta) or every % dt.timedelta(days=1):
            raise ValueError(f"dates step by whole days such as 1d, not by {every}")
        return tuple(start + i * every for i in steps)
    if not isinstance(every, int):
        raise ValueError(f"integer time points step by an integer, not by a duration ({every})")
    return tuple(start + i * every for i in steps)


def time_kind(value: TimeValue) -> str:
    if isinstance(value, dt.datetime):
        return "timestamp" if value.tzinfo is None else "time-zoned timestamp"
    if isinstance(value, dt.date):
        return "date"
    return "number"


def deliver_indices(deliver: Literal["last", "every"] | tuple[int, ...], k: int) -> tuple[int, ...]:
    if deliver == "last":
        return (k,)
    if deliver == "every":
        return tuple(range(1, k + 1))
    return tuple(sorted(deliver))


@dataclass(frozen=True)
class Cycle:
    """One cycle of a schedule: its index (0-based), its origin ``t_0`` (``None``: the first and
    only cycle, with no earlier data excluded) and its time points.

    A cycle of an **endless** schedule continues the one before it, and is planned over more
    points than it runs (:attr:`points`): after its own time points, the next cycle's first one
    (``lookahead``: what the states kept at the cycle's end are worth), and, when it is not the
    first cycle, before them its origin (the *carry*: the point at which the history and the
    states of the cycles before are taken over, committed before the cycle's first time point).
    The runner numbers a cycle's time points by these points: in a carried cycle, the carry is
    ``1`` and ``t_i`` is ``i + 1``."""

    index: int
    origin: TimeValue | None
    time_points: TimePoints
    endless: bool = False
    lookahead: TimeValue | None = None  # an endless schedule's next cycle's t_1

    @property
    def carried(self) -> bool:
        """Whether the cycle takes over an earlier cycle's history and states at its origin."""
        return self.endless and self.index > 0

    @property
    def offset(self) -> int:
        """How many points the cycle plans before its first time point (the carry's)."""
        return 1 if self.carried else 0

    @property
    def points(self) -> TimePoints:
        """Every point the cycle is planned over, numbered as the runner numbers them: the carry
        (a carried cycle's origin), the time points, the lookahead; the deliveries among them (the
        lookahead's too: the next cycle owes its result, and the planning weighs what the states
        kept for it save there; it never runs in this cycle)."""
        if not self.endless:
            return self.time_points
        before = (self.origin,) if self.carried else ()
        after = (self.lookahead,) if self.lookahead is not None else ()
        values = (*before, *self.time_points.values, *after)
        deliver = tuple(i + self.offset for i in self.time_points.deliver) + ((len(values),) if after else ())
        return TimePoints(values, deliver)

    @property
    def steps(self) -> range:
        """The points the runner commits, in order: the carry (if any) and the time points."""
        return range(1, self.offset + self.time_points.k + 1)

    @property
    def last(self) -> int:
        """The runner's number of the cycle's last time point."""
        return self.offset + self.time_points.k

    @property
    def title(self) -> str:
        """The cycle as a user reads it: ``cycle of 2026-11-22 00:00`` (its origin), or ``cycle 1``
        (its index, from one) when the origin is not a date or timestamp; its folders keep
        :attr:`label`."""
        return cycle_words(self.label)

    @property
    def label(self) -> str:
        """A name for the cycle's folders: its origin, compact (``20261122T000000``), or its index."""
        if isinstance(self.origin, dt.datetime):
            return self.origin.strftime("%Y%m%dT%H%M%S")
        if isinstance(self.origin, dt.date):
            return self.origin.strftime("%Y%m%d")
        return f"{self.index:05d}"
