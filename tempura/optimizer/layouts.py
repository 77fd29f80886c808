"""Keyed layouts of sources' landings: which reads a delta probes, and how each source lands.

:func:`find_probes` finds, in a fragment's plan, the reads whose rows matter only where a key
column holds one of the keys of the other side of an equi-join (:class:`~tempura.tvr.layout.Probe`):
the join's condition equates a column of each side, and from the join down to the read the key
passes only operators a filter on it would pass (filters; projections keeping the column;
unions; duplicate removal, consolidation and repetition; groupings, partial-state merges and
window partitions by it; the preserved side of a join). Both sides of an inner join, the left
of a semi join and the inner side of a semi, anti or outer join can be probed.

:func:`choose_layouts` then decides, per source, whether its intervals land hash-bucketed by one
of its probed columns, and into how many buckets: the bucket count minimising, over the plan's
probes of that column, the read cost of the buckets each is expected to touch
(:func:`~tempura.tvr.layout.touched`, from its keys' estimated distinct count) plus an open per
bucket read, and the landing's upkeep (a shuffle of each interval's rows by bucket and a file
per bucket written), each at its time point's weight. A layout is kept only when it is cheaper
than landing as it is; each probed fragment's cost then prices the pruned read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from sqlglot import exp

from tempura.algebra import (Aggregate, Distinct, Filter, Join, JoinKind, LogicalPlan, PartialAggregate, Project, Scan,
                             Sort, Union, Window)
from tempura.algebra.expressions import conjuncts
from tempura.cost.model import Cost, CostConstants
from tempura.cost.vector import CostVector, Objective
from tempura.stats.relation import RelStats
from tempura.tvr.layout import MAX_BUCKETS, MIN_BUCKET_BYTES, Layout, Probe, pruned, touched
from tempura.tvr.operators import Consolidate, Finalize, SourceRead, StateAggregate, StateMerge, StateRows, ToDelta
from tempura.tvr.plan import Fragment, MultiTimePlan

# What a probe reads as a user reads it: the read's view and the key column at the read
Leaf = tuple[Scan, str]


def _column(expression: exp.Expr) -> str | None:
    node = expression.unnest()
    return node.name if isinstance(node, exp.Column) else None


def _equalities(condition: exp.Expr | None) -> list[tuple[str, str]]:
    """The ``a = b`` and ``a <=> b`` conjuncts of a join condition between two plain columns."""
    out = []
    for c in conjuncts(condition):
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)):
            left, right = _column(c.left), _column(c.right)
            if left is not None and right is not None:
                out.append((left, right))
    return out


def leaves(plan: LogicalPlan, column: str) -> list[Leaf]:
    """The scans below ``plan`` a filter on its output column ``column`` can be pushed to, each
    with the scanned table's column the key is there (empty where it cannot be pushed)."""
    if isinstance(plan, Scan):
        found = next((c for c in plan.columns if c.field.name == column), None)
        return [(plan, found.source)] if found is not None else []
    if isinstance(plan, (Filter, Distinct, Consolidate, ToDelta, Sort)) or plan.operator == "Repeat":
        return leaves(plan.inputs[0], column)
    if isinstance(plan, Project):
        kept = next((p for p in plan.projections if p.field.name == column), None)
        name = _column(kept.expression) if kept is not None else None
        return leaves(plan.input, name) if name is not None else []
    if isinstance(plan, Union):
        names = plan.schema.names
        if column not in names:
            return []
        i = list(names).index(column)
        return leaves(plan.left, plan.left.schema.names[i]) + leaves(plan.right, plan.right.schema.names[i])
    if isinstance(plan, (Aggregate, PartialAggregate, StateAggregate, StateRows, Finalize)):
        return leaves(plan.inputs[0], column) if column in plan.keys else []
    if isinstance(plan, StateMerge):
        return leaves(plan.left, column) + leaves(plan.right, column) if column in plan.keys else []
    if isinstance(plan, Window):
        return leaves(plan.input, column) if column in plan.partition_keys else []
    if isinstance(plan, Join):
        sides = []
        if column in plan.left.schema.names and plan.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.CROSS):
            sides.append(plan.left)
        if column in plan.right.schema.names and plan.kind in (JoinKind.INNER, JoinKind.RIGHT, JoinKind.CROSS):
            sides.append(plan.right)
        return leaves(sides[0], column) if len(sides) == 1 else []
    return []


def _probed_sides(kind: JoinKind) -> tuple[bool, bool]:
    """Whether a join of ``kind`` may read only the matching keys of its (left, right) input."""
    return {JoinKind.INNER: (True, True), JoinKind.SEMI: (True, True), JoinKind.LEFT: (False, True),
            JoinKind.RIGHT: (True, False), JoinKind.ANTI: (False, True)}.get(kind, (False, False))


def find_probes(plan: LogicalPlan, stats: Callable[[LogicalPlan], RelStats | None], time: int,
                cost: Callable[[LogicalPlan], float] = lambda _node: 0.0) -> list[Probe]:
    """The probes of a fragment's ``plan`` at ``time`` (``stats``: a node's estimate, or
    ``None``; ``cost``: a read's estimated cost). Each joined side is probed by the other only when the other is estimated
    smaller, and a read is a probe only once (by its first join from the top)."""
    found: list[Probe] = []
    seen: set[int] = set()

    def visit(node: LogicalPlan) -> None:
        if isinstance(node, Join):
            left_ok, right_ok = _probed_sides(node.kind)
            ls, rs = stats(node.left), stats(node.right)
            for a, b in _equalities(node.condition):
                if a in node.right.schema.names and b in node.left.schema.names:
                    a, b = b, a
                if a not in node.left.schema.names or b not in node.right.schema.names:
                    continue
                for probed, key, other, column, ok, mine, theirs in (
                        (node.left, b, node.right, a, left_ok, ls, rs), (node.right, a, node.left, b, right_ok, rs, ls)):
                    if not ok or mine is None or theirs is None or theirs.rows >= mine.rows:
                        continue
                    column_stats = theirs.columns.get(key)
                    distinct = column_stats.ndv if column_stats is not None and column_stats.ndv else theirs.rows
                    for scan, source_column in leaves(probed, column):
                        if id(scan) in seen or _reads(other, scan.table):
                            continue
                        seen.add(id(scan))
                        leaf = stats(scan)
                        found.append(Probe(scan.table, source_column, other, key, min(distinct, theirs.rows),
                                           leaf.rows if leaf else 0.0, leaf.bytes if leaf else 0.0, time, cost(scan)))
        for child in node.inputs:
            visit(child)

    visit(plan)
    return found


def _reads(plan: LogicalPlan, table: str) -> bool:
    if isinstance(plan, Scan):
        return plan.table == table
    return any(_reads(c, table) for c in plan.inputs)


@dataclass(frozen=True)
class Choice:
    """A source's layout: the intervals that land bucketed (each interval's index → its
    layout), and what it is expected to save, in the objective's units."""

    source: str
    layout: Layout
    intervals: tuple[int, ...]
    saving: float


def bucket_counts() -> list[int]:
    return [2 ** n for n in range(1, int(math.log2(MAX_BUCKETS)) + 1)]


def read_share(probe: Probe, size: float, k: CostConstants) -> float:
    """The part of ``probe``'s read cost an interval of ``size`` bytes makes (at least its
    bytes' read; a snapshot's consolidation of them too)."""
    whole = max(probe.cost, probe.bytes * k.dfs_read)
    return whole * size / probe.bytes if probe.bytes > 0 else 0.0


def interval_gain(probes: Sequence[Probe], interval: int, size: float, row_bytes: float, buckets: int,
                  weights: Sequence[float], k: CostConstants) -> float:
    """What landing interval ``interval`` (``size`` bytes, rows of ``row_bytes``) in ``buckets``
    buckets saves, weighted: each probe reading it reads the buckets its keys touch and opens
    their files, instead of the whole interval (its share of the read's cost); the landing
    shuffles its rows by bucket and writes a file per non-empty bucket."""
    gain = 0.0
    for probe in probes:
        hit = touched(buckets, probe.distinct)
        gain += weights[probe.time - 1] * (read_share(probe, size, k) * (1.0 - hit / buckets) - hit * k.file_open)
    files = min(float(buckets), size / max(row_bytes, 1.0))
    upkeep = size * (k.network + k.local_write + k.local_read) + files * k.file_open
    return gain - weights[interval - 1] * upkeep


def choose_layouts(plan: MultiTimePlan, reads: Mapping[str, SourceRead], sizes: Mapping[str, Sequence[float]],
                   constants: CostConstants) -> list[Choice]:
    """Each source's layout (``reads``: the probed reads by view; ``sizes``: per source, each
    interval's estimated bytes): per bucket count and interval, whether bucketing the interval
    saves its probes more than it costs to land (an interval is split only into buckets of
    :data:`~tempura.tvr.layout.MIN_BUCKET_BYTES` on average at least); per source the column and bucket count saving
    the most, net of the job each pruned read runs to find its buckets. A source no layout
    saves anything on lands as it is."""
    weights = plan.objective.weights
    by_column: dict[tuple[str, str], list[tuple[Probe, SourceRead]]] = {}
    for fragment in plan.fragments:
        for view, probe in pruned(fragment.probes, fragment.plan).items():
            if view in reads:
                by_column.setdefault((reads[view].scan.table, probe.column), []).append((probe, reads[view]))
    best: dict[str, Choice] = {}
    for (source, column), probes in sorted(by_column.items()):
        size = list(sizes.get(source, ()))
        row_bytes = max((p.bytes / p.rows for p, _ in probes if p.rows), default=64.0)
        for n in bucket_counts():
            gains = {i: interval_gain([p for p, r in probes if r.start < i <= r.end], i, size[i - 1], row_bytes, n,
                                      weights, constants) for i in range(1, len(size) + 1)
                     if size[i - 1] >= n * MIN_BUCKET_BYTES}
            laid = tuple(i for i, g in gains.items() if g > 0)
            jobs = sum(weights[p.time - 1] * constants.stage for p, r in probes if any(r.start < i <= r.end for i in laid))
            saving = sum(gains[i] for i in laid) - jobs
            if laid and saving > 0 and (source not in best or saving > best[source].saving):
                best[source] = Choice(source, Layout(column, n), laid, saving)
    return sorted(best.values(), key=lambda c: c.source)


def price(fragment: Fragment, choices: Iterable[Choice], reads: Mapping[str, SourceRead], sizes: Mapping[str, Sequence[float]],
          constants: CostConstants, objective: Objective) -> None:
    """Price ``fragment``'s pruned reads by the buckets they are expected to touch."""
    chosen = {c.source: c for c in choices}
    k = constants
    for view, probe in pruned(fragment.probes, fragment.plan).items():
        read = reads.get(view)
        choice = chosen.get(read.scan.table) if read is not None else None
        if read is None or choice is None or choice.layout.column != probe.column:
            continue
        n = choice.layout.buckets
        hit = touched(n, probe.distinct)
        laid = [i for i in choice.intervals if read.start < i <= read.end]
        if not laid:
            continue
        size = sizes[read.scan.table]
        saved = sum(read_share(probe, size[i - 1], k) * (1.0 - hit / n) - hit * k.file_open for i in laid) - k.stage
        fragment.cost = fragment.cost + CostVector.at(fragment.time, Cost(io=-saved), objective)


__all__ = ["Choice", "bucket_counts", "choose_layouts", "find_probes", "interval_gain", "leaves", "price"]
