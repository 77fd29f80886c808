"""Z-sets: relations whose rows carry an integer multiplicity, and the merge ``+#``.

A set delta ``SD[i,j]`` is a Z-set: the relation's columns plus the multiplicity column
:data:`MULT` (``+n`` inserts n copies, ``-n`` deletes n copies, never 0 once consolidated).
Snapshots are plain bags, without the column. The functions here are the reference semantics on
Python values, used by the property tests; Spark computes the same through the operators of
:mod:`tempura.tvr.operators`.

- ``consolidate(z)``: ``+#`` within one Z-set (sum the multiplicities of equal rows, drop 0);
- ``merge(a, b)``: ``a +# b``;
- ``apply(snapshot, delta)``: ``SS[i] +# SD[i,j]`` as a bag; a row whose count would go negative
  is a delta that does not belong to the snapshot, which is an error, not a silent clamp.
"""

from __future__ import annotations

from collections import Counter
from typing import Hashable, Iterable, Sequence

from tempura.algebra import Field

MULT = "__m"
MULT_FIELD = Field(MULT, "bigint", False)

Row = tuple[Hashable, ...]
ZSet = dict[Row, int]


def consolidate(rows: Iterable[tuple[Row, int]]) -> ZSet:
    """Equal rows' multiplicities summed; rows whose total is 0 dropped."""
    total: Counter[Row] = Counter()
    for row, mult in rows:
        total[row] += mult
    return {row: m for row, m in total.items() if m != 0}


def merge(a: ZSet, b: ZSet) -> ZSet:
    """``a +# b``."""
    return consolidate([*a.items(), *b.items()])


def of_bag(rows: Iterable[Row]) -> ZSet:
    """A bag as a Z-set: each distinct row with its count."""
    return dict(Counter(rows))


def to_bag(z: ZSet) -> list[Row]:
    """A Z-set with only positive multiplicities as a bag (each row repeated)."""
    out: list[Row] = []
    for row, m in z.items():
        if m < 0:
            raise ValueError(f"row {row!r} has multiplicity {m}: not a snapshot")
        out.extend([row] * m)
    return out


def apply(snapshot: Sequence[Row], delta: ZSet) -> list[Row]:
    """``SS +# SD`` as a bag."""
    return to_bag(merge(of_bag(snapshot), delta))


def difference(new: Sequence[Row], old: Sequence[Row]) -> ZSet:
    """The delta from snapshot ``old`` to snapshot ``new``: ``new +# (−old)``."""
    return merge(of_bag(new), {row: -m for row, m in of_bag(old).items()})
