"""Join-order enumeration over the join graph: DPccp up to 12 relations, greedy (GOO) beyond.

The rule fires on the top join of every *region* — a maximal tree of inner and cross joins —
and flattens it into leaves (the region's non-join inputs) and conjuncts. The join graph
(networkx) has a node per leaf and an edge per pair of leaves a conjunct connects; a conjunct over
three or more leaves connects all of them, and it is applied at the first join that contains all
its leaves.

- **Up to** :data:`DP_LIMIT` **leaves**, the rule enumerates every connected-subgraph /
  connected-complement pair (Moerkotte and Neumann's DPccp, the enumerator DuckDB uses) and adds
  ``join(S1, S2)`` to the memo group of ``S1 ∪ S2`` — so the memo holds every bushy join order
  without cross products, once per split; ``join-commute`` adds the mirrored orientation. The
  search then costs all of them with their physical alternatives.
- **Beyond**, it builds one tree greedily (Fegaras's GOO, as Spark's and DuckDB's fallbacks do):
  repeatedly join the two connected trees whose join has the fewest estimated rows.

A cross product appears only when the query has one: the graph's connected components are then
joined to each other (any split between two components is allowed), never inside a component.
Conjuncts over a single leaf become a filter on it; conjuncts over no column go to the top join.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import networkx as nx
from sqlglot import exp

from tempura.algebra import Filter, Join, LogicalPlan, columns_in, conjoin, conjuncts
from tempura.memo import GroupRef, Memo, Operand, Rule, RuleCall
from tempura.rules.logical.joins import REORDER, make_join, reorderable

DP_LIMIT = 12


@dataclass
class JoinGraph:
    """The flattened region: leaf group references and the conjuncts with their leaf masks."""

    leaves: list[GroupRef]
    predicates: list[tuple[exp.Expr, int]]
    top_only: list[exp.Expr]

    @property
    def size(self) -> int:
        return len(self.leaves)

    def graph(self) -> nx.Graph:
        g = nx.Graph()
        g.add_nodes_from(range(self.size))
        for _, mask in self.predicates:
            members = bits(mask)
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    g.add_edge(a, b)
        components = list(nx.connected_components(g))
        if len(components) > 1:  # the query has a cross product: allow it between components
            for i, first in enumerate(components):
                for second in components[i + 1 :]:
                    g.add_edges_from((a, b) for a in first for b in second)
        return g

    def neighbours(self) -> list[int]:
        g = self.graph()
        return [sum(1 << n for n in g.neighbors(v)) for v in range(self.size)]

    def join_predicates(self, left: int, right: int) -> list[exp.Expr]:
        both = left | right
        out = [p for p, m in self.predicates if m & ~both == 0 and m & left and m & right]
        if both == (1 << self.size) - 1:
            out.extend(self.top_only)
        return out


def bits(mask: int) -> list[int]:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


def _subsets(mask: int) -> Iterator[int]:
    """Non-empty subsets of ``mask``, smallest first by value."""
    sub = (-mask) & mask
    seen = 0
    while True:
        sub = (seen - mask) & mask
        if sub == 0:
            return
        yield sub
        seen = sub


def csg_cmp_pairs(n: int, neighbours: list[int]) -> Iterator[tuple[int, int]]:
    """Every (connected subgraph, connected complement) pair of the graph, each unordered pair
    once, subsets before the sets containing them (DPccp)."""

    def nbr(s: int) -> int:
        out = 0
        for v in bits(s):
            out |= neighbours[v]
        return out & ~s

    def below(i: int) -> int:
        return (1 << (i + 1)) - 1

    def emit_csg(s1: int) -> Iterator[tuple[int, int]]:
        x = s1 | below(min(bits(s1)))
        n_set = nbr(s1) & ~x
        for v in reversed(bits(n_set)):
            s2 = 1 << v
            yield s1, s2
            yield from enum_cmp(s1, s2, x | (below(v) & n_set))

    def enum_csg(s: int, x: int) -> Iterator[tuple[int, int]]:
        n_set = nbr(s) & ~x
        for sub in _subsets(n_set):
            yield from emit_csg(s | sub)
        for sub in _subsets(n_set):
            yield from enum_csg(s | sub, x | n_set)

    def enum_cmp(s1: int, s2: int, x: int) -> Iterator[tuple[int, int]]:
        n_set = nbr(s2) & ~x
        for sub in _subsets(n_set):
            yield s1, s2 | sub
        for sub in _subsets(n_set):
            yield from enum_cmp(s1, s2 | sub, x | n_set)

    for i in reversed(range(n)):
        s = 1 << i
        yield from emit_csg(s)
        yield from enum_csg(s, below(i))


class JoinReorder(Rule):
    """Enumerates the join orders of a region of inner joins into the memo."""

    name = REORDER
    pattern = Operand(Join, test=reorderable)

    def __init__(self, dp_limit: int = DP_LIMIT) -> None:
        self.dp_limit = dp_limit

    def apply(self, call: RuleCall) -> Sequence[LogicalPlan]:
        memo = call.memo
        group = memo.group(call.group)
        if REORDER in group.explored:
            return []
        if any(reorderable(p) for p in group.parents):
            return []  # inside a region: the region's top join enumerates it
        group.explored.add(REORDER)
        graph = flatten(memo, call.root)
        if graph.size < 3:
            return []
        if graph.size <= self.dp_limit:
            pairs = self._dp(memo, graph, call.group)
            call.notes.append(f"DPccp over {graph.size} relations: {pairs} connected splits")
        else:
            self._greedy(memo, graph, call.group)
            call.notes.append(f"greedy (GOO) over {graph.size} relations")
        return []

    def _dp(self, memo: Memo, graph: JoinGraph, root: int) -> int:
        full = (1 << graph.size) - 1
        groups = {1 << i: leaf.group for i, leaf in enumerate(graph.leaves)}
        count = 0
        for s1, s2 in csg_cmp_pairs(graph.size, graph.neighbours()):
            both = s1 | s2
            join = make_join(memo.ref(groups[s1]), memo.ref(groups[s2]), graph.join_predicates(s1, s2))
            target = root if both == full else groups.get(both)
            gid = memo.insert(join, into=target)
            groups[both] = gid
            memo.group(gid).explored.add(REORDER)
            count += 1
        return count

    def _greedy(self, memo: Memo, graph: JoinGraph, root: int) -> None:
        full = (1 << graph.size) - 1
        trees: dict[int, int] = {1 << i: leaf.group for i, leaf in enumerate(graph.leaves)}
        neighbours = graph.neighbours()

        def adjacent(a: int, b: int) -> bool:
            return any(neighbours[v] & b for v in bits(a))

        while len(trees) > 1:
            best: tuple[float, int, int] | None = None
            masks = list(trees)
            for i, a in enumerate(masks):
                for b in masks[i + 1 :]:
                    if not adjacent(a, b):
                        continue
                    join = make_join(memo.ref(trees[a]), memo.ref(trees[b]), graph.join_predicates(a, b))
                    rows = memo.estimate(join).rows
                    if best is None or rows < best[0]:
                        best = (rows, a, b)
            assert best is not None, "the join graph is connected"
            _, a, b = best
            both = a | b
            join = make_join(memo.ref(trees[a]), memo.ref(trees[b]), graph.join_predicates(a, b))
            gid = memo.insert(join, into=root if both == full else None)
            memo.group(gid).explored.add(REORDER)
            del trees[a], trees[b]
            trees[both] = gid


def _visit(memo: Memo, expr: LogicalPlan, leaves: list[GroupRef], predicates: list[exp.Expr]) -> None:
    """The leaves and conjuncts under join ``expr``, in order, added to ``leaves`` and ``predicates``
    (a function of the module, not a recursive closure: that would hold itself and the memo in a
    cycle only the garbage collector frees)."""
    assert isinstance(expr, Join)
    predicates.extend(conjuncts(expr.condition))
    for child in expr.inputs:
        assert isinstance(child, GroupRef)
        inner = memo.group(child.group)
        first = inner.exprs[0]
        if reorderable(first):
            _visit(memo, first, leaves, predicates)
        else:
            leaves.append(inner.ref)


def flatten(memo: Memo, top: LogicalPlan) -> JoinGraph:
    """The leaves and conjuncts of the region under the join expression ``top``."""
    leaves: list[GroupRef] = []
    predicates: list[exp.Expr] = []
    _visit(memo, top, leaves, predicates)
    owner = {name: i for i, leaf in enumerate(leaves) for name in leaf.schema.names}
    local: dict[int, list[exp.Expr]] = {}
    placed: list[tuple[exp.Expr, int]] = []
    top_only: list[exp.Expr] = []
    for p in predicates:
        mask = 0
        for name in columns_in(p):
            if name in owner:
                mask |= 1 << owner[name]
        if mask == 0:
            top_only.append(p)
        elif mask & (mask - 1) == 0:
            local.setdefault(bits(mask)[0], []).append(p)
        else:
            placed.append((p, mask))
    for i, preds in local.items():
        condition = conjoin(preds)
        assert condition is not None
        leaves[i] = memo.ref(memo.insert(Filter(leaves[i], condition)))
    return JoinGraph(leaves, placed, top_only)
