"""Physical properties: how a relation's rows are spread over partitions and ordered in them.

A *required* property is what a consumer needs from an input; a *delivered* property is what a
physical operator produces. Spark's planner works with the same two notions
(``requiredChildDistribution`` / ``outputPartitioning``), and tempura models them so that its
costs include exactly the exchanges Spark's ``EnsureRequirements`` will insert.

Distributions:

- ``ANY``: no requirement (delivered: nothing known).
- ``hash(k1, …)``, exact: rows with equal keys in one partition, partitioned on exactly these
  keys in this order. Joins need it on both sides so that the two sides are co-partitioned
  (Spark with ``spark.sql.requireAllClusterKeysForCoPartition``).
- ``cluster(k1, …)``: rows with equal keys in one partition, by any non-empty subset of the keys.
  Aggregates need it: hash partitioning on a subset of the grouping keys keeps groups together.
- ``broadcast``: a full copy on every executor (the build side of a broadcast join).
- ``single``: one partition (scalar aggregates, global sorts).

A delivered hash distribution may have several equivalent key lists: after an inner equi-join on
``a = b`` partitioned on ``a``, the rows are also partitioned on ``b`` (Spark's
``PartitioningCollection``).

Ordering is a tuple of column names, ascending, within each partition: what sort-merge join needs
and what it delivers.

A *probe* (:class:`Probing`) is what a consumer offers rather than requires: a join that only
needs the input's rows whose key one of the other side's keys holds (an equi-join's probed side),
or an operator passing such an offer down. Every plan of the input meets it; a read of a keyed
layout (:mod:`tempura.tvr.layout`) prices itself by the buckets the keys touch under it. Layout is
thus a physical property of the search: the key is the offer's, the bucket count the read's.

Three more properties are delivered only; they follow Spark's compilation of a plan into
functions (:func:`~tempura.memo.search.outcome`). Spark compiles a union all into the stage
consuming it only where no other union (and no shuffled join) lies anywhere beneath it. Otherwise
the union is interpreted, and each row is copied out of its inputs' compiled code. That costs
nothing more when the stage ends at the union (an exchange or a write reads rows one by one
anyway), but it does when a compiled operator consumes the rows. :attr:`Props.union` says what
lies beneath the rows:

- a compiled union on top (:data:`UNION_ON_TOP`, through projections and filters, which Spark
  moves beneath the union, and which a consuming union merges with);
- a union or a shuffled join further down (:data:`UNION_INSIDE`);
- an interpreted union on top (:data:`UNION_INTERPRETED`).

:attr:`Props.copy` is that union's copy, paid by a compiled consumer. :attr:`Props.empty` says the
relation is proven empty: Spark drops it from a union, and a union left with one input is that
input.
"""

from __future__ import annotations

from dataclasses import dataclass

from tempura.cost.model import Cost

NO_UNION = 0  # Props.union: no union all, no shuffled join beneath the rows
UNION_ON_TOP = 1  # the rows are a compiled union's, through projections and filters only
UNION_INSIDE = 2  # a union or a shuffled join lies further down
UNION_INTERPRETED = 3  # the rows are a union's that Spark does not compile (something beneath blocks it)

ANY_KIND = "any"
HASH = "hash"
CLUSTER = "cluster"
BROADCAST = "broadcast"
SINGLE = "single"


@dataclass(frozen=True)
class Distribution:
    """A required or delivered distribution; ``keys`` lists equivalent key tuples (one when
    required)."""

    kind: str = ANY_KIND
    keys: tuple[tuple[str, ...], ...] = ()

    @staticmethod
    def hashed(*keys: str) -> Distribution:
        return Distribution(HASH, (tuple(keys),))

    @staticmethod
    def clustered(*keys: str) -> Distribution:
        return Distribution(CLUSTER, (tuple(keys),))

    def satisfies(self, required: Distribution) -> bool:
        """Whether rows delivered with this distribution meet ``required``."""
        if required.kind == ANY_KIND:
            return True
        if required.kind == BROADCAST:
            return self.kind == BROADCAST
        if required.kind == SINGLE:
            return self.kind == SINGLE
        if self.kind == SINGLE:
            return True  # one partition holds every group
        if self.kind != HASH:
            return False
        (wanted,) = required.keys
        if required.kind == HASH:
            return wanted in self.keys
        return any(keys and set(keys) <= set(wanted) for keys in self.keys)

    def __str__(self) -> str:
        if self.kind in (HASH, CLUSTER):
            return f"{self.kind}({' | '.join(', '.join(k) for k in self.keys)})"
        return self.kind


ANY = Distribution()
SINGLE_PARTITION = Distribution(SINGLE)
BROADCASTED = Distribution(BROADCAST)


@dataclass(frozen=True)
class Probing:
    """A consumer's offer to read only the rows whose ``column`` holds one of about ``keys``
    distinct values (the other side of an equi-join it is the probed side of)."""

    column: str
    keys: float

    def __str__(self) -> str:
        return f"probed by {self.column} (≈{self.keys:.4g} keys)"


@dataclass(frozen=True)
class Props:
    """Distribution plus ordering (ascending column names within each partition), and, in
    multi-time-point plans, the time point at which the consumer runs (0: no time) and the
    consumer's probe of it, if any (an offer: every plan satisfies it). Delivered only (no
    requirement sets them): ``union``, what lies beneath the rows that keeps a union over them
    from being compiled (:data:`NO_UNION` … :data:`UNION_INTERPRETED`), ``copy``, what a compiled
    operator consuming the rows in their stage pays to have them copied to it (an interpreted
    union's), and ``empty``, whether the relation is proven empty."""

    distribution: Distribution = ANY
    ordering: tuple[str, ...] = ()
    time: int = 0
    probe: Probing | None = None
    union: int = NO_UNION
    copy: Cost | None = None
    empty: bool = False

    def satisfies(self, required: Props) -> bool:
        if not self.distribution.satisfies(required.distribution):
            return False
        return self.ordering[: len(required.ordering)] == required.ordering

    @property
    def is_any(self) -> bool:
        return self.distribution.kind == ANY_KIND and not self.ordering

    def without_ordering(self) -> Props:
        return Props(self.distribution, (), self.time, self.probe)

    def at(self, time: int) -> Props:
        """The same requirement by a consumer running at time point ``time``."""
        return Props(self.distribution, self.ordering, time, self.probe)

    def probed(self, probe: Probing | None) -> Props:
        """The same requirement with ``probe`` as its offer (``None``: none)."""
        return Props(self.distribution, self.ordering, self.time, probe)

    def __str__(self) -> str:
        text = str(self.distribution)
        if self.ordering:
            text += f" sorted({', '.join(self.ordering)})"
        if self.time:
            text += f" @t{self.time}"
        if self.probe is not None:
            text += f" {self.probe}"
        return text


NO_PROPS = Props()


def rename(props: Props, mapping: dict[str, str]) -> Props | None:
    """``props`` with column names mapped (a consumer's requirement seen by its input); ``None``
    when a key has no counterpart."""
    dist = props.distribution
    keys = []
    for option in dist.keys:
        mapped = tuple(mapping.get(k, "") for k in option)
        if all(mapped):
            keys.append(mapped)
    if dist.keys and not keys:
        return None
    ordering = tuple(mapping.get(k, "") for k in props.ordering)
    if not all(ordering):
        return None
    return Props(Distribution(dist.kind, tuple(keys)), ordering)


def restrict(props: Props, columns: set[str]) -> Props:
    """A delivered ``props`` as seen above an operator keeping only ``columns``."""
    dist = props.distribution
    if dist.kind == HASH:
        keys = tuple(k for k in dist.keys if set(k) <= columns)
        dist = Distribution(HASH, keys) if keys else ANY
    ordering: list[str] = []
    for name in props.ordering:
        if name not in columns:
            break
        ordering.append(name)
    return Props(dist, tuple(ordering))
