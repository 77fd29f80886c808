"""Extraction: a standing plan's choice turned into fragments and kept states.

:class:`Extractor` walks the choice (:mod:`tempura.optimizer.choosers`) from each delivery: a
delivery is a fragment, and so is each kept state, computed once at its time point and read by
the fragments that load it. Under a forced method, a fragment that runs another method (a
recompute after the first time point, or, under ``streaming``, anything that does not stream)
is given the reason (:func:`fallback_reason`), and the plan's notes repeat it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, Protocol

import networkx as nx

from tempura.algebra import LogicalPlan, Scan
from tempura.cost.model import format_time
from tempura.cost.vector import CostVector, Objective
from tempura.memo import GroupRef, Memo
from tempura.memo.properties import Props
from tempura.memo.search import outcome
from tempura.optimizer.choosers import Pick
from tempura.optimizer.keys import state_keys
from tempura.optimizer.layouts import find_merges, find_probes
from tempura.optimizer.slices import find_since
from tempura.optimizer.plans import JoinHint, fill_template, in_order
from tempura.rules.physical.tvr import KEYED
from tempura.rules.tvr import RULES, Expansion
from tempura.stats.relation import RelStats
from tempura.tvr.bounds import ArrivalBounds
from tempura.tvr.operators import SourceRead, StateRead
from tempura.tvr.plan import METHOD_ORDER, Fragment, KeptState

RULE_METHOD = {r.name: r.method for r in RULES}


@dataclass
class _Building:
    """What one fragment collects while its plan is built."""

    id: str
    time: int
    cost: CostVector
    sources: set[SourceRead] = field(default_factory=set)
    states: set[str] = field(default_factory=set)
    methods: set[str] = field(default_factory=set)
    groups: set[int] = field(default_factory=set)
    stats: dict[int, RelStats] = field(default_factory=dict)  # id of a built node -> its group's estimate
    reads: dict[int, float] = field(default_factory=dict)  # id of a built source read -> its estimated cost
    read_stats: dict[SourceRead, RelStats] = field(default_factory=dict)  # each source read's estimate


class Chooser(Protocol):
    """What the extractor asks of a plan choice (:mod:`tempura.optimizer.choosers`): handles of nodes, the
    (group, property) a handle stands for, and what each one is in the plan."""

    def root(self, group: int, time: int) -> Hashable: ...

    def kept(self, group: int, time: int) -> Hashable: ...

    def where(self, handle: Hashable) -> tuple[int, Props]: ...

    def pick(self, handle: Hashable) -> Pick: ...


def template_text(memo: Memo, group: int) -> str:
    """A group of the query as a user reads it: the query's result, or the operator that makes
    it and the tables beneath (``Aggregate over returns, sales``)."""
    if memo.root is not None and memo.find(group) == memo.find(memo.root):
        return "the result"
    first = memo.group(group).exprs[0]
    tables: set[str] = set()
    seen: set[int] = set()

    stack = [first]  # a loop, not a recursive closure: that would hold itself and the memo in a cycle
    while stack:
        node = stack.pop()
        if isinstance(node, GroupRef):
            if node.group not in seen:
                seen.add(node.group)
                stack.append(memo.group(node.group).exprs[0])
            continue
        if isinstance(node, Scan):
            tables.add(node.table)
        elif isinstance(node, SourceRead):
            tables.add(node.scan.table)
        stack.extend(node.inputs)
    over = f" over {', '.join(sorted(tables))}" if tables else ""
    if isinstance(first, (Scan, SourceRead)):
        return next(iter(tables))
    return f"{first.operator}{over}"


class Extractor:
    """Turns a plan choice into fragments and kept states.

    A delivery is a fragment; so is each kept state, computed once at its time point and read by
    the fragments that load it. Everything else is computed inside the fragment that reads it,
    once per reader, as the costs assume."""

    def __init__(self, memo: Memo, chooser: Chooser, expansion: Expansion, save: Callable[[RelStats], object], load: Callable[[RelStats], object], objective: Objective,
                 signatures: dict[int, str] | None = None, committed: dict[tuple[int, int], str] | None = None,
                 method: str = "auto", bounds: ArrivalBounds | None = None) -> None:
        self.memo = memo
        self.bounds = bounds if bounds is not None else ArrivalBounds({})  # for the reads an arrival lag bounds
        self.method = method  # the method the plan is forced to (its fragments say when they run another)
        self.committed = dict(committed or {})  # (group, time point) -> id of a state saved by an earlier run
        self.inputs: set[str] = set()  # the committed states the plan reads
        self._keys = state_keys(memo, expansion._forms, signatures or {})
        self.chooser = chooser
        self.expansion = expansion
        self.save = save
        self.load = load
        self.objective = objective
        self.fragments: dict[tuple[str, int, int], Fragment] = {}
        self.states: dict[str, KeptState] = {}
        self._next = 0
        self._forms = {self.memo.find(g): f"{f} of G{t}" for (t, f), g in expansion._forms.items()}
        self._described = {self.memo.find(g): f"{f.describe()} of {template_text(memo, t)}"
                           for (t, f), g in expansion._forms.items()}
        self.used: set[int] = set()  # the groups the fragments compute
        self._fused: dict[Hashable, Props] = {}  # handle -> its plan's union, pending copy and emptiness (_delivered)
        self._built: dict[str, _Building] = {}  # fragment id -> what its plan was built from

    def deliver(self, group: int, time: int, columns: list[str]) -> Fragment:
        """The fragment delivering ``group`` at ``time``, its columns in the query's order
        (states are read by column name, so a kept and delivered result can be reordered). A
        delivery that is itself kept at its time point is the state's fragment, read back."""
        group = self.memo.find(group)
        handle = self.chooser.root(group, time)
        pick = self.chooser.pick(handle)
        if pick.alternative is None and pick.group == group and pick.kept_at == time:
            fragment = self._producer(group, time)
            self._keep(fragment, group)
            fragment.cost = fragment.cost + CostVector.at(time, self.load(self.memo.group(group).stats), self.objective)  # type: ignore[arg-type]
        else:
            fragment = self._fragment(("result", group, time), handle, time)
        fragment.delivers = True
        fragment.plan = in_order(fragment.plan, columns)
        return fragment

    def _producer(self, group: int, time: int) -> Fragment:
        return self._fragment(("state", self.memo.find(group), time), self.chooser.kept(group, time), time)

    def _fragment(self, key: tuple[str, int, int], handle: Hashable, time: int) -> Fragment:
        made = self.fragments.get(key)
        if made is not None:
            return made
        group = key[1]
        self._next += 1
        building = _Building(f"f{self._next}", time, CostVector.zero(self.objective))
        hints: dict[LogicalPlan, JoinHint] = {}
        lines: list[str] = []
        plan = self._build(handle, building, hints, lines, 0)
        probes = tuple(find_probes(plan, lambda node: building.stats.get(id(node)), time,
                                   lambda node: building.reads.get(id(node), 0.0)))
        merges = tuple(find_merges(plan, lambda node: building.stats.get(id(node)), building.states))
        since = tuple(find_since(plan, {r.view: r for r in building.sources}, self.bounds,
                                 lambda node: building.stats.get(id(node)), time, lambda node: building.reads.get(id(node), 0.0)))
        plan = in_order(plan, list(self.memo.group(group).schema.names))
        method = max(building.methods or {"batch"}, key=METHOD_ORDER.index)
        self._built[building.id] = building
        fragment = Fragment(
            id=building.id,
            time=time,
            method=method,
            form=self._forms.get(group, f"G{group}"),
            computes=self._described.get(group, template_text(self.memo, group)),
            plan=plan,
            hints=hints,
            sources=tuple(sorted(building.sources, key=lambda r: r.view)),
            states=tuple(sorted(building.states)),
            rows=self.memo.group(group).stats.rows,
            cost=building.cost,
            physical="\n".join(lines),
            probes=probes,
            merges=merges,
            since=since,
        )
        for read in fragment.sources:  # a stream stages its interval's rows: written once, read back
            if fragment.streamed(read, self.method):
                stats = building.read_stats[read]
                fragment.cost = (fragment.cost + CostVector.at(time, self.save(stats), self.objective)  # type: ignore[arg-type]
                                 + CostVector.at(time, self.load(stats), self.objective))  # type: ignore[arg-type]
        self.fragments[key] = fragment
        return fragment

    def _keep(self, producer: Fragment, group: int) -> KeptState:
        if producer.keeps is None:
            stats = self.memo.group(group).stats
            taken = set(self.states) | set(self.committed.values())
            producer.keeps = next(f"s{n}" for n in range(len(self.states) + 1, len(taken) + 2) if f"s{n}" not in taken)
            producer.cost = producer.cost + CostVector.at(producer.time, self.save(stats), self.objective)  # type: ignore[arg-type]
            self.states[producer.keeps] = KeptState(producer.keeps, producer.time, [], [], stats.rows, stats.bytes, producer.form,
                                                   producer.id, self._keys.get(self.memo.find(group), ""), producer.computes)
        return self.states[producer.keeps]

    def _build(self, handle: Hashable, into: _Building, hints: dict[LogicalPlan, JoinHint], lines: list[str], depth: int) -> LogicalPlan:
        plan = self._build_node(handle, into, hints, lines, depth)
        into.stats.setdefault(id(plan), self.memo.group(self.chooser.where(handle)[0]).stats)
        return plan

    def _build_node(self, handle: Hashable, into: _Building, hints: dict[LogicalPlan, JoinHint], lines: list[str],
                    depth: int) -> LogicalPlan:
        group, props = self.chooser.where(handle)
        pick = self.chooser.pick(handle)
        stats = self.memo.group(group).stats
        self.used.add(group)
        into.groups.add(group)
        if pick.alternative is None and (self.memo.find(pick.group), pick.kept_at) in self.committed:
            state_id = self.committed[(self.memo.find(pick.group), pick.kept_at)]
            self.inputs.add(state_id)
            into.states.add(state_id)
            into.cost = into.cost + CostVector.at(into.time, self.load(stats), self.objective)  # type: ignore[arg-type]
            lines.append(f"{'  ' * depth}LoadState {state_id} (committed at t{pick.kept_at}) rows={stats.rows:.4g}")
            return self._state_read(state_id, pick.group, into, stats)
        if pick.alternative is None:
            producer = self._producer(pick.group, pick.kept_at)
            state = self._keep(producer, pick.group)
            state.read_by.append(into.id)
            state.read_at.append(into.time)
            into.states.add(state.id)
            into.cost = into.cost + CostVector.at(into.time, self.load(stats), self.objective)  # type: ignore[arg-type]
            lines.append(f"{'  ' * depth}LoadState {state.id} (saved by {producer.id} at t{producer.time}) rows={stats.rows:.4g}")
            return self._state_read(state.id, pick.group, into, stats)
        alt = pick.alternative
        own = alt.own if alt.full is None else alt.full  # a keyed read is priced with the plan's layouts
        extra, _ = outcome(alt, [self._delivered(c) for c in pick.children])
        if extra is not None:
            own = own + extra
        assert isinstance(own, CostVector)
        into.cost = into.cost + own
        lines.append(f"{'  ' * depth}{alt.operator} {alt.details}  rows={stats.rows:.4g} cost={format_time(own.times[props.time - 1])}")
        children = [self._build(c, into, hints, lines, depth + 1) for c in pick.children]
        if alt.logical is None:  # an enforcer or a partial aggregate: the plan is its input's
            return children[0]
        flat = all(isinstance(c, GroupRef) for c in alt.logical.inputs)  # top-k templates nest a sort
        origin = self.expansion.origin.get(self.memo.canonical(alt.logical)) if flat else None
        if origin is not None:
            into.methods.add(RULE_METHOD[origin])
        if isinstance(alt.logical, SourceRead):
            read = alt.logical
            if alt.hint is not None and alt.hint.startswith(f"{KEYED}:"):  # a view of its own, pruned by its probe
                read = dataclasses.replace(read, keyed=alt.hint.split(":", 1)[1])
            into.sources.add(read)
            into.read_stats[read] = stats
            lowered = read.lower([])
            into.reads[id(lowered)] = own.times[into.time - 1]
            return lowered
        plan = fill_template(alt.logical, children)
        if alt.hint is not None:
            strategy, side = alt.hint.split(":")
            hints[plan] = (strategy, side)
        return plan

    def _delivered(self, handle: Hashable) -> Props:
        """The delivered properties of the picked plan of ``handle`` that follow Spark's
        compilation of stages (:func:`~tempura.memo.search.outcome`); a load of a state starts
        a stage."""
        known = self._fused.get(handle)
        if known is None:
            pick = self.chooser.pick(handle)
            known = Props()
            if pick.alternative is not None:
                known = outcome(pick.alternative, [self._delivered(c) for c in pick.children])[1]
            self._fused[handle] = known
        return known

    def _state_read(self, state_id: str, group: int, into: _Building, stats: RelStats) -> LogicalPlan:
        lowered = StateRead(state_id, tuple(self.memo.group(group).schema.fields)).lower([])
        into.reads[id(lowered)] = CostVector.at(into.time, self.load(stats), self.objective).times[into.time - 1]  # type: ignore[arg-type]
        return lowered

    def explain_fallbacks(self) -> None:
        """Give each fragment that runs another method than the forced one the reason
        (:func:`falls_back`, :func:`fallback_reason`); once every delivery is extracted."""
        for fragment in self.fragments.values():
            built = self._built[fragment.id]
            if fragment.method == self.method or self.method in ("auto", "batch"):
                continue
            recomputed = bool(self.expansion.notes(built.groups)) or any(
                self.expansion._form_of.get(self.memo.find(g)) in self.expansion._fell_back for g in built.groups)
            if falls_back(self.method, fragment.method, fragment.time, fragment.delivers or recomputed):
                fragment.fallback = fallback_reason(self.memo, self.expansion, self.method, built.groups,
                                                    {r.scan for r in built.sources})

    def ordered(self) -> list[Fragment]:
        """The fragments by time point, each after the fragments whose states it reads."""
        graph = nx.DiGraph()
        producers = {f.keeps: f.id for f in self.fragments.values() if f.keeps}
        by_id = {f.id: f for f in self.fragments.values()}
        graph.add_nodes_from(by_id)
        for f in by_id.values():
            for s in f.states:
                if s in producers:  # else a committed state, saved by an earlier run
                    graph.add_edge(producers[s], f.id)
        return [by_id[i] for i in nx.lexicographical_topological_sort(graph, key=lambda i: (by_id[i].time, int(i[1:])))]


def falls_back(forced: str, method: str, time: int, recomputes: bool) -> bool:
    """Whether a fragment labelled ``method`` at ``time`` runs another method than the ``forced``
    one. Every method computes the first time point's results whole (there is nothing kept to
    maintain yet); ``ojv`` and ``higher-order`` extend ``ivm`` (an ``ivm`` fragment is theirs
    too), and their deltas read inputs' snapshots computed whole. So a ``batch`` fragment after
    the first time point falls back from an incremental method when it ``recomputes`` what the
    method maintains (the result, or a form the expansion had to recompute), and under
    ``streaming`` every other fragment that does not stream falls back."""
    if forced in ("auto", "batch") or method == forced:
        return False
    if method == "batch":
        return time > 1 and (recomputes or forced == "streaming")
    return forced == "streaming"


def fallback_reason(memo: Memo, expansion: Expansion, forced: str, groups: Iterable[int], reads: Iterable[Scan]) -> str:
    """Why a fragment computing ``groups`` (reading the sources ``reads``) runs another method than
    the ``forced`` one, most specific first: a construct the expansion had to recompute; under
    ``streaming``, the sources that deliver deletions (streaming emits rows as they arrive and
    never retracts one); the forced method's own alternative, when the search had one and found
    it dearer; else that none of its rules applies."""
    groups = {memo.find(g) for g in groups}
    recomputed = expansion.notes(groups)
    if recomputed:
        return "; ".join(f"{what}: {why}" for what, why in sorted(recomputed.items()))
    if forced == "streaming":
        scans = list(reads) or [e for g in expansion._template for e in expansion.template_exprs(g) if isinstance(e, Scan)]
        deleting = sorted({s.table for s in scans if not expansion.source_insert_only(s)})
        if deleting:
            names = ", ".join(f"'{t}'" for t in deleting)
            return (f"source{'s' if len(deleting) > 1 else ''} {names} deliver{'' if len(deleting) > 1 else 's'} deletions, "
                    "and streaming emits rows as they arrive, never retracting one")
    own = any(RULE_METHOD.get(expansion.origin.get(memo.canonical(e), ""), "") == forced
              for g in groups for e in memo.group(g).exprs if not isinstance(e, GroupRef))
    if own:
        return f"its {forced} alternative is estimated to cost more"
    if forced == "streaming":
        return "no streaming rule applies: streaming splits outer joins over insert-only inputs and accumulates results that only grow"
    return f"no {forced} rule applies to it"


FALLS_BACK = "{method} falls back: "


def fallback_notes(method: str, fragments: Iterable[Fragment]) -> list[str]:
    """The plan's notes on the fragments that run another method than the forced ``method``: one
    per reason, naming the fragments."""
    by_reason: dict[str, list[Fragment]] = {}
    for f in fragments:
        if f.fallback:
            by_reason.setdefault(f.fallback, []).append(f)
    return [FALLS_BACK.format(method=method) + ", ".join(f"{f.id} at t{f.time} runs {f.method}" for f in fs) + f": {reason}"
            for reason, fs in by_reason.items()]



__all__ = ["Chooser", "Extractor", "FALLS_BACK", "RULE_METHOD", "fallback_notes", "fallback_reason", "falls_back", "template_text"]
