"""Streaming statistics and cost: the Beam seed's NodeStats and its two-part cost.

Every operator gets :class:`NodeStats` ``(rows, rate, window)``: rows a bounded input holds,
rows per unit of time an unbounded one delivers, and rows inside the window an operator must
keep. A bounded source has ``window = rows`` and ``rate = 0``; an unbounded one ``rows = 0``.
The formulas (``c`` rows, ``r`` rate, ``w`` window; ``f`` the selectivity the batch estimator
gives for the operator):

- filter, project: ``c·f, r·f, w·f``; CPU ``c``, CPU rate ``r`` per expression;
- join: ``c_o = c_1·c_2·f``, ``r_o = (r_1·w_2 + r_2·w_1)·f``, ``w_o = w_1·w_2·f``; CPU
  ``c_1 + c_2 + c_o``, CPU rate ``r_1 + r_2 + r_o``;
- aggregate: ``w_o`` groups in the window, ``r_o = r_i·w_o/w_i``; CPU ``c_i``, rate ``r_i``;
- union: sums; intersect: minimums; minus: ``A − 0.5·B``; sort: unchanged, CPU ``n log n``
  and ``r log w``; values: ``c = w = n``, ``r = 0``.

:class:`StreamCost` compares ``cpu + weight · cpu_rate`` (weight 3600 by default: a unit of
CPU per unit of rate, kept up for an hour, weighs as much as one unit of batch CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import total_ordering
from typing import Mapping

from tempura.algebra import (
    Aggregate,
    Distinct,
    Except,
    Filter,
    Intersect,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Generate,
    Opaque,
    Scan,
    SetOperation,
    Sort,
    Values,
    Window,
)
from tempura.stats.estimate import Estimator
from tempura.stats.relation import log2

MINUS_FACTOR = 0.5


@dataclass(frozen=True)
class NodeStats:
    """Rows (bounded), rate (rows per unit of time) and window (rows held) of a relation."""

    rows: float
    rate: float
    window: float

    @classmethod
    def bounded(cls, rows: float) -> NodeStats:
        return cls(rows, 0.0, rows)

    @classmethod
    def unbounded(cls, rate: float, window: float) -> NodeStats:
        return cls(0.0, rate, window)

    def scaled(self, f: float) -> NodeStats:
        return NodeStats(self.rows * f, self.rate * f, self.window * f)


@total_ordering
@dataclass(frozen=True)
class StreamCost:
    """Batch CPU and streaming CPU rate, compared as ``cpu + weight·cpu_rate``."""

    cpu: float = 0.0
    cpu_rate: float = 0.0
    weight: float = 3600.0

    @property
    def value(self) -> float:
        return self.cpu + self.weight * self.cpu_rate

    def __add__(self, other: StreamCost) -> StreamCost:
        return StreamCost(self.cpu + other.cpu, self.cpu_rate + other.cpu_rate, self.weight)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, StreamCost):
            return NotImplemented
        return self.value < other.value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamCost):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


def _ratio(out: float, source: float) -> float:
    return out / source if source > 0 else 0.0


class StreamingEstimator:
    """NodeStats and StreamCost of every node; ``sources`` gives unbounded tables' NodeStats
    (others are bounded, with the batch estimate's rows)."""

    def __init__(self, estimator: Estimator, sources: Mapping[str, NodeStats] | None = None, weight: float = 3600.0) -> None:
        self.estimator = estimator
        self.sources = {k.lower(): v for k, v in (sources or {}).items()}
        self.weight = weight
        self._cache: dict[LogicalPlan, tuple[NodeStats, StreamCost]] = {}

    def of(self, plan: LogicalPlan) -> tuple[NodeStats, StreamCost]:
        """The node's stats and its own (not cumulative) cost."""
        cached = self._cache.get(plan)
        if cached is None:
            cached = self._derive(plan)
            self._cache[plan] = cached
        return cached

    def stats(self, plan: LogicalPlan) -> NodeStats:
        return self.of(plan)[0]

    def cumulative(self, plan: LogicalPlan) -> StreamCost:
        total = self.of(plan)[1]
        for child in plan.inputs:
            total = total + self.cumulative(child)
        return total

    def _cost(self, cpu: float, rate: float) -> StreamCost:
        return StreamCost(cpu, rate, self.weight)

    def _derive(self, plan: LogicalPlan) -> tuple[NodeStats, StreamCost]:
        est = self.estimator.of
        if isinstance(plan, Scan):
            stats = self.sources.get(plan.table.lower()) or NodeStats.bounded(est(plan).rows)
            return stats, self._cost(stats.rows, stats.rate)
        if isinstance(plan, Values):
            n = float(len(plan.rows))
            return NodeStats.bounded(n), self._cost(n, 0.0)
        inputs = [self.stats(child) for child in plan.inputs]
        if isinstance(plan, Opaque):
            f = _ratio(est(plan).rows, sum(est(i).rows for i in plan.inputs))
            rate = sum(i.rate for i in inputs) * f
            rows = est(plan).rows
            return NodeStats(rows if not rate else 0.0, rate, rows), self._cost(sum(i.rows for i in inputs), rate)
        if isinstance(plan, (Filter, Project, Limit, Generate)):
            (source,) = inputs
            f = _ratio(est(plan).rows, est(plan.inputs[0]).rows)
            expressions = len(plan.projections) if isinstance(plan, Project) else 1
            out = source.scaled(f)
            if isinstance(plan, Limit) and plan.count is not None:
                out = NodeStats(min(out.rows, plan.count), out.rate, min(out.window, plan.count))
            return out, self._cost(source.rows * expressions, source.rate * expressions)
        if isinstance(plan, Join):
            left, right = inputs
            f = _ratio(est(plan).rows, est(plan.left).rows * est(plan.right).rows)
            rows = left.rows * right.rows * f
            rate = (left.rate * right.window + right.rate * left.window) * f
            window = left.window * right.window * f
            out = NodeStats(rows, rate, window)
            return out, self._cost(left.rows + right.rows + rows, left.rate + right.rate + rate)
        if isinstance(plan, (Aggregate, Distinct)):
            (source,) = inputs
            keyed = bool(plan.keys) if isinstance(plan, Aggregate) else True
            groups = est(plan).rows
            window = min(groups, source.window) if keyed else 1.0
            rows = (min(groups, source.rows) if keyed else 1.0) if source.rows > 0 else 0.0
            rate = source.rate * _ratio(window, source.window)
            return NodeStats(rows, rate, window), self._cost(source.rows, source.rate)
        if isinstance(plan, Window):
            (source,) = inputs
            cpu = source.rows * (log2(source.rows) + len(plan.calls))
            return source, self._cost(cpu, source.rate * (log2(source.window) + len(plan.calls)))
        if isinstance(plan, Sort):
            (source,) = inputs
            cpu = source.rows * log2(source.rows)
            return source, self._cost(cpu, source.rate * log2(source.window))
        if isinstance(plan, SetOperation):
            a, b = inputs
            cost = self._cost(a.rows + b.rows, a.rate + b.rate)
            if isinstance(plan, Intersect):
                return NodeStats(min(a.rows, b.rows), min(a.rate, b.rate), min(a.window, b.window)), cost
            if isinstance(plan, Except):
                return (
                    NodeStats(
                        max(a.rows - MINUS_FACTOR * b.rows, 0.0),
                        max(a.rate - MINUS_FACTOR * b.rate, 0.0),
                        max(a.window - MINUS_FACTOR * b.window, 0.0),
                    ),
                    cost,
                )
            return NodeStats(a.rows + b.rows, a.rate + b.rate, a.window + b.window), cost
        raise TypeError(f"no streaming estimate for {plan.operator}")
