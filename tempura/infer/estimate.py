"""Statistics of TVR forms: source reads scaled by the arrival model, TVR operators through their
lowering to the ordinary algebra.

A source read of ``(t_start, t_end]`` holds the share of the source's cycle rows that the arrival
model puts in that interval; every column keeps its distribution, with distinct counts thinned
as a sample of that size would thin them (Cardenas), except the arrival column when the query
reads it: its distribution is narrowed to the values the read can hold (:mod:`tempura.tvr.bounds`),
so that a filter on it over the last interval's rows is estimated against the last interval's
dates. A memo expression proven empty has no rows. The other TVR operators are estimated as the
ordinary operators they lower to, so a consolidation is costed as the aggregate it is.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

from tempura.algebra import Filter, LogicalPlan, Repeat
from tempura.memo import GroupRef
from tempura.stats.estimate import Estimator, blank_column
from tempura.stats.relation import RelStats, scale_column
from tempura.tvr.bounds import ArrivalBounds
from tempura.tvr.operators import SourceRead, TvrOperator
from tempura.tvr.zset import MULT, MULT_FIELD

Fraction = Callable[[str, int, int], float]
"""``fraction(table, start, end)``: the share of a source's cycle rows arriving in ``(t_start, t_end]``."""


class TvrEstimator:
    """Derives statistics for TVR operators; everything else goes to ``estimator``."""

    def __init__(self, estimator: Estimator, fraction: Fraction, bounds: ArrivalBounds | None = None) -> None:
        self.estimator = estimator
        self.fraction = fraction
        self.bounds = bounds if bounds is not None else ArrivalBounds({})
        self._reads: dict[SourceRead, RelStats] = {}

    def derive(self, plan: LogicalPlan, inputs: list[RelStats]) -> RelStats:
        if isinstance(plan, SourceRead):
            return self._source(plan)
        if isinstance(plan, TvrOperator):
            return self._lowered(plan, inputs)
        if isinstance(plan, Repeat):  # counts of consolidated snapshots: about one copy per row
            return dataclasses.replace(inputs[0], max_rows=math.inf)  # but the counts are unbounded
        return self.estimator.derive(plan, inputs)

    def _source(self, plan: SourceRead) -> RelStats:
        known = self._reads.get(plan)
        if known is None:
            known = self._reads[plan] = self._read(plan)
        return known

    def _read(self, plan: SourceRead) -> RelStats:
        base = self.estimator.derive(plan.scan, [])
        rows = base.rows * self.fraction(plan.scan.table, plan.start, plan.end)
        columns = {name: scale_column(stats, base.rows, rows) for name, stats in base.columns.items()}
        fact = self.bounds.predicate(plan)
        if fact is not None:  # the arrival column holds only what the read can
            name, condition = fact
            narrowed = self.estimator.derive(Filter(plan.scan, condition), [base]).columns.get(name)
            if narrowed is not None:
                columns[name] = narrowed
        size = base.row_size
        if plan.delta:
            columns[MULT] = blank_column(MULT_FIELD)
            size += 8.0
        # A standing plan's reads are sized by the arrival model, which the plan is re-optimized
        # against after every run: its estimate of a read stands as the read's bound (a bound
        # from the whole table would forbid every broadcast of a small delta).
        bound = rows
        return RelStats(rows, size, columns, base.fds if not plan.delta else {}, base.notes, bound)

    def _lowered(self, plan: TvrOperator, inputs: list[RelStats]) -> RelStats:
        by_ref = {ref: stats for ref, stats in zip(plan.inputs, inputs)}

        def visit(node: LogicalPlan) -> RelStats:
            if isinstance(node, GroupRef) and node in by_ref:
                return by_ref[node]
            return self.derive(node, [visit(c) for c in node.inputs])

        return visit(plan.lower(list(plan.inputs)))
