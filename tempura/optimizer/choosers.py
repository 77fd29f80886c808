"""From a standing query's memo to an MQO instance, and from the chosen states back to a plan.

:class:`MemoInstance` walks the memo from the deliveries the way the search does (every group
under the required property its consumer needs, at the time point its consumer runs), and
records every physical alternative the timed implementer offers:

- a **node** is a (group, required property, time point) the search would optimize; a node read
  through an operator that passes its input's property through (a filter or projection asking
  for a partitioning) is a separate *strict* node without enforcers, as in the search, so that
  an exchange sits above such an operator rather than below it;
- an **op** is an alternative with its own cost (the search's cost vector, weighed by the
  objective), its inputs in order; alternatives the search would reject (an input without a plan,
  a delivered property that does not satisfy the requirement) are left out;
- a **candidate** is a group kept at a time point: every group the search may load
  (:class:`~tempura.rules.physical.tvr.TimedImplementer`) at the time points worth keeping at
  (:func:`~tempura.mqo.instance.keep_times`; every time point under a budget). Any node of that
  group without a requirement, at that time point or later, may load it — at the same time
  point too, which is how a result read by several consumers of one time point is shared.

:class:`MqoChooser` hands the extractor (:class:`tempura.optimizer.extract.Extractor`) the selection's
choice per node: an alternative, or a load of a kept state computed by its own fragment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, cast

from tempura.cost.vector import CostVector, Objective
from tempura.memo import Alternative, Memo, Search
from tempura.memo.search import outcome
from tempura.memo.properties import NO_PROPS, Props
from tempura.mqo.instance import Candidate, Instance, Op, Pruned, keep_times
from tempura.mqo.select import Selection
from tempura.rules.physical.tvr import LOAD, TimedImplementer


@dataclass(frozen=True)
class NodeKey:
    """A group under a required property at a time point; ``strict``: without enforcers."""

    group: int
    props: Props
    strict: bool = False


@dataclass(frozen=True)
class Pick:
    """What a node is, in the plan: an ``alternative`` over ``children`` (handles, in the
    alternative's input order), or, with ``alternative`` None, a load of the state of ``group``
    kept at time point ``kept_at``."""

    alternative: Alternative | None
    children: tuple[Hashable, ...] = ()
    group: int = -1
    kept_at: int = 0


class MemoInstance:
    """The instance of one standing query's memo after the search."""

    def __init__(self, memo: Memo, search: Search, implementer: TimedImplementer, objective: Objective,
                 all_times: bool = False) -> None:
        self.memo = memo
        self.search = search
        self.implementer = implementer
        self.objective = objective
        self.all_times = all_times
        self.instance = Instance(objective.k)
        self.keys: list[NodeKey] = []
        self.alternatives: list[list[Alternative | None]] = []  # per node, per op (None: a load)
        self._nodes: dict[NodeKey, int] = {}
        self._candidates: dict[tuple[int, int], int] = {}
        self.candidate_keys: list[tuple[int, int]] = []
        self._active: set[NodeKey] = set()

    def build(self, roots: list[tuple[int, int]]) -> Instance:
        """The instance delivering each (group, time point) of ``roots``."""
        for group, time in roots:
            node = self.node(NodeKey(self.memo.find(group), Props(time=time)))
            if node is None:
                raise ValueError(f"internal: no plan for the delivery G{group} at t{time}")
            self.instance.roots.append(node)
        return self.instance

    def node(self, key: NodeKey) -> int | None:
        made = self._nodes.get(key)
        if made is not None:
            return made
        if key.props.probe is not None and not self._probe_pays(key):
            made = self._nodes[key] = self.node(NodeKey(key.group, key.props.probed(None), key.strict))  # type: ignore[assignment]
            return made
        if key in self._active:
            return None  # a cycle through merged groups: the search refuses it too
        self._active.add(key)
        try:
            return self._make(key)
        finally:
            self._active.discard(key)

    def _probe_pays(self, key: NodeKey) -> bool:
        """Whether the search found ``key``'s group cheaper under its probe than without: where
        it did not, the probed node is the plain one. A heuristic that keeps the instance the
        size it was: the search prices a keyed load with its state's whole save, so where the
        save would be shared by other readers a keyed load could pay that the search saw as a
        tie, and the selection then does not see it."""
        probed = self.search.optimize(key.group, key.props)
        plain = self.search.optimize(key.group, key.props.probed(None))
        return probed is not None and plain is not None and probed.total < plain.total * (1 - 1e-9)

    def _make(self, key: NodeKey) -> int | None:
        memo, imp = self.memo, self.implementer
        group = memo.group(key.group)
        time = key.props.time
        offered: list[Alternative] = []
        for expr in group.exprs:
            offered.extend(imp.implement(group, expr, key.props))
        offered.extend(imp.enforce(group, key.props))
        ops: list[tuple[Op, Alternative]] = []
        for alt in offered:
            if alt.operator == LOAD or (key.strict and alt.enforcer):
                continue
            made = self._op(alt, key.props)
            if made is not None:
                ops.append(made)
        times = self._keep_times(key) if imp.keepable(group) and key.props.is_any and not key.strict else []
        if not ops and not times:
            return None
        node = self.instance.add_node(time, f"G{key.group} {key.props}{' strict' if key.strict else ''}")
        self._nodes[key] = node
        self.keys.append(key)
        self.alternatives.append([])
        for op, way in ops:
            self.instance.add_op(node, op)
            self.alternatives[node].append(way)
        for kept_at in times:
            candidate = self._candidate(key.group, kept_at)
            if candidate is not None:
                load = imp.load_cost(group, key.props, kept_at).total  # under a probe, of the touched buckets
                self.instance.add_op(node, Op(load, (), candidate, f"load from t{kept_at}"))
                self.alternatives[node].append(None)
        return node

    def _keep_times(self, key: NodeKey) -> list[int]:
        imp = self.implementer
        first = max(imp.available(key.group), imp.floor)
        if self.all_times:
            times = list(range(first, key.props.time + 1))
        else:
            times = keep_times(first, self.objective.weights, key.props.time) if first <= key.props.time else []
        kept = imp.committed_at(key.group)
        if kept is not None and kept < imp.floor:
            times.insert(0, kept)  # a committed state: saved already, read at the cost of a read
        return times

    def _op(self, alt: Alternative, required: Props) -> tuple[Op, Alternative] | None:
        children: list[int] = []
        delivered: list[Props] = []
        for index, (child, props) in enumerate(alt.children):
            won = self.search.optimize(child, props)
            if won is None:
                return None
            strict = index in alt.passthrough and not props.is_any
            node = self.node(NodeKey(self.memo.find(child), props, strict))
            if node is None:
                return None
            children.append(node)
            delivered.append(won.delivered)
        if not alt.deliver(delivered).satisfies(required.at(0)):
            return None
        own = alt.own
        extra, _ = outcome(alt, delivered)  # an interpreted union's rows copied, as its inputs' plans stand
        if extra is not None:
            own = own + extra
        assert isinstance(own, CostVector)
        return Op(own.total, tuple(children), -1, alt.operator), alt

    def _candidate(self, group: int, kept_at: int) -> int | None:
        made = self._candidates.get((group, kept_at))
        if made is not None:
            return made
        node = self.node(NodeKey(group, NO_PROPS.at(kept_at)))
        if node is None or not any(not op.is_load for op in self.instance.ops[node]):
            return None
        stats = self.memo.group(group).stats
        save = CostVector.at(kept_at, self.implementer.costs.state_write(stats), self.objective).total
        if kept_at < self.implementer.floor:
            save = 0.0  # committed: saved by an earlier run
        made = self._candidates[(group, kept_at)] = self.instance.add_candidate(
            Candidate(node, kept_at, save, stats.bytes, f"G{group} kept at t{kept_at}"))
        self.candidate_keys.append((group, kept_at))
        return made

    def start(self) -> set[int]:
        """The candidates the search's own plan keeps (it prices each read of a state as
        computing, saving and loading it): where the greedy starts. A state the search keeps at
        a time point not worth keeping at is taken at the latest one before it that is."""
        kept: set[int] = set()
        seen: set[tuple[int, Props]] = set()
        stack = [(self.keys[r].group, self.keys[r].props) for r in self.instance.roots]
        while stack:
            group, props = stack.pop()
            if (group, props) in seen:
                continue
            seen.add((group, props))
            won = self.search.winner(group, props)
            if won is None:
                continue
            alt = won.alternative
            if alt.operator == LOAD:
                (child, child_props), = alt.children
                child = self.memo.find(child)
                times = [t for (g, t) in self._candidates if g == child and t <= child_props.time]
                if times:
                    kept.add(self._candidates[(child, max(times))])
            stack.extend((self.memo.find(c), p) for c, p in alt.children)
        return kept


class MqoChooser:
    """The extractor's view of a selection over a (pruned) memo instance. Handles are
    ``(node, computes)``: ``computes`` asks for the node's computation (a kept state's fragment),
    not its cheapest way, which may be to load that state."""

    def __init__(self, built: MemoInstance, pruned: Pruned, selection: Selection) -> None:
        self.built = built
        self.pruned = pruned
        self.selection = selection
        self._by_key = {built.keys[old]: new for new, old in enumerate(pruned.nodes)}

    def root(self, group: int, time: int) -> Hashable:
        return (self._by_key[NodeKey(group, Props(time=time))], False)

    def kept(self, group: int, time: int) -> Hashable:
        return (self._by_key[NodeKey(group, NO_PROPS.at(time))], True)

    def where(self, handle: Hashable) -> tuple[int, Props]:
        node, _ = cast(tuple[int, bool], handle)
        key = self.built.keys[self.pruned.nodes[node]]
        return key.group, key.props

    def pick(self, handle: Hashable) -> Pick:
        node, computes = cast(tuple[int, bool], handle)
        table = self.selection.table
        index = table.computation(node) if computes else table.choice(node)
        if index < 0:
            raise ValueError(f"internal: node {node} has no way to be obtained under the chosen states")
        op = table.op(node, index)
        if op.is_load:
            group, kept_at = self.built.candidate_keys[self.pruned.candidates[op.candidate]]
            return Pick(None, (), group, kept_at)
        alt = self.built.alternatives[self.pruned.nodes[node]][self.pruned.ops[node][index]]
        assert alt is not None
        return Pick(alt, tuple((c, False) for c in op.children))


class WinnerChooser:
    """The extractor's view of the search's own winners (no sharing: ``mqo`` off). Handles are
    ``(group, props)``."""

    def __init__(self, memo: Memo, search: Search) -> None:
        self.memo = memo
        self.search = search

    def root(self, group: int, time: int) -> Hashable:
        return (self.memo.find(group), Props(time=time))

    def kept(self, group: int, time: int) -> Hashable:
        return (self.memo.find(group), NO_PROPS.at(time))

    def where(self, handle: Hashable) -> tuple[int, Props]:
        return cast(tuple[int, Props], handle)

    def pick(self, handle: Hashable) -> Pick:
        group, props = cast(tuple[int, Props], handle)
        won = self.search.winner(group, props) or self.search.optimize(group, props)
        if won is None:
            raise ValueError(f"internal: no winner for G{group} under {props}")
        alt = won.alternative
        if alt.operator == LOAD:
            (child, child_props), = alt.children
            return Pick(None, (), self.memo.find(child), child_props.time)
        return Pick(alt, tuple((self.memo.find(c), p) for c, p in alt.children))
