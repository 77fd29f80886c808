"""Keyed layouts: how a source's landed intervals are clustered, and the probes that use it.

A **layout** clusters a relation's rows by one column into ``N`` hash buckets, bucket
``pmod(xxhash64(key), N)`` (the key cast to ``BIGINT`` when it is an integer, so that an ``INT``
and a ``BIGINT`` probe find the same bucket). Each bucket is a folder of its own, so a read can
take only some buckets.

A **probe** is a read a fragment only needs the rows of some keys of: below an equi-join (inner,
semi, or the side of an outer or anti join whose unmatched rows drop out), through the operators
a filter on the key passes (filters, projections that keep the column, unions, groupings by it),
the read's rows whose key no row of the join's other side holds contribute nothing. Over a laid
out read, the probe reads the buckets the other side's keys fall in and no others.

With ``d`` distinct keys hashed uniformly, the expected buckets touched are ``N·(1-(1-1/N)^d)``
(:func:`touched`): pruning pays while ``d`` is well below ``N``, and a delta of many random keys
touches every bucket.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from sqlglot import exp

from tempura.algebra import (Aggregate, Distinct, Filter, Join, JoinKind, LogicalPlan, PartialAggregate, Project,
                             Projection, Scan, Sort, Union, Window)
from tempura.algebra.expressions import col, conjuncts
from tempura.cost.model import CostConstants
from tempura.tvr.operators import Consolidate, Finalize, StateAggregate, StateMerge, StateRows, ToDelta
from tempura.tvr.bounds import at_or_before
from tempura.tvr.time import TimeValue

# The partition column a laid-out folder's buckets are written under (``tempura_bucket=<b>``).
BUCKET = "tempura_bucket"
MAX_BUCKETS = 1024
MIN_BUCKET_BYTES = 16 * 1024  # a bucket's file on average at least this big: smaller ones are mostly overhead


@dataclass(frozen=True)
class Layout:
    """Rows clustered by ``column`` into ``buckets`` hash buckets; or, ``sliced``, a landed
    interval's rows split by their arrival column ``column`` into ``buckets`` time slices of
    equal length (:func:`slice_bounds`)."""

    column: str
    buckets: int
    sliced: bool = False

    def hashes(self, column: str) -> bool:
        """Whether the rows are hash-bucketed by ``column`` (what a probe by it can prune)."""
        return not self.sliced and self.column == column

    def describe(self) -> str:
        if self.sliced:
            return f"sliced by {self.column} into {self.buckets} time slices"
        return f"hash({self.column}) into {self.buckets} buckets"

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "buckets": self.buckets, **({"sliced": True} if self.sliced else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layout:
        return cls(str(data["column"]), int(data["buckets"]), bool(data.get("sliced", False)))


def bucket_counts() -> list[int]:
    """The bucket counts a layout may have: the powers of two from 2 to :data:`MAX_BUCKETS`."""
    return [2 ** n for n in range(1, int(math.log2(MAX_BUCKETS)) + 1)]


def probed_sides(kind: JoinKind) -> tuple[bool, bool]:
    """Whether a join of ``kind`` may read only the matching keys of its (left, right) input."""
    return {JoinKind.INNER: (True, True), JoinKind.SEMI: (True, True), JoinKind.LEFT: (False, True),
            JoinKind.RIGHT: (True, False), JoinKind.ANTI: (False, True)}.get(kind, (False, False))


def worth_probing(keys: float, size: float) -> bool:
    """Whether a probe by ``keys`` distinct keys of a read of ``size`` bytes can prune: the read
    splits into at least four buckets of :data:`MIN_BUCKET_BYTES`, and the keys leave a tenth of
    the most buckets untouched."""
    return size >= 4 * MIN_BUCKET_BYTES and touched(MAX_BUCKETS, keys) < 0.9 * MAX_BUCKETS


def keyed_reads(read: float, size: float, rows: float, keys: float, k: CostConstants) -> list[tuple[int, float, float]]:
    """A read of ``size`` bytes in ``rows`` rows costing ``read`` (model nanoseconds), probed by
    ``keys`` distinct keys, laid out in each bucket count it may be split into (no bucket under
    :data:`MIN_BUCKET_BYTES` on average): ``(buckets, its cost, the layout's upkeep)``. The cost
    is the touched buckets' share of the read, an open per touched bucket and the job finding
    them; the upkeep is what writing the rows bucketed adds: a shuffle by bucket and a file per
    bucket."""
    out = []
    for n in bucket_counts():
        if size < n * MIN_BUCKET_BYTES:
            break
        out.append((n, bucket_read(read, n, keys, k) + k.stage, upkeep(size, rows, n, k)))
    return out


def upkeep(size: float, rows: float, parts: int, k: CostConstants) -> float:
    """What writing ``size`` bytes in ``rows`` rows split into ``parts`` buckets or time slices
    adds to writing them as they come: a shuffle by part, and a file per non-empty part."""
    return size * (k.network + k.local_write + k.local_read) + min(float(parts), rows) * k.file_open


def bucket_read(read: float, buckets: int, keys: float, k: CostConstants) -> float:
    """A read costing ``read`` (model nanoseconds) of rows laid out in ``buckets`` buckets, taken
    at the buckets ``keys`` distinct keys touch."""
    return part_read(read, buckets, touched(buckets, keys), k)


def part_read(read: float, parts: int, taken: float, k: CostConstants) -> float:
    """A read costing ``read`` of rows split into ``parts`` buckets or time slices, taken at
    ``taken`` of them: their share of it, and an open per part taken."""
    return read * taken / parts + taken * k.file_open


def slice_bounds(start: TimeValue, end: TimeValue, slices: int) -> list[TimeValue]:
    """The ``slices - 1`` inner bounds splitting the interval ``(start, end]`` into time slices
    of equal length (an integer time rounded down): slice ``j`` holds the rows arriving in
    ``(b_{j-1}, b_j]`` (``b_{-1} = start``, ``b_{slices-1} = end``), so a row's slice is the
    number of bounds below its arrival. Bounds may repeat on a short integer interval, which
    leaves a slice empty."""
    out: list[TimeValue] = []
    for j in range(1, slices):
        if isinstance(start, dt.datetime) and isinstance(end, dt.datetime):
            out.append(start + (end - start) * j / slices)
        elif isinstance(start, dt.date) and isinstance(end, dt.date) and not isinstance(start, dt.datetime):
            out.append(start + dt.timedelta(days=((end - start).days * j) // slices))
        elif isinstance(start, (int, float)) and isinstance(end, (int, float)):
            step = (end - start) * j / slices
            out.append(start + int(step) if isinstance(start, int) and isinstance(end, int) else start + step)
        else:
            raise TypeError(f"time points {start!r} and {end!r} do not slice")
    return out


def interval_slices(values: Sequence[TimeValue], origin: TimeValue | None, index: int, slices: int) -> list[TimeValue] | None:
    """The slice bounds of interval ``index`` (``(t_{index-1}, t_index]``; ``t_0``: ``origin``)
    split into ``slices``; ``None`` for a first interval with no origin, which has no length."""
    start = values[index - 2] if index > 1 else origin
    return None if start is None else slice_bounds(start, values[index - 1], slices)


def slices_after(bounds: Sequence[TimeValue], after: TimeValue) -> set[int]:
    """The slices (of ``len(bounds) + 1``) that may hold a row arriving after ``after``: every
    slice but those whose upper bound is at or before it."""
    return {j for j in range(len(bounds) + 1) if j == len(bounds) or not at_or_before(bounds[j], after)}


def touched(buckets: int, distinct: float) -> float:
    """The expected buckets of ``buckets`` that ``distinct`` uniformly hashed keys fall in."""
    if buckets <= 1:
        return float(buckets)
    return buckets * (1.0 - (1.0 - 1.0 / buckets) ** max(distinct, 0.0))


@dataclass(frozen=True)
class Probe:
    """A read of a fragment (the view ``view``: a source read's, or a state's id) whose rows
    matter only where ``column`` holds a key of ``on``'s column ``key``. ``distinct``: the
    estimated distinct keys of ``on``; ``rows`` and ``bytes``: the read's estimated size, and
    ``cost`` its estimated cost (model nanoseconds, a snapshot's consolidation included);
    ``time``: the time point of the fragment."""

    view: str
    column: str
    on: LogicalPlan
    key: str
    distinct: float
    rows: float
    bytes: float
    time: int
    cost: float = 0.0

    def describe(self) -> str:
        return f"{self.view} by {self.column} ∈ keys of {self.key} (≈{self.distinct:.4g} distinct)"


@dataclass(frozen=True)
class Since:
    """A read of a fragment (the view ``view`` of source ``source``) whose rows matter only where
    the source's arrival column ``column`` is after ``after``: below an equi-join on the
    source's key whose other side's keys are all held by rows declared to land at most a lag
    after the key (``arrival: {with: …, within: …}``) and that landed after a known time point,
    so reference keys that landed after ``after`` (:func:`~tempura.optimizer.slices.find_since`).
    ``rows``, ``bytes`` and ``cost``: the read's estimates; ``time``: the fragment's time point."""

    view: str
    source: str
    column: str
    after: TimeValue
    rows: float
    bytes: float
    time: int
    cost: float = 0.0

    def describe(self) -> str:
        return f"{self.view} where {self.column} > {self.after}"


@dataclass(frozen=True)
class Merge:
    """A fragment that computes its result from the state ``state`` and other reads, *keyed* by
    ``column``: every read it scans is reached from its output's ``column`` through operators a
    filter on the column passes (:func:`~tempura.optimizer.layouts.leaves`), so its rows of a
    key depend on the inputs' rows of that key alone. When it keeps a later version of the same
    relation as ``state``, laid out alike, its buckets none of the keys that may change falls in
    are the state's buckets unchanged: only the touched ones are rewritten. The keys that may
    change are those of the reads ``keys`` (the state's own rows merged in as they are change
    nothing; a join's changes are bounded by its side with the fewer keys); ``distinct``: their
    estimated number."""

    state: str
    column: str
    distinct: float
    keys: tuple[tuple[str, str], ...] = ()  # the reads (view, column) whose keys hold every key that may change

    def describe(self) -> str:
        return f"merges into {self.state} by {self.column} (≈{self.distinct:.4g} keys)"


# A scan a key reaches, with the scanned table's column the key is there
Leaf = tuple[Scan, str]


def column_of(expression: exp.Expr) -> str | None:
    """The column ``expression`` is, if it is a plain column."""
    node = expression.unnest()
    return node.name if isinstance(node, exp.Column) else None


def leaves(plan: LogicalPlan, column: str) -> list[Leaf]:
    """The scans below ``plan`` a filter on its output column ``column`` can be pushed to, each
    with the scanned table's column the key is there (empty where it cannot be pushed)."""
    if isinstance(plan, Scan):
        found = next((c for c in plan.columns if c.field.name == column), None)
        return [(plan, found.source)] if found is not None else []
    return [leaf for index, name in passes(plan, column) for leaf in leaves(plan.inputs[index], name)]


def passes(plan: LogicalPlan, column: str) -> list[tuple[int, str]]:
    """The inputs of ``plan`` (by index, each with its column) a filter on its output column
    ``column`` can be pushed into: through filters, projections keeping the column, unions,
    consolidation, groupings, partial-state merges and window partitions by it, and joins."""
    if isinstance(plan, (Filter, Distinct, Consolidate, ToDelta, Sort)) or plan.operator == "Repeat":
        return [(0, column)]
    if isinstance(plan, Project):
        kept = next((p for p in plan.projections if p.field.name == column), None)
        name = column_of(kept.expression) if kept is not None else None
        return [(0, name)] if name is not None else []
    if isinstance(plan, Union):
        names = list(plan.schema.names)
        if column not in names:
            return []
        i = names.index(column)
        return [(0, plan.left.schema.names[i]), (1, plan.right.schema.names[i])]
    if isinstance(plan, (Aggregate, PartialAggregate, StateAggregate, StateRows, Finalize)):
        return [(0, column)] if column in plan.keys else []
    if isinstance(plan, StateMerge):
        return [(0, column), (1, column)] if column in plan.keys else []
    if isinstance(plan, Window):
        return [(0, column)] if column in plan.partition_keys else []
    if isinstance(plan, Join):
        return _join_passes(plan, column)
    return []


def _join_passes(plan: Join, column: str) -> list[tuple[int, str]]:
    """Through a join: into the input the column comes from, where the join keeps that input's
    rows by their own values (not the padded side of an outer join); and into the other input
    by the column the condition equates it with, where a row of the other input can only
    matter through a match (not the preserved side of an outer join): its rows of other keys
    match none of the kept rows."""
    left_has, right_has = column in plan.left.schema.names, column in plan.right.schema.names
    if left_has == right_has:
        return []
    own, other = (0, 1) if left_has else (1, 0)
    keeps_own = plan.kind in ((JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.CROSS) if left_has
                              else (JoinKind.INNER, JoinKind.RIGHT, JoinKind.CROSS))
    if not keeps_own:
        return []
    out = [(own, column)]
    probes_other = plan.kind in ((JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI) if left_has
                                 else (JoinKind.INNER, JoinKind.RIGHT))
    partner = next((b if a == column else a for a, b in equalities(plan.condition) if column in (a, b)), None)
    if probes_other and partner is not None and partner in plan.inputs[other].schema.names:
        out.append((other, partner))
    return out


def equalities(condition: exp.Expr | None) -> list[tuple[str, str]]:
    """The ``a = b`` and ``a <=> b`` conjuncts of a join condition between two plain columns."""
    out = []
    for c in conjuncts(condition):
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)):
            left, right = column_of(c.left), column_of(c.right)
            if left is not None and right is not None:
                out.append((left, right))
    return out


def scans_of(plan: LogicalPlan, table: str) -> int:
    """How many times ``plan`` scans ``table``."""
    own = 1 if isinstance(plan, Scan) and plan.table == table else 0
    return own + sum(scans_of(c, table) for c in plan.inputs)


def pruned(probes: Sequence[Probe], plan: LogicalPlan) -> dict[str, Probe]:
    """The reads (by view) of a fragment's ``plan`` its ``probes`` may prune: every scan of the
    view is under a probe, all of them by the same column. Probes by different joins prune it
    by all their keys: one probe whose probing side is the union of theirs (their keys of one
    type; else the read is left whole)."""
    by_view: dict[str, list[Probe]] = {}
    for probe in probes:
        by_view.setdefault(probe.view, []).append(probe)
    out = {}
    for view, found in by_view.items():
        first = found[0]
        if len(found) != scans_of(plan, view) or any(p.column != first.column for p in found):
            continue
        sides = list({id(p.on): p for p in found}.values())
        if len({str(p.on.schema.field(p.key).type) for p in sides}) > 1:
            continue  # keys of different types: a union would compare and hash them as one type
        out[view] = first if len(sides) == 1 else _united(sides)
    return out


def _united(probes: Sequence[Probe]) -> Probe:
    """One probe by the keys of all of ``probes`` (one read, one column): their probing sides'
    key columns, united under the first one's name."""
    first = probes[0]
    field = next(f for f in first.on.schema.fields if f.name == first.key)
    keys: LogicalPlan | None = None
    for probe in probes:
        side = Project(probe.on, (Projection(field.renamed(first.key), col(probe.key)),))
        keys = side if keys is None else Union(keys, side, True, (field,))
    assert keys is not None
    return Probe(first.view, first.column, keys, first.key, sum(p.distinct for p in probes), first.rows, first.bytes,
                 first.time, first.cost)


__all__ = ["BUCKET", "MAX_BUCKETS", "MIN_BUCKET_BYTES", "Layout", "Leaf", "Merge", "Probe", "Since", "bucket_counts", "bucket_read",
           "column_of", "equalities", "keyed_reads", "leaves", "part_read", "passes", "probed_sides", "pruned", "scans_of", "interval_slices",
           "slice_bounds", "slices_after", "touched", "upkeep", "worth_probing"]
