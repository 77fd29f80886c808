"""Join implementation rules: broadcast hash, shuffled hash, sort-merge and nested-loop joins.

Each rule turns a logical join into the physical alternatives Spark can run for its join kind,
with the build side (where there is one) on either input Spark allows for that kind:

============================  ======================================  =========================
algorithm                     build right                             build left
============================  ======================================  =========================
broadcast hash join           inner, left, semi, anti                 inner, right
shuffled hash join            inner, left, semi, anti                 inner, right
broadcast nested-loop join    inner, cross, left, semi, anti, full    inner, cross, right, full
============================  ======================================  =========================

Sort-merge join takes every kind with equi-keys. A broadcast hash join is allowed only when the
build side's size is under the broadcast limit (``broadcast_limit`` in the cost constants, 64 MiB)
both as estimated and as bounded from above (``RelStats.max_bytes``, :mod:`tempura.stats.bounds`):
a broadcast that turns out larger than the driver's memory fails the query, while a shuffled
join that was not needed only costs time, so an estimate that rests on defaults never pins one.
The limit is above Spark's own 10 MiB ``autoBroadcastJoinThreshold`` (``broadcast_threshold``,
which models Spark's planning) because that threshold guards a guess, and this one a bound: within
it, the cost decides. At TPC-DS scale 10, a time point's 700,000 returns probing the 2.4 million
older sales they may reach took a third of the executor CPU broadcast that they took shuffled
with the sales, and two thirds of the wall time.

Joins without equi-keys — including the null-aware ``NOT IN`` anti join — run as broadcast
nested-loop joins; when the build side has no bound under the limit, that join carries no hint,
and Spark chooses the side (or a cartesian product) by its own sizes.

Which side builds is the search's choice, by cost. Spark's own planner picks by the nominal
cost ``0.7·rows + 0.3·size`` of its seed paper (or simply the smaller side); tempura's costs see
both sides' hashing, probing and shuffling, so they decide at least as well, and the extra
freedom only matters when the nominal cost is wrong about it.

Required input properties: a broadcast side needs ``broadcast``; a streamed side of a broadcast
join takes whatever its consumer asked of the join (Spark keeps the stream side's
partitioning); shuffled hash joins need both sides hash-partitioned on their keys, in matching
order; sort-merge joins need that plus each side sorted on its keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tempura.algebra import Join, JoinKind
from tempura.cost.model import Cost
from tempura.cost.operators import SparkCosts
from tempura.memo import Alternative, Group, GroupRef, Memo
from tempura.memo.search import COMPILED, MULTI_INPUT
from tempura.memo.properties import ANY, BROADCASTED, HASH, NO_PROPS, Distribution, Props, restrict
from tempura.rules.base import Implementation
from tempura.stats.estimate import split_join_condition
from tempura.stats.relation import RelStats

BROADCAST_HASH_JOIN = Implementation(
    "broadcast-hash-join", "Join",
    "A ⋈ B as a hash join whose build side (no larger than the broadcast threshold) is broadcast; the "
    "other side streams in place, keeping its partitioning.")
SHUFFLED_HASH_JOIN = Implementation(
    "shuffled-hash-join", "Join",
    "A ⋈ B as a hash join of both sides hash-partitioned on the equi-join keys, building on one side.")
SORT_MERGE_JOIN = Implementation(
    "sort-merge-join", "Join",
    "A ⋈ B as a merge of both sides hash-partitioned and sorted on the equi-join keys; delivers that order.")
NESTED_LOOP_JOIN = Implementation(
    "nested-loop-join", "Join",
    "A ⋈ B without equi-join keys (or null-aware): every row of the streamed side against a broadcast side.")
RULES = (BROADCAST_HASH_JOIN, SHUFFLED_HASH_JOIN, SORT_MERGE_JOIN, NESTED_LOOP_JOIN)

BUILD_RIGHT = {JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI}
BUILD_LEFT = {JoinKind.INNER, JoinKind.RIGHT}
LOOP_RIGHT = {JoinKind.INNER, JoinKind.CROSS, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.FULL}
LOOP_LEFT = {JoinKind.INNER, JoinKind.CROSS, JoinKind.RIGHT, JoinKind.FULL}


def passable(required: Props, columns: set[str]) -> Props:
    """What an operator that keeps its input's partitioning can ask of that input: the
    consumer's requirement if it is about the input's columns and not a broadcast."""
    dist = required.distribution
    if dist.kind in ("broadcast", "single"):
        return NO_PROPS
    if any(not set(k) <= columns for k in dist.keys) or not set(required.ordering) <= columns:
        return NO_PROPS
    return required


@dataclass(frozen=True)
class JoinShape:
    """What the join rules need of a join expression, computed once per expression."""

    text: str
    left_cols: frozenset[str]
    right_cols: frozenset[str]
    pairs: tuple[tuple[str, str], ...]
    null_aware: bool

    @staticmethod
    def of(join: Join) -> JoinShape:
        left_cols = frozenset(join.left.schema.names)
        right_cols = frozenset(join.right.schema.names)
        pairs, _, null_aware = split_join_condition(join.condition, set(left_cols), set(right_cols))
        cond = join.condition.sql(dialect="spark") if join.condition is not None else ""
        text = f"{join.kind.value}{' ON ' + cond if cond else ''}"
        return JoinShape(text, left_cols, right_cols, tuple(pairs), null_aware)


def implement_join(
    memo: Memo,
    costs: SparkCosts,
    group: Group,
    join: Join,
    required: Props,
    enabled: Callable[[Implementation], bool],
    shape: JoinShape,
) -> list[Alternative]:
    left_ref, right_ref = join.left, join.right
    assert isinstance(left_ref, GroupRef) and isinstance(right_ref, GroupRef)
    left_g, right_g = memo.group(left_ref.group), memo.group(right_ref.group)
    left, right, out = left_g.stats, right_g.stats, group.stats
    left_cols, right_cols = set(shape.left_cols), set(shape.right_cols)
    pairs, null_aware = shape.pairs, shape.null_aware
    kind = join.kind
    k = costs.k
    alternatives: list[Alternative] = []
    lkeys = tuple(a for a, _ in pairs)
    rkeys = tuple(b for _, b in pairs)
    out_cols = set(group.schema.names)

    def alt(name: str, rule: Implementation, children: tuple[tuple[int, Props], ...], own: Cost,
            deliver: Callable[[list[Props]], Props], hint: str | None, details: str, passthrough: tuple[int, ...] = ()) -> None:
        text = f"{shape.text}{(' ' + details) if details else ''}"
        shuffled = rule in (SHUFFLED_HASH_JOIN, SORT_MERGE_JOIN)  # Spark's joins over both sides' partitions
        alternatives.append(
            Alternative(name, text, children, own.with_rows(out.rows), deliver, join, hint, rule.name, passthrough=passthrough,
                        fusion=MULTI_INPUT if shuffled else COMPILED)
        )

    def stream(index: int) -> Callable[[list[Props]], Props]:
        return lambda delivered: restrict(delivered[index], out_cols)

    def building(build: RelStats) -> Cost:
        return Cost(cpu=k.cpu * k.hash * build.rows * (k.executors - 1))

    if pairs and not null_aware:
        if enabled(BROADCAST_HASH_JOIN):
            if kind in BUILD_RIGHT and broadcastable(right, k.broadcast_limit):
                alt("BroadcastHashJoin", BROADCAST_HASH_JOIN,
                    ((left_g.id, passable(required, left_cols)), (right_g.id, Props(BROADCASTED))),
                    costs.hash_join(right, left, out) + building(right), stream(0), "BROADCAST:right", "build=right", (0,))
            if kind in BUILD_LEFT and broadcastable(left, k.broadcast_limit):
                alt("BroadcastHashJoin", BROADCAST_HASH_JOIN,
                    ((left_g.id, Props(BROADCASTED)), (right_g.id, passable(required, right_cols))),
                    costs.hash_join(left, right, out) + building(left), stream(1), "BROADCAST:left", "build=left", (1,))
        shuffled = (
            (left_g.id, Props(Distribution.hashed(*lkeys))),
            (right_g.id, Props(Distribution.hashed(*rkeys))),
        )
        partitioning = _co_partitioned(kind, lkeys, rkeys, out_cols)
        if enabled(SHUFFLED_HASH_JOIN):
            if kind in BUILD_RIGHT:
                alt("ShuffledHashJoin", SHUFFLED_HASH_JOIN, shuffled, costs.hash_join(right, left, out),
                    lambda _d: Props(partitioning), "SHUFFLE_HASH:right", "build=right")
            if kind in BUILD_LEFT:
                alt("ShuffledHashJoin", SHUFFLED_HASH_JOIN, shuffled, costs.hash_join(left, right, out),
                    lambda _d: Props(partitioning), "SHUFFLE_HASH:left", "build=left")
        if enabled(SORT_MERGE_JOIN):
            sorted_inputs = (
                (left_g.id, Props(Distribution.hashed(*lkeys), lkeys)),
                (right_g.id, Props(Distribution.hashed(*rkeys), rkeys)),
            )
            order = rkeys if kind is JoinKind.RIGHT else () if kind is JoinKind.FULL else lkeys
            delivered = Props(partitioning, order)
            alt("SortMergeJoin", SORT_MERGE_JOIN, sorted_inputs, costs.merge_join(left, right, out),
                lambda _d: delivered, "MERGE:right", "")
        return alternatives

    if enabled(NESTED_LOOP_JOIN):
        compare = Cost(cpu=k.cpu * left.rows * right.rows)
        if kind in LOOP_RIGHT:
            pinned = broadcastable(right, k.broadcast_limit)
            alt("BroadcastNestedLoopJoin", NESTED_LOOP_JOIN,
                ((left_g.id, passable(required, left_cols)), (right_g.id, Props(BROADCASTED))),
                compare, stream(0), "BROADCAST:right" if pinned else None, "build=right" if pinned else UNPINNED, (0,))
        if kind in LOOP_LEFT:
            pinned = broadcastable(left, k.broadcast_limit)
            alt("BroadcastNestedLoopJoin", NESTED_LOOP_JOIN,
                ((left_g.id, Props(BROADCASTED)), (right_g.id, passable(required, right_cols))),
                compare, stream(1), "BROADCAST:left" if pinned else None, "build=left" if pinned else UNPINNED, (1,))
    return alternatives


UNPINNED = "unpinned (build side has no size bound: Spark chooses)"


def broadcastable(build: RelStats, threshold: float) -> bool:
    """Whether ``build`` may be pinned as a broadcast: its estimated size and the upper bound on
    its size are both under ``threshold``."""
    return build.bytes <= threshold and build.max_bytes <= threshold


def _co_partitioned(kind: JoinKind, lkeys: tuple[str, ...], rkeys: tuple[str, ...], out_cols: set[str]) -> Distribution:
    """The partitioning a shuffled join's output keeps (Spark's ``PartitioningCollection``)."""
    if kind is JoinKind.FULL:
        return ANY
    options = []
    if kind is not JoinKind.RIGHT:
        options.append(lkeys)
    if kind in (JoinKind.INNER, JoinKind.RIGHT):
        options.append(rkeys)
    options = [o for o in options if set(o) <= out_cols]
    return Distribution(HASH, tuple(options)) if options else ANY
