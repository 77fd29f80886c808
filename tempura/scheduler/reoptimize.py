"""The re-optimisation hook's model update: what the committed time points measured, applied to
the arrival model and the statistics the next planning uses.

For every source the planner needs the rows expected in each interval of the cycle. Before any
run they are the spec's ``expected: {rows: …}``, or the arrival shares times the table's row
count. After time points ``1..c`` are committed:

- intervals ``1..c`` have their **measured** rows (and deletions); a source that may delete
  and has not yet keeps its deletions unknown (so it is never taken to be insert-only);
- each later interval keeps its expected rows scaled by ``measured / expected`` over ``1..c``:
  a source that has delivered ten times what was declared is taken to go on that way;
- the table's row count for the planner (the cycle's rows) becomes the sum, and the arrival
  shares those rows over it.

:func:`updated` returns the new model, a table-row lookup for the estimator, and a reason per
source whose measured rows differ from the expected ones by more than :data:`NOTICEABLE` — over
``1..c``, or in the newest interval ``c`` — none landing where many were expected included
(:func:`arrival_reason`). No reason means every source landed what was expected.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from tempura.stats.model import ColumnStats, TableStats
from tempura.tvr.arrival import ArrivalModel, SourceArrival

NOTICEABLE = 0.2  # a change of expected rows by more than this share is reported as a reason to re-plan


@dataclass(frozen=True)
class Measured:
    """The rows (and deletions among them) one source delivered in each committed interval."""

    rows: tuple[int, ...]
    deletions: tuple[int, ...]


def expected_rows(arrival: SourceArrival, table_rows: float) -> list[float]:
    """Rows expected per interval: declared counts, or shares of the table's rows."""
    if arrival.rows is not None and sum(arrival.rows) > 0:
        return [float(r) for r in arrival.rows]
    return [f * table_rows for f in arrival.fractions]


def updated(model: ArrivalModel, tables: Callable[[str], TableStats], measured: Mapping[str, Measured],
            declared_rows: Sequence[str] = ()) -> tuple[ArrivalModel, dict[str, float], list[str]]:
    """The arrival model and cycle row counts after ``measured``, with the reasons they moved.

    ``declared_rows``: sources whose expected rows the spec declares (their table row count is
    the declared total even before any run)."""
    out = model
    rows: dict[str, float] = {}
    reasons: list[str] = []
    for source in model.sources:
        arrival = model.source(source)
        base = tables(source).rows
        expected = expected_rows(arrival, base)
        seen = measured.get(source)
        if seen is None or not seen.rows:
            if source in declared_rows:
                rows[source] = max(1.0, math.fsum(expected))
            continue
        c = len(seen.rows)
        got, wanted = float(sum(seen.rows)), math.fsum(expected[:c])
        scale = got / wanted if wanted > 0 else 1.0
        reason = arrival_reason(source, seen.rows, expected[:c])
        if reason:  # before the model: a source that landed nothing of what was expected moves no share
            reasons.append(reason)
        future = [e * scale for e in expected[c:]]
        per_interval = [float(r) for r in seen.rows] + future
        total = math.fsum(per_interval)
        if total <= 0:
            continue
        known = arrival.deletions
        shares = [d / r if r else 0.0 for d, r in zip(seen.deletions, seen.rows)]
        later: list[float] | None = None
        if known is not None:
            later = list(known[c:])
        elif sum(seen.deletions) > 0:
            later = [sum(seen.deletions) / got] * (len(expected) - c)
        # else deletions may come (a change feed, a range query's leaving rows) and none has so
        # far: that says nothing of the intervals to come, so the share stays unknown and the
        # source is not taken to be insert-only (which would let re-planning merge a MIN or MAX
        # over its deletions)
        deletions = None if later is None else tuple(min(1.0, max(0.0, s)) for s in shares + later)
        out = out.with_source(source, SourceArrival(tuple(r / total for r in per_interval), deletions))
        rows[source] = max(1.0, total)
    return out, rows, reasons


def differs(got: float, wanted: float) -> bool:
    """Whether ``got`` rows differ noticeably from ``wanted``: by more than :data:`NOTICEABLE` of
    them, or any against none (and none against any)."""
    if wanted <= 0:
        return got > 0
    return abs(got / wanted - 1.0) > NOTICEABLE


def arrival_reason(source: str, rows: Sequence[int], expected: Sequence[float]) -> str:
    """Why ``source``'s measured ``rows`` per committed interval move the plan, or ``""`` when they
    agree with the ``expected`` ones: the total by ``t_c`` when it differs noticeably, else the
    newest interval's when that does."""
    c = len(rows)
    got, wanted = float(sum(rows)), math.fsum(expected)
    if differs(got, wanted):
        if wanted <= 0:
            return f"{source}: {int(got)} rows by t{c}, none expected"
        return f"{source}: {int(got)} rows by t{c}, {wanted:.0f} expected (x{got / wanted:.3g})"
    if c > 1 and differs(float(rows[-1]), expected[-1]):
        return f"{source}: {rows[-1]} rows at t{c}, {expected[-1]:.0f} expected"
    return ""


def scaled_lookup(tables: Callable[[str], TableStats], rows: Mapping[str, float]) -> Callable[[str], TableStats]:
    """``tables`` with the row counts of ``rows`` (bytes scaled alike, distinct counts capped)."""

    def lookup(table: str) -> TableStats:
        stats = tables(table)
        target = rows.get(table.lower())
        if target is None or stats.rows <= 0 or math.isclose(target, stats.rows):
            return stats
        return stats.scaled(target)

    return lookup


def with_lookahead(arrival: SourceArrival) -> SourceArrival:
    """``arrival`` with one more interval after its last, expected like its average one: the
    next cycle's first interval, over which an endless schedule's planning looks ahead."""
    k = arrival.k
    mean = 1.0 / k
    fractions = tuple(f / (1.0 + mean) for f in arrival.fractions) + (mean / (1.0 + mean),)
    deletions = None if arrival.deletions is None else (*arrival.deletions, math.fsum(arrival.deletions) / k)
    rows = None if arrival.rows is None else (*arrival.rows, round(sum(arrival.rows) / k))
    return SourceArrival(fractions, deletions, rows)


def after_history(arrival: SourceArrival, cycle_rows: float, history: tuple[int, int]) -> tuple[SourceArrival, float]:
    """A carried cycle's arrival: ``history`` (rows and deletions taken over at its carry, all
    in interval 1) before ``arrival``'s intervals (``cycle_rows`` rows over them); and the rows
    of all of them, the source's rows as the planner sees them."""
    rows, deleted = history
    per = [rows, *(f * cycle_rows for f in arrival.fractions)]
    total = math.fsum(per)
    if total <= 0:
        return SourceArrival((1.0, *(0.0 for _ in arrival.fractions)), None if arrival.deletions is None else
                             (0.0, *arrival.deletions)), 1.0
    deletions = None if arrival.deletions is None else (deleted / rows if rows else 0.0, *arrival.deletions)
    return SourceArrival(tuple(r / total for r in per), deletions), total
