"""Time-sliced landings: the source reads a declared arrival lag bounds in time, and how they land.

A row that lands at most a lag after the key it references (``arrival: {with: {store_sales:
sr_ticket_number}, within: 180}``) references a key that arrived at most that lag before it. So
below an equi-join on a source's key whose other side holds, in the joined column, only keys
referenced by rows that landed after ``t_c`` with lag ``L``, the source's rows that arrived at or
before ``t_c - L`` match nothing: a read of them can leave them out (:func:`find_since`, a
:class:`~tempura.tvr.layout.Since`). The interval-level form of the same fact narrows a read to
whole intervals (``tvr-narrow-keyed-read``); this one reaches inside an interval, where the
other side's keys reach back less than an interval's length.

The read only saves bytes if the interval's rows are stored by arrival. :func:`choose_slices`
decides, per source and interval still to land, whether it lands split into ``N`` time slices of
equal length (:func:`~tempura.tvr.layout.slice_bounds`), each a folder: the count saving the most
over the plan's bounded reads (each reads the slices after its bound, their share of the read,
and opens a file per slice), net of the landing's upkeep (a shuffle of the interval's rows by
slice and a file per slice), each at its time point's weight. :func:`price_since` then prices
each bounded read by the slices it reads. Which slices a read takes is known when it is planned:
no job finds them, unlike a hash layout's buckets.

The reasoning needs the key's rows to arrive at least as early as every row referencing them
allows: a row lands at most the lag after *each* row of its key (``integrity: enforced`` checks
it as rows land, :mod:`tempura.runtime.keys`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from tempura.algebra import Join, JoinKind, LogicalPlan, Scan, Union
from tempura.cost.model import Cost, CostConstants
from tempura.cost.vector import CostVector, Objective
from tempura.optimizer.layouts import Choice, Landing, read_share
from tempura.stats.relation import RelStats
from tempura.tvr.bounds import ArrivalBounds, minus, at_or_before
from tempura.tvr.layout import (MIN_BUCKET_BYTES, Layout, Since, equalities, interval_slices, leaves, part_read, passes,
                                probed_sides, scans_of, slices_after, upkeep)
from tempura.tvr.operators import SourceRead
from tempura.tvr.plan import Fragment, MultiTimePlan
from tempura.tvr.time import TimeValue

Slicing = dict[str, tuple[Layout, tuple[int, ...], float]]  # per source: its layout, intervals and saving

SLICE_COUNTS = (2, 4, 8, 16, 32, 64)

# Per join kind, whether its output's rows of the (left, right) input's column are bounded by the
# other input's keys too (the join drops the rows that match nothing)
_BOUNDED_BY_OTHER = {JoinKind.INNER: (True, True), JoinKind.SEMI: (True, False), JoinKind.LEFT: (False, True),
                     JoinKind.RIGHT: (True, False)}

KeyBound = tuple[tuple[str, str], TimeValue]
"""The key ``(source, column)`` a column's values hold, and a time at or before which no row of
the key they reference arrived."""


def key_after(plan: LogicalPlan, column: str, reads: Mapping[str, SourceRead], bounds: ArrivalBounds) -> KeyBound | None:
    """Whether every value of ``plan``'s ``column`` references a key that arrived after a known
    time: held by rows of reads of sources that declare a lag after the key (each read's rows
    landed after its start, so their keys after that start less the lag), through operators
    that keep or drop rows by the column (filters, projections keeping it, unions, groupings by
    it, joins). ``None`` when some value may come from elsewhere."""
    if isinstance(plan, Scan):
        read = reads.get(plan.table)
        scanned = next((c for c in plan.columns if c.field.name == column), None)
        if read is None or scanned is None:
            return None
        lag = bounds.lags.get((read.scan.table.lower(), scanned.source.lower()))
        source = bounds.sources.get(read.scan.table.lower())
        if lag is None or source is None or not source.on_time:
            return None
        start = source.point(read.start)
        after = minus(start, lag[2]) if start is not None else None
        return ((lag[0], lag[1]), after) if after is not None else None
    if isinstance(plan, Join):
        return _join_after(plan, column, reads, bounds)
    inputs = passes(plan, column)
    if not inputs or (len(inputs) > 1 and not isinstance(plan, Union) and plan.operator != "StateMerge"):
        return None
    found = [key_after(plan.inputs[i], name, reads, bounds) for i, name in inputs]
    if any(f is None for f in found) or len({f[0] for f in found if f is not None}) != 1:
        return None
    # every input's values are some of the output's: the earliest bound holds for all
    return min((f for f in found if f is not None), key=lambda f: _order(f[1]))


def _join_after(plan: Join, column: str, reads: Mapping[str, SourceRead], bounds: ArrivalBounds) -> KeyBound | None:
    left_has, right_has = column in plan.left.schema.names, column in plan.right.schema.names
    if left_has == right_has:
        return None
    own = 0 if left_has else 1
    found = [key_after(plan.inputs[own], column, reads, bounds)]
    if _BOUNDED_BY_OTHER.get(plan.kind, (False, False))[own]:
        for a, b in equalities(plan.condition):
            partner = b if a == column else a if b == column else None
            if partner is not None and partner in plan.inputs[1 - own].schema.names:
                found.append(key_after(plan.inputs[1 - own], partner, reads, bounds))
    known = [f for f in found if f is not None]
    if not known or len({f[0] for f in known}) != 1:
        return None
    return max(known, key=lambda f: _order(f[1]))  # rows kept only where every bound holds: the latest


def _order(value: TimeValue) -> Any:
    """A time value as a sort key (one source's values are of one type)."""
    return value


def find_since(plan: LogicalPlan, reads: Mapping[str, SourceRead], bounds: ArrivalBounds,
               stats: Callable[[LogicalPlan], RelStats | None], time: int,
               cost: Callable[[LogicalPlan], float] = lambda _node: 0.0) -> list[Since]:
    """The source reads of a fragment's ``plan`` at ``time`` (``reads``: by view) whose rows
    matter only where they arrived after a time later than the read's start (see the module).
    A read scanned more than once is bounded by the earliest of its scans' bounds, and only
    when every scan is bounded."""
    if not bounds.lags:
        return []
    found: dict[str, list[Since]] = {}
    seen: set[int] = set()

    def visit(node: LogicalPlan) -> None:
        if isinstance(node, Join):
            left_ok, right_ok = probed_sides(node.kind)
            for a, b in equalities(node.condition):
                if a in node.right.schema.names and b in node.left.schema.names:
                    a, b = b, a
                if a not in node.left.schema.names or b not in node.right.schema.names:
                    continue
                for probed, column, other, partner, ok in ((node.left, a, node.right, b, left_ok),
                                                           (node.right, b, node.left, a, right_ok)):
                    bound = key_after(other, partner, reads, bounds) if ok else None
                    if bound is None:
                        continue
                    for scan, source_column in leaves(probed, column):
                        read = reads.get(scan.table)
                        if read is None or id(scan) in seen or (read.scan.table.lower(), source_column.lower()) != bound[0]:
                            continue
                        arrival = bounds.sources.get(read.scan.table.lower())
                        start = arrival.point(read.start) if arrival is not None else None
                        if arrival is None or (start is not None and at_or_before(bound[1], start)):
                            continue  # the bound leaves none of the read's rows out
                        seen.add(id(scan))
                        leaf = stats(scan)
                        found.setdefault(scan.table, []).append(Since(
                            scan.table, read.scan.table, arrival.column, bound[1], leaf.rows if leaf else 0.0,
                            leaf.bytes if leaf else 0.0, time, cost(scan)))
        for child in node.inputs:
            visit(child)

    visit(plan)
    out = []
    for view, sinces in found.items():
        if len(sinces) == scans_of(plan, view):
            out.append(min(sinces, key=lambda s: _order(s.after)))
    return out


def choose_slices(plan: MultiTimePlan, sizes: Mapping[str, Sequence[float]], constants: CostConstants,
                  bounds: ArrivalBounds, landed: Landing, taken: Iterable[str] = ()) -> Slicing:
    """Per source with bounded reads (``sizes``: each interval's estimated bytes; ``taken``:
    sources already laid out otherwise), the slice count, the intervals still to land that
    slicing pays for, and the weighted saving; a source nothing pays for is left out."""
    weights = plan.objective.weights
    k = constants
    reads = {r.view: r for f in plan.fragments for r in f.sources}
    by_source: dict[str, list[tuple[Since, SourceRead]]] = {}
    for fragment in plan.fragments:
        for since in fragment.since:
            if since.view in reads and since.source not in taken:
                by_source.setdefault(since.source, []).append((since, reads[since.view]))
    out: Slicing = {}
    for source, found in sorted(by_source.items()):
        arrival = bounds.sources.get(source.lower())
        size = list(sizes.get(source, ()))
        if arrival is None or not size:
            continue
        row_bytes = max((s.bytes / s.rows for s, _ in found if s.rows), default=64.0)
        for n in SLICE_COUNTS:
            gains = {}
            for i in range(1, len(size) + 1):
                cuts = interval_slices(arrival.values, arrival.origin, i, n)
                if cuts is None or size[i - 1] < n * MIN_BUCKET_BYTES or landed(source, i)[0]:
                    continue
                gain = 0.0
                for since, read in found:
                    if read.start < i <= read.end:
                        whole = read_share(since, size[i - 1], k)
                        gain += weights[since.time - 1] * (whole - part_read(whole, n, len(slices_after(cuts, since.after)), k))
                gains[i] = gain - weights[i - 1] * upkeep(size[i - 1], size[i - 1] / max(row_bytes, 1.0), n, k)
            laid = tuple(i for i, g in gains.items() if g > 0)
            saving = sum(gains[i] for i in laid)
            if laid and saving > 0 and (source not in out or saving > out[source][2]):
                out[source] = (Layout(arrival.column, n, sliced=True), laid, saving)
    return out


def one_layout_each(hashed: Sequence[Choice], sliced: Slicing) -> tuple[list[Choice], Slicing]:
    """Where a source's probes would have it land hash-bucketed and its bounded reads in time
    slices, the one saving more (each saving is net of its landing's upkeep, in the objective's
    units): a source lands one way, so that a read of it is pruned as it was priced."""
    slices = dict(sliced)
    kept = []
    for choice in hashed:
        other = slices.get(choice.source)
        if other is not None and other[2] > choice.saving:
            continue
        slices.pop(choice.source, None)
        kept.append(choice)
    return kept, slices


def price_since(fragment: Fragment, layouts: Mapping[str, Mapping[int, Layout]], sizes: Mapping[str, Sequence[float]],
                bounds: ArrivalBounds, constants: CostConstants, objective: Objective) -> None:
    """Price ``fragment``'s bounded reads by the slices they read of the intervals that land (or
    landed) sliced (``layouts``: per source, interval and layout)."""
    reads = {r.view: r for r in fragment.sources}
    saved = 0.0
    for since in fragment.since:
        read, arrival = reads.get(since.view), bounds.sources.get(since.source.lower())
        if read is None or arrival is None or since.source not in sizes:
            continue
        for i in range(read.start + 1, read.end + 1):
            layout = layouts.get(since.source, {}).get(i)
            cuts = interval_slices(arrival.values, arrival.origin, i, layout.buckets) if layout is not None else None
            if layout is None or not layout.sliced or layout.column != since.column or cuts is None:
                continue
            whole = read_share(since, sizes[since.source][i - 1], constants)
            saved += whole - part_read(whole, layout.buckets, len(slices_after(cuts, since.after)), constants)
    if saved:
        fragment.cost = fragment.cost + CostVector.at(fragment.time, Cost(io=-saved), objective)


__all__ = ["SLICE_COUNTS", "Slicing", "choose_slices", "find_since", "key_after", "one_layout_each", "price_since"]
