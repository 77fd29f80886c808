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

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from sqlglot import exp

from tempura.algebra import (Aggregate, Distinct, Filter, Join, JoinKind, LogicalPlan, PartialAggregate, Project, Scan,
                             Sort, Union, Window)
from tempura.algebra.expressions import conjuncts
from tempura.tvr.operators import Consolidate, Finalize, StateAggregate, StateMerge, StateRows, ToDelta

# The partition column a laid-out folder's buckets are written under (``tempura_bucket=<b>``).
BUCKET = "tempura_bucket"
MAX_BUCKETS = 1024
MIN_BUCKET_BYTES = 16 * 1024  # a bucket's file on average at least this big: smaller ones are mostly overhead


@dataclass(frozen=True)
class Layout:
    """Rows clustered by ``column`` into ``buckets`` hash buckets."""

    column: str
    buckets: int

    def describe(self) -> str:
        return f"hash({self.column}) into {self.buckets} buckets"

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "buckets": self.buckets}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layout:
        return cls(str(data["column"]), int(data["buckets"]))


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
    if isinstance(plan, (Filter, Distinct, Consolidate, ToDelta, Sort)) or plan.operator == "Repeat":
        return leaves(plan.inputs[0], column)
    if isinstance(plan, Project):
        kept = next((p for p in plan.projections if p.field.name == column), None)
        name = column_of(kept.expression) if kept is not None else None
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
        return _join_leaves(plan, column)
    return []


def _join_leaves(plan: Join, column: str) -> list[Leaf]:
    """Through a join: into the input the column comes from, where the join keeps that input's
    rows by their own values (not the padded side of an outer join); and into the other input
    by the column the condition equates it with, where a row of the other input can only
    matter through a match (not the preserved side of an outer join): its rows of other keys
    match none of the kept rows."""
    left_has, right_has = column in plan.left.schema.names, column in plan.right.schema.names
    if left_has == right_has:
        return []
    own, other = (plan.left, plan.right) if left_has else (plan.right, plan.left)
    keeps_own = plan.kind in ((JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.CROSS) if left_has
                              else (JoinKind.INNER, JoinKind.RIGHT, JoinKind.CROSS))
    if not keeps_own:
        return []
    out = leaves(own, column)
    probes_other = plan.kind in ((JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI) if left_has
                                 else (JoinKind.INNER, JoinKind.RIGHT))
    partner = next((b if a == column else a for a, b in equalities(plan.condition) if column in (a, b)), None)
    if probes_other and partner is not None and partner in other.schema.names:
        out += leaves(other, partner)
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
    view is under a probe, and all of them by the same column and the same keys."""
    by_view: dict[str, list[Probe]] = {}
    for probe in probes:
        by_view.setdefault(probe.view, []).append(probe)
    out = {}
    for view, found in by_view.items():
        first = found[0]
        if len(found) == scans_of(plan, view) and all(
                p.column == first.column and p.key == first.key and p.on is first.on for p in found):
            out[view] = first
    return out


__all__ = ["BUCKET", "MAX_BUCKETS", "MIN_BUCKET_BYTES", "Layout", "Leaf", "Merge", "Probe", "column_of", "equalities", "leaves", "pruned", "scans_of", "touched"]
