"""The MQO instance: an AND-OR DAG of computations over time, and the states that may be kept.

An :class:`Instance` is what the state selection works on, whatever it was built from (a
standing query's memo, :mod:`tempura.optimizer.choosers`; or a random generator, :mod:`tempura.mqo.synthetic`):

- a **node** is one result needed at one time point (in a memo: a group, the physical property
  its consumer requires, and the time point the consumer runs at);
- an **op** is one way to obtain a node: an operator with its own cost and the nodes it reads
  (an *alternative*), or a **load** of a kept state;
- a **candidate** is a node that may be kept: computed once at its time point, saved, and then
  loaded by any node of the same relation at that time point or later — the Tempura seed's
  ``⟨s, τ(s)⟩`` pairs. Only shareable nodes are candidates: read by more than one consumer, or
  offered to a later time point;
- the **roots** are the deliveries.

Costs are scalars in the objective's units (``Σ w_i·c_i`` plus the tie-breaker on total work,
:mod:`tempura.cost.vector`): an op's cost is paid each time it runs, a candidate's save cost once,
a load's cost at each read. A node that is not kept is recomputed by each of its consumers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx

from tempura.errors import TempuraError

INF = math.inf


@dataclass(frozen=True)
class Op:
    """One way to obtain a node: ``cost`` plus its ``children`` (node ids, repeated when read
    twice), or, when ``candidate`` is not -1, a load of that candidate's kept state."""

    cost: float
    children: tuple[int, ...] = ()
    candidate: int = -1
    label: str = ""

    @property
    def is_load(self) -> bool:
        return self.candidate >= 0


@dataclass(frozen=True)
class Candidate:
    """A node that may be kept: computed at ``time`` by one of its non-load ops, saved (``save``)
    and read back by loads. ``bytes`` is its estimated size on disk."""

    node: int
    time: int
    save: float
    bytes: float
    label: str = ""


@dataclass
class Instance:
    """Nodes (their time points, labels and ops), candidates and roots; ``k`` time points."""

    k: int
    times: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    ops: list[list[Op]] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    _indexes: tuple[list[int], list[list[int]], list[list[int]]] | None = None  # order, parents, loads

    def add_node(self, time: int, label: str = "") -> int:
        self.times.append(time)
        self.labels.append(label)
        self.ops.append([])
        self._indexes = None
        return len(self.times) - 1

    def add_op(self, node: int, op: Op) -> None:
        self.ops[node].append(op)
        self._indexes = None

    def add_candidate(self, candidate: Candidate) -> int:
        self.candidates.append(candidate)
        self._indexes = None
        return len(self.candidates) - 1

    @property
    def size(self) -> int:
        return len(self.times)

    @property
    def op_count(self) -> int:
        return sum(len(o) for o in self.ops)

    def binaries(self) -> int:
        """The ILP's binary variables (without a budget): one per non-load op of a node with two
        or more (the alternative chosen), and one per candidate (kept or not)."""
        choices = 0
        for ops in self.ops:
            computed = sum(1 for op in ops if not op.is_load)
            choices += computed if computed > 1 else 0
        return choices + len(self.candidates)

    # -- structure --------------------------------------------------------------------------------

    def graph(self) -> nx.DiGraph:
        """Edges from each node to the nodes its ops read, and from a load's node to the
        candidate's node."""
        g = nx.DiGraph()
        g.add_nodes_from(range(self.size))
        for n, ops in enumerate(self.ops):
            for op in ops:
                for c in op.children:
                    g.add_edge(n, c)
                if op.is_load and self.candidates[op.candidate].node != n:
                    g.add_edge(n, self.candidates[op.candidate].node)
        return g

    @property
    def order(self) -> list[int]:
        """Nodes with every node after the nodes its ops read (children first)."""
        return self._index()[0]

    @property
    def parents(self) -> list[list[int]]:
        """For each node, the nodes with an op reading it (once per such node)."""
        return self._index()[1]

    @property
    def loads(self) -> list[list[int]]:
        """For each candidate, the nodes with a load of it."""
        return self._index()[2]

    def _index(self) -> tuple[list[int], list[list[int]], list[list[int]]]:
        if self._indexes is not None:
            return self._indexes
        graph = self.graph()
        try:
            order = list(reversed(list(nx.topological_sort(graph))))
        except nx.NetworkXUnfeasible:
            cycle = nx.find_cycle(graph)
            raise TempuraError(f"internal: the MQO instance has a cycle through {', '.join(self.labels[a] or str(a) for a, _ in cycle)}") from None
        parents: list[set[int]] = [set() for _ in range(self.size)]
        loads: list[list[int]] = [[] for _ in self.candidates]
        for n, ops in enumerate(self.ops):
            for op in ops:
                for c in op.children:
                    parents[c].add(n)
                if op.is_load and n not in loads[op.candidate]:
                    loads[op.candidate].append(n)
        self._indexes = (order, [sorted(p) for p in parents], loads)
        return self._indexes

    def validate(self) -> None:
        """Raise on a malformed instance: a dangling id, a load of a state kept later than it is
        read, a candidate that cannot be computed, a cycle."""
        n = self.size
        for node, ops in enumerate(self.ops):
            for op in ops:
                if any(not 0 <= c < n for c in op.children):
                    raise TempuraError(f"node {node}: an op reads a node that does not exist")
                if op.is_load:
                    if not 0 <= op.candidate < len(self.candidates):
                        raise TempuraError(f"node {node}: a load of a candidate that does not exist")
                    if self.candidates[op.candidate].time > self.times[node]:
                        raise TempuraError(f"node {node}: loads a state kept at a later time point")
                if not math.isfinite(op.cost) or op.cost < 0:
                    raise TempuraError(f"node {node}: an op costs {op.cost}")
        for i, c in enumerate(self.candidates):
            if not 0 <= c.node < n or not any(not op.is_load for op in self.ops[c.node]):
                raise TempuraError(f"candidate {i} has no node it can be computed by")
        if not self.roots or any(not 0 <= r < n for r in self.roots):
            raise TempuraError("an instance needs roots among its nodes")
        _ = self.order

    def bounds(self) -> list[float]:
        """For each node, the most times any plan can run it (the ILP's big-M): the paths from the
        roots and from the candidates' computations to it."""
        most = [0.0] * self.size
        for r in self.roots:
            most[r] += 1
        for cand in self.candidates:
            most[cand.node] += 1
        for node in reversed(self.order):  # parents first
            if most[node] == 0:
                continue
            reads: dict[int, int] = {}
            for op in self.ops[node]:  # one alternative runs: the most any of them reads a child
                for c in set(op.children):
                    reads[c] = max(reads.get(c, 0), op.children.count(c))
            for c, times in reads.items():
                most[c] += most[node] * times
        return most


@dataclass
class Pruned:
    """An instance without the ops no kept set makes best, and where its parts came from:
    ``nodes[i]``, ``ops[i][j]`` and ``candidates[i]`` are ids in the original instance."""

    instance: Instance
    nodes: list[int]
    ops: list[list[int]]
    candidates: list[int]


def prune(instance: Instance, tolerance: float = 1e-9) -> Pruned:
    """Drop what no kept set makes part of the best plan, so the greedy and the ILP see less:

    - a computation whose cost with every input at its least (every state kept and free but for
      its loads) exceeds the node's cost with nothing kept;
    - a load costing more than computing the node with nothing kept;
    - candidates no load reads any more, and nodes no root or candidate needs.

    With nothing kept every node's cost is an upper bound of its cost under any kept set, and
    the least costs are lower bounds, so the best plan of every kept set survives."""
    inst = instance
    n = inst.size
    upper = [INF] * n  # computed with nothing kept
    lower = [INF] * n  # every load free but for its own cost
    for node in inst.order:
        for op in inst.ops[node]:
            if op.is_load:
                lower[node] = min(lower[node], op.cost)
                continue
            upper[node] = min(upper[node], op.cost + sum(upper[c] for c in op.children))
            lower[node] = min(lower[node], op.cost + sum(lower[c] for c in op.children))
    slack = 1 + tolerance
    kept_ops: list[list[int]] = []
    for node, ops in enumerate(inst.ops):
        bound = upper[node] * slack
        keep = []
        for i, op in enumerate(ops):
            least = op.cost if op.is_load else op.cost + sum(lower[c] for c in op.children)
            if least <= bound:
                keep.append(i)
        kept_ops.append(keep)
    while True:  # reachability from the roots, through kept ops and the computations of candidates read
        read = {inst.ops[node][i].candidate for node in range(n) for i in kept_ops[node] if inst.ops[node][i].is_load}
        reached: set[int] = set()
        stack = list(inst.roots) + [inst.candidates[c].node for c in read]
        while stack:
            node = stack.pop()
            if node in reached:
                continue
            reached.add(node)
            for i in kept_ops[node]:
                stack.extend(inst.ops[node][i].children)
        loads_now = {inst.ops[node][i].candidate for node in reached for i in kept_ops[node] if inst.ops[node][i].is_load}
        if loads_now == read:
            break
        for node in range(n):
            if node not in reached:
                kept_ops[node] = []
    nodes = sorted(reached)
    new_id = {old: i for i, old in enumerate(nodes)}
    candidates = sorted(read)
    new_cand = {old: i for i, old in enumerate(candidates)}
    out = Instance(inst.k)
    for old in nodes:
        out.add_node(inst.times[old], inst.labels[old])
    for old in candidates:
        c = inst.candidates[old]
        out.add_candidate(Candidate(new_id[c.node], c.time, c.save, c.bytes, c.label))
    ops_from: list[list[int]] = []
    for old in nodes:
        origin = []
        for i in kept_ops[old]:
            op = inst.ops[old][i]
            if op.is_load:
                out.add_op(new_id[old], Op(op.cost, (), new_cand[op.candidate], op.label))
            else:
                out.add_op(new_id[old], Op(op.cost, tuple(new_id[c] for c in op.children), -1, op.label))
            origin.append(i)
        ops_from.append(origin)
    out.roots = [new_id[r] for r in inst.roots]
    return Pruned(out, nodes, ops_from, candidates)


def keep_times(available: int, weights: tuple[float, ...] | list[float], last: int) -> list[int]:
    """The time points in ``[available, last]`` at which a relation available from ``available``
    is worth keeping: each whose weight is below every earlier one's in the range.

    Keeping a relation at ``τ`` is never better than keeping it at an earlier ``τ' ≥ available``
    with ``w_τ' ≤ w_τ``: the same plan computes it then (its inputs are available), at a cost no
    higher, and every reader at ``τ`` or later can load it. So with non-decreasing weights
    (``deadline``, ``total``) a relation has one candidate, at the time point it becomes
    available. This does not hold under a budget on kept bytes: a state kept earlier lives
    longer."""
    out: list[int] = []
    lowest = math.inf
    for t in range(available, last + 1):
        w = weights[t - 1]
        if w < lowest:
            out.append(t)
            lowest = w
    return out
