"""Costs over time: a cost per time point, and the objective that weighs them.

Work done at time point ``t_i`` adds to entry ``c_i`` of a plan's :class:`CostVector`; the
:class:`Objective` is ``Σ w_i·c_i`` with the spec's weights (SEMANTICS.md, "Time in plans and
costs"). Plans are compared on the objective and ties are broken by total work: the search's
scalar is ``objective + TIE·work``, with ``TIE`` small enough never to outweigh a real
difference in the objective.

The Tempura seed's worked example: computing costs 10, saving 5 and loading 4. Computing and
saving at ``t_1`` then loading at ``t_2`` is ``[15, 4]``; computing at ``t_2`` is ``[0, 10]``; the
first wins exactly when ``15·w_1 + 4·w_2 < 10·w_2``. A linear objective is what makes the
per-group dynamic programming of the search sound (the seed: DP works for ``Σ w_i c_i``, not
for ``Π c_i``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tempura.cost.model import Cost, format_time
from tempura.errors import TempuraError

TIE = 1e-9
DEADLINE_EPSILON = 1e-3


@dataclass(frozen=True)
class Objective:
    """The weights ``w_1..w_k`` of ``Σ w_i·c_i``."""

    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.weights:
            raise TempuraError("an objective needs at least one weight")
        if any(w < 0 for w in self.weights):
            raise TempuraError(f"objective weights must not be negative: {list(self.weights)}")

    @staticmethod
    def deadline(k: int, epsilon: float = DEADLINE_EPSILON) -> Objective:
        """``[ε, …, ε, 1]``: only the last time point counts, earlier work almost free."""
        return Objective(tuple([epsilon] * (k - 1) + [1.0]))

    @staticmethod
    def total(k: int) -> Objective:
        """``[1, …, 1]``: all work counts the same, whenever it runs."""
        return Objective(tuple([1.0] * k))

    @staticmethod
    def preset(name: str, k: int) -> Objective:
        if name == "deadline":
            return Objective.deadline(k)
        if name == "total":
            return Objective.total(k)
        raise TempuraError(f"unknown objective preset '{name}' (known: deadline, total)")

    @property
    def k(self) -> int:
        return len(self.weights)

    def value(self, costs: Sequence[float]) -> float:
        return sum(w * c for w, c in zip(self.weights, costs))


class CostVector:
    """One cost per time point (index 0 is ``t_1``), in nanoseconds, its weighted total and the
    output rows.

    It adds and compares like :class:`Cost`: ``total`` is the objective plus the tie-breaker, so
    the memo search minimises the objective without knowing about time. The search adds vectors
    in its inner loop, so the entries are plain floats and the totals are computed once.
    """

    __slots__ = ("times", "objective", "rows", "weighted", "work", "total", "stages", "cpu")

    def __init__(self, times: tuple[float, ...], objective: Objective, rows: float = 0.0,
                 weighted: float | None = None, work: float | None = None, stages: float = 0.0,
                 cpu: float = 0.0) -> None:
        self.times = times
        self.objective = objective
        self.rows = rows
        self.weighted = objective.value(times) if weighted is None else weighted
        self.work = sum(times) if work is None else work
        self.total = self.weighted + TIE * self.work
        self.stages = stages  # the fixed stage costs included, over all time points (see Cost.stages)
        self.cpu = cpu  # of ``work``, the CPU part (Cost.cpu: the per-row work and the stages' fixed costs)

    @staticmethod
    def at(time: int, cost: Cost, objective: Objective) -> CostVector:
        """``cost`` spent at time point ``time`` (1-based)."""
        times = [0.0] * objective.k
        spent = cost.total
        times[time - 1] = spent
        return CostVector(tuple(times), objective, cost.rows, objective.weights[time - 1] * spent, spent, cost.stages,
                          cost.cpu)

    @staticmethod
    def zero(objective: Objective) -> CostVector:
        return CostVector((0.0,) * objective.k, objective)

    def __add__(self, other: CostVector) -> CostVector:
        return CostVector(tuple(a + b for a, b in zip(self.times, other.times)), self.objective, self.rows + other.rows,
                          self.weighted + other.weighted, self.work + other.work, self.stages + other.stages,
                          self.cpu + other.cpu)

    def with_rows(self, rows: float) -> CostVector:
        return CostVector(self.times, self.objective, rows, self.weighted, self.work, self.stages, self.cpu)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CostVector) and self.times == other.times and self.objective == other.objective

    def __hash__(self) -> int:
        return hash((self.times, self.objective))

    def __repr__(self) -> str:
        return f"CostVector({self.times!r}, rows={self.rows})"

    def __str__(self) -> str:
        return "[" + ", ".join(format_time(t) for t in self.times) + f"] objective={format_time(self.weighted)}"

    def to_json(self) -> dict[str, object]:
        return {"vector_ns": list(self.times), "objective_ns": self.weighted, "work_ns": self.work, "stages": self.stages}
