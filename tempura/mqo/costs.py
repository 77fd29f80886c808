"""Cost propagation: the best plan of an instance when a set of candidates is kept.

:class:`CostTable` answers "what does the best plan cost if these states are kept?" without
re-planning: each node holds the cost of its cheapest op (``best``, a load counting only when its
candidate is kept) and of its cheapest computation (``compute``, loads excluded: what keeping the
node costs besides the save). Keeping or dropping a candidate changes the nodes that load it;
the change is propagated to their consumers in topological order and stops where a node's cost
does not change, as Roy et al.'s incremental cost update does.

Changes are *staged*: :meth:`stage` computes the objective with some candidates added or removed
in an overlay over the committed costs, :meth:`rollback` discards the overlay, :meth:`commit`
merges it — the Tempura seed's transaction map (staging, rollback, commit), so that trying a
candidate costs only the nodes it changes.

The objective of a kept set ``S`` is ``Σ_roots best(root) + Σ_{c∈S} (compute(c) + save(c))``: a
kept state is computed and saved once, whether or not the best plan reads it (the greedy drops
unread ones at the end).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

from tempura.mqo.instance import Instance, Op

INF = math.inf


@dataclass
class PlanStates:
    """What the best plan under a kept set reads: per kept candidate, the time points of its reads."""

    reads: dict[int, set[int]] = field(default_factory=dict)

    def peak_bytes(self, instance: Instance) -> float:
        """The most bytes kept at once: a state lives from its time point to its last read."""
        if not self.reads:
            return 0.0
        live = [0.0] * (instance.k + 2)
        for c, times in self.reads.items():
            cand = instance.candidates[c]
            for t in range(cand.time, max(times | {cand.time}) + 1):
                live[t] += cand.bytes
        return max(live)


class CostTable:
    """Best and compute costs of every node under a kept set, with staged changes."""

    def __init__(self, instance: Instance, kept: Iterable[int] = (), until: dict[int, int] | None = None) -> None:
        self.instance = instance
        self.until = dict(until or {})  # candidate -> the last time point it may be read at
        self.rank = {node: i for i, node in enumerate(instance.order)}
        n = instance.size
        self._kept: set[int] = set(kept)
        self._best = [INF] * n
        self._compute = [INF] * n
        for node in instance.order:
            self._best[node], self._compute[node] = self._value(node, self._best.__getitem__, self._readable(self._kept))
        self._staged_best: dict[int, float] = {}
        self._staged_compute: dict[int, float] = {}
        self._staged_kept: set[int] | None = None
        self.evaluations = 0  # node re-evaluations, for the benchmark

    # -- reading ----------------------------------------------------------------------------------

    @property
    def _current(self) -> set[int]:
        return self._staged_kept if self._staged_kept is not None else self._kept

    @property
    def kept(self) -> set[int]:
        return set(self._current)

    def best(self, node: int) -> float:
        return self._staged_best.get(node, self._best[node])

    def compute(self, node: int) -> float:
        return self._staged_compute.get(node, self._compute[node])

    def objective(self) -> float:
        inst = self.instance
        total = sum(self.best(r) for r in inst.roots)
        for c in self._current:
            cand = inst.candidates[c]
            total += self.compute(cand.node) + cand.save
        return total

    def choice(self, node: int) -> int:
        """The index of the node's cheapest op (a load only of a kept candidate)."""
        return self._argmin(node, loads=True)

    def computation(self, node: int) -> int:
        """The index of the node's cheapest non-load op."""
        return self._argmin(node, loads=False)

    def _argmin(self, node: int, loads: bool) -> int:
        readable = self._readable(self._current)
        at = self.instance.times[node]
        best, index = INF, -1
        for i, op in enumerate(self.instance.ops[node]):
            if op.is_load:
                if not loads or not readable(op.candidate, at):
                    continue
                cost = op.cost
            else:
                cost = op.cost + sum(self.best(c) for c in op.children)
            if cost < best:
                best, index = cost, i
        return index

    # -- changing ---------------------------------------------------------------------------------

    def stage(self, add: Iterable[int] = (), remove: Iterable[int] = ()) -> float:
        """The objective with ``add`` kept and ``remove`` dropped, staged over the committed costs
        (any earlier staging is discarded first)."""
        self.rollback()
        kept = set(self._kept)
        adding, removing = set(add), set(remove)
        changed = (adding - kept) | (removing & kept)
        kept = (kept | adding) - removing
        self._staged_kept = kept
        readable = self._readable(kept)
        inst = self.instance
        queue: list[tuple[int, int]] = []
        queued: set[int] = set()
        for c in changed:
            for node in inst.loads[c]:
                if node not in queued:
                    queued.add(node)
                    heapq.heappush(queue, (self.rank[node], node))
        while queue:
            _, node = heapq.heappop(queue)
            queued.discard(node)
            self.evaluations += 1
            best, compute = self._value(node, self.best, readable)
            if best == self.best(node) and compute == self.compute(node):
                continue
            self._staged_best[node] = best
            self._staged_compute[node] = compute
            for parent in inst.parents[node]:
                if parent not in queued:
                    queued.add(parent)
                    heapq.heappush(queue, (self.rank[parent], parent))
        return self.objective()

    def rollback(self) -> None:
        self._staged_best.clear()
        self._staged_compute.clear()
        self._staged_kept = None

    def commit(self) -> None:
        if self._staged_kept is None:
            return
        for node, value in self._staged_best.items():
            self._best[node] = value
        for node, value in self._staged_compute.items():
            self._compute[node] = value
        self._kept = self._staged_kept
        self.rollback()

    def _readable(self, kept: set[int]) -> Callable[[int, int], bool]:
        until = self.until
        if not until:
            return lambda candidate, _time: candidate in kept
        return lambda candidate, time: candidate in kept and time <= until.get(candidate, time)

    def _value(self, node: int, best: Callable[[int], float], readable: Callable[[int, int], bool]) -> tuple[float, float]:
        cheapest = computed = INF
        at = self.instance.times[node]
        for op in self.instance.ops[node]:
            if op.is_load:
                if op.cost < cheapest and readable(op.candidate, at):
                    cheapest = op.cost
                continue
            cost = op.cost
            for c in op.children:
                cost += best(c)
            if cost < computed:
                computed = cost
        return min(cheapest, computed), computed

    # -- the plan ---------------------------------------------------------------------------------

    def states(self) -> PlanStates:
        """The kept candidates the best plan reads, with the time points of their reads
        (following the computations of the states it reads)."""
        inst = self.instance
        out = PlanStates()
        seen: set[int] = set()
        computed: set[int] = set()
        stack = list(inst.roots)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            index = self.choice(node)
            if index < 0:
                continue
            op = inst.ops[node][index]
            if op.is_load:
                out.reads.setdefault(op.candidate, set()).add(inst.times[node])
                if op.candidate not in computed:
                    computed.add(op.candidate)
                    stack.extend(self._computation_children(inst.candidates[op.candidate].node))
                continue
            stack.extend(op.children)
        return out

    def _computation_children(self, node: int) -> tuple[int, ...]:
        index = self.computation(node)
        return self.instance.ops[node][index].children if index >= 0 else ()

    def op(self, node: int, index: int) -> Op:
        return self.instance.ops[node][index]
