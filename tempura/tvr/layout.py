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

from tempura.algebra import LogicalPlan

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


def scans_of(plan: LogicalPlan, table: str) -> int:
    """How many times ``plan`` scans ``table``."""
    from tempura.algebra import Scan

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


__all__ = ["BUCKET", "MAX_BUCKETS", "MIN_BUCKET_BYTES", "Layout", "Probe", "pruned", "scans_of", "touched"]
