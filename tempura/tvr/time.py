"""Time points and versions of one cycle of a standing query.

A cycle has time points ``t_1 < … < t_k``. Version ``i`` (``1 ≤ i ≤ k``) is everything that has
arrived up to and including ``t_i``; version 0 is the start of the cycle (empty). A fragment that
reads version ``i`` of anything can run at ``t_i`` or later; its *execution time* is an index
``1..k``.

Time points are kept as values of the arrival column's domain (timestamps, dates or numbers), so
that "arrived by ``t_i``" is the SQL predicate ``arrival <= t_i``.

How a user reads them: :func:`time_point_words` (``t2 (2026-11-30 06:00)``, one format for every
command) and :func:`cycle_words` (a cycle's folder name, ``20261130T000000``, as ``cycle of
2026-11-30 00:00``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from tempura.errors import TempuraError

TimeValue = dt.datetime | dt.date | int | float


@dataclass(frozen=True)
class TimePoints:
    """The cycle's time points, strictly increasing, with the indices whose results are due."""

    values: tuple[TimeValue, ...]
    deliver: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.values:
            raise TempuraError("a schedule needs at least one time point")
        for a, b in zip(self.values, self.values[1:]):
            if not a < b:  # type: ignore[operator]
                raise TempuraError(f"time points must increase: {a} is not before {b}")
        if not self.deliver:
            object.__setattr__(self, "deliver", (len(self.values),))
        for i in self.deliver:
            if not 1 <= i <= len(self.values):
                raise TempuraError(f"delivery at time point {i}: the schedule has time points 1..{len(self.values)}")

    @property
    def k(self) -> int:
        """How many time points the cycle has."""
        return len(self.values)

    @property
    def indices(self) -> range:
        """The time point indices ``1..k``."""
        return range(1, self.k + 1)

    def value(self, index: int) -> TimeValue:
        """``t_index`` (1-based)."""
        return self.values[index - 1]

    def label(self, index: int) -> str:
        return f"t{index}"

    def __str__(self) -> str:
        return ", ".join(f"t{i}={time_value_words(v)}" for i, v in zip(self.indices, self.values))


def time_value_words(value: object) -> str:
    """A time point's value as a user reads it: a timestamp as ``YYYY-MM-DD HH:MM`` (with the
    seconds when not zero, and the offset of a time-zoned one), a date as ``YYYY-MM-DD``, a
    number as is. ``value`` may be the text a manifest or the history keeps (``str(value)``)."""
    if isinstance(value, str):
        text = value
        if "-" not in text.lstrip("-"):  # a number (20261130 is one, not a date)
            return text
        try:
            value = dt.datetime.fromisoformat(text) if (" " in text or "T" in text) else dt.date.fromisoformat(text)
        except ValueError:
            return text
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M" if value.second == 0 and value.microsecond == 0 else "%Y-%m-%d %H:%M:%S")
        if value.microsecond:
            text += f".{value.microsecond:06d}".rstrip("0")
        offset = value.strftime("%z")
        return f"{text}{offset[:3]}:{offset[3:]}" if offset else text
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def time_point_words(index: int, value: object) -> str:
    """A time point as every command shows it: its index and value, ``t2 (2026-11-30 06:00)``."""
    return f"t{index} ({time_value_words(value)})"


_STAMP = re.compile(r"(\d{8})T(\d{6})")
_DAY = re.compile(r"\d{8}")
_NUMBERED = re.compile(r"\d{5}")


def cycle_words(label: str) -> str:
    """A cycle's folder name (``Cycle.label``) as a user reads it: a cycle named by its origin as
    ``cycle of 2026-11-30 00:00`` (or ``cycle of 2026-11-30``), a numbered one (``00000``) as
    ``cycle 1`` (counting from one); any other name as ``cycle NAME``."""
    if _STAMP.fullmatch(label):
        return f"cycle of {time_value_words(dt.datetime.strptime(label, '%Y%m%dT%H%M%S'))}"
    if _DAY.fullmatch(label):
        try:
            return f"cycle of {time_value_words(dt.datetime.strptime(label, '%Y%m%d').date())}"
        except ValueError:
            pass
    if _NUMBERED.fullmatch(label):
        return f"cycle {int(label) + 1}"
    return f"cycle {label}"
