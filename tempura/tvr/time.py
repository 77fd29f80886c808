"""Time points and versions of one cycle of a standing query.

A cycle has time points ``t_1 < … < t_k``. Version ``i`` (``1 ≤ i ≤ k``) is everything that has
arrived up to and including ``t_i``; version 0 is the start of the cycle (empty). A fragment that
reads version ``i`` of anything can run at ``t_i`` or later; its *execution time* is an index
``1..k``.

Time points are kept as values of the arrival column's domain (timestamps, dates or numbers), so
that "arrived by ``t_i``" is the SQL predicate ``arrival <= t_i``.
"""

from __future__ import annotations

import datetime as dt
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
        return ", ".join(f"t{i}={v}" for i, v in zip(self.indices, self.values))
