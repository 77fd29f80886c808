"""The standing-query optimizer: one plan space over all incremental methods and time points.

:class:`IncrementalPlanner` plans a query over a cycle's time points:

1. normalization and logical exploration, as for a one-off query (:class:`~tempura.planner.Planner`):
   the memo holds every join order — the *template*;
2. TVR expansion (:mod:`tempura.rules.tvr`): the forms each delivery needs, and the forms those
   need, are added to the same memo as groups linked by TVR meta-sets; which rules run is the
   method (``auto`` runs them all);
3. the memo search with :class:`~tempura.rules.physical.tvr.TimedImplementer`: every group is
   optimized for the time point its consumer runs at, choosing for each input whether to compute
   it then or to compute it earlier and keep it, by the weighted objective ``Σ w_i·c_i``;
4. state selection (:mod:`tempura.mqo`): which results to keep, and when, over an instance built
   from the memo — shared between consumers of one time point and across time points — by the
   greedy or the ILP (``selector="off"`` keeps the search's own winners, which share nothing);
5. extraction (:class:`Extractor`): the chosen plan becomes fragments, cut wherever a result is
   kept; the plan's cost vector is summed over the fragments, each kept state saved once and
   loaded by each reader. Under a forced method, a fragment that runs another method (a
   recompute after the first time point, or, under ``streaming``, anything that does not stream)
   is given the reason (:func:`fallback_reason`), and the plan's notes repeat it.

The greedy is not exact, so :func:`best_of` still picks ``auto``'s plan as the cheapest of its
own and of each forced method's plan, all costed by the same extraction — with one exception: an
incremental plan replaces recomputation only when it saves at least a margin of recomputation's
objective (:data:`AUTO_MARGIN`). Its estimate rests on the arrival forecast and on more
fragments, states and exchanges than recomputation's, so a small estimated saving is within the
estimate's error, and recomputation, which keeps nothing, is the safer bet.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, Protocol

import networkx as nx

from tempura.algebra import LogicalPlan, Query, Scan
from tempura.cost.model import CostConstants, format_time
from tempura.cost.vector import CostVector, Objective
from tempura.errors import TempuraError
from tempura.memo import GroupRef, Memo, Search
from tempura.memo.properties import Props
from tempura.mqo import MqoOptions, Selection, select
from tempura.mqo.instance import Instance, Pruned, prune
from tempura.mqo.memo import MemoInstance, MqoChooser, Pick, WinnerChooser
from tempura.planner import JoinHint, Planner, _in_order, _to_logical, fill_template, gc_paused, rule_names
from tempura.rules.physical import PartialAggregate, SparkImplementer
from tempura.rules.physical.tvr import TimedImplementer
from tempura.rules.tvr import METHODS, RULE_NAMES, RULES, Expansion, rules_for
from tempura.rules.logical.collapse import collapse
from tempura.rules.logical.reorder import DP_LIMIT
from tempura.stats.estimate import Estimator
from tempura.stats.relation import RelStats
from tempura.tvr.bounds import ArrivalBounds, Prover
from tempura.tvr.estimate import TvrEstimator
from tempura.tvr.forms import Form
from tempura.tvr.operators import SourceRead, StateRead
from tempura.tvr.plan import METHOD_ORDER, Fragment, KeptState, MultiTimePlan
from tempura.tvr.time import TimePoints
from tempura.tvr.zset import MULT

RULE_METHOD = {r.name: r.method for r in RULES}


@dataclass(frozen=True)
class CommittedState:
    """A state an earlier run saved: its id, the time point it was saved at, and its
    :attr:`~tempura.tvr.plan.KeptState.key`."""

    id: str
    produced_at: int
    key: str


@dataclass(frozen=True)
class Resume:
    """Re-planning a cycle whose time points before ``floor`` are committed: new work runs at
    ``floor`` or later, and ``states`` saved before it may be read at the cost of a read."""

    floor: int
    states: tuple[CommittedState, ...] = ()


def template_signatures(memo: Memo, groups: int) -> dict[int, str]:
    """A signature of each of the first ``groups`` groups that two plannings of one query agree
    on: a digest of the group's first expression, its inputs replaced by their signatures. A
    state's key pairs its TVR form with its template group's signature, so a later planning finds
    the same relation even where it numbers groups differently."""
    import hashlib

    out: dict[int, str] = {}

    def sign(group: int, active: frozenset[int]) -> str:
        group = memo.find(group)
        made = out.get(group)
        if made is not None:
            return made
        if group in active:
            return "cycle"
        expr = memo.group(group).exprs[0]
        inputs = [sign(c.group, active | {group}) for c in expr.inputs if isinstance(c, GroupRef)]
        text = f"{expr.operator}|{expr.details()}|{','.join(inputs)}|{','.join(memo.group(group).schema.names)}"
        made = out[group] = hashlib.sha1(text.encode()).hexdigest()[:16]
        return made

    for g in range(groups):
        sign(g, frozenset())
    return out


def _payload(expr: LogicalPlan) -> str:
    """What an expression holds besides its inputs, in full: its display details and every
    field that is not an input (aggregate calls, predicates and projections as SQL)."""
    from sqlglot import exp

    def text(value: object) -> str:
        if isinstance(value, LogicalPlan):
            return ""
        if isinstance(value, exp.Expr):
            return value.sql()
        if isinstance(value, (tuple, list)):
            return "(" + ",".join(text(v) for v in value) + ")"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return type(value).__name__ + "(" + ",".join(text(getattr(value, f.name)) for f in dataclasses.fields(value)) + ")"
        return repr(value)

    own: list[str] = [text(getattr(expr, f.name)) for f in dataclasses.fields(expr)] if dataclasses.is_dataclass(expr) else []
    return f"{expr.details()}|{';'.join(own)}"


def state_keys(memo: Memo, forms: dict[tuple[int, Form], int], signatures: dict[int, str]) -> dict[int, str]:
    """A key for every group of an expanded memo that two plannings of one query agree on, so a
    state saved under one planning is found by the next. A group that is a TVR form of a
    template group is keyed ``form|signature``; any other group (a rule's intermediate
    relation, e.g. a consolidated Z-set) by a digest of its first expression in full, its
    inputs replaced by their keys. A group whose expression reaches back into itself gets no key:
    it is then never matched, which costs a recomputation, never a wrong state."""
    import hashlib

    out: dict[int, str] = {memo.find(g): f"{f}|{signatures[t]}" for (t, f), g in forms.items() if t in signatures}
    unkeyed: set[int] = set()

    def key(group: int, active: frozenset[int]) -> str | None:
        group = memo.find(group)
        if group in out:
            return out[group]
        if group in active or group in unkeyed:
            return None
        expr = memo.group(group).exprs[0]
        inputs = []
        for child in expr.inputs:
            if isinstance(child, GroupRef):
                made = key(child.group, active | {group})
                if made is None:
                    unkeyed.add(group)
                    return None
                inputs.append(made)
        schema = ",".join(f"{f.name}:{f.type}" for f in memo.group(group).schema.fields)
        digest = hashlib.sha1(f"{type(expr).__name__}|{_payload(expr)}|{'/'.join(inputs)}|{schema}".encode()).hexdigest()[:20]
        out[group] = f"expr|{digest}"
        return out[group]

    for g in memo.groups:
        key(g.id, frozenset())
    return out


@dataclass(frozen=True)
class Arrival:
    """What the planner needs of the arrival model: each source's share of rows per interval,
    whether it deletes, and what its reads are proven to hold (:mod:`tempura.tvr.bounds`)."""

    fraction: Callable[[str, int, int], float]
    insert_only: Callable[[str], bool]
    bounds: ArrivalBounds = field(default_factory=lambda: ArrivalBounds({}))

    @staticmethod
    def uniform(k: int, deletions: Iterable[str] = ()) -> Arrival:
        """Every source's rows spread evenly over the ``k`` intervals."""
        with_deletions = set(deletions)
        return Arrival(lambda _t, start, end: (end - start) / k, lambda table: table not in with_deletions)


class IncrementalPlanner(Planner):
    """Plans standing queries with one estimator, arrival model and set of cost constants."""

    def __init__(self, estimator: Estimator, arrival: Arrival, constants: CostConstants | None = None, dp_limit: int = DP_LIMIT) -> None:
        super().__init__(estimator, constants, dp_limit)
        self.arrival = arrival
        self.tvr_estimator = TvrEstimator(estimator, arrival.fraction, arrival.bounds)
        self._prover: Prover | None = None  # of the memo being planned

    def _derive(self, expr: LogicalPlan, inputs: list[RelStats]) -> RelStats:
        if isinstance(expr, PartialAggregate):
            return super()._derive(expr, inputs)
        stats = self.tvr_estimator.derive(expr, inputs)
        if self._prover is not None and self._prover.expr_empty(expr):
            return dataclasses.replace(stats, rows=0.0)
        return stats

    def plan_standing(
        self,
        query: Query,
        sql: str,
        time_points: TimePoints,
        objective: Objective,
        method: str = "auto",
        disabled: Iterable[str] = (),
        output: str = "snapshot",
        join_orders: str = "auto",
        copy: bool = True,
        mqo: MqoOptions | None = None,
        resume: Resume | None = None,
    ) -> MultiTimePlan:
        """The cheapest plan of ``query`` over ``time_points`` with the rules of ``method``.

        ``join_orders="all"`` expands every join order of the logical memo over time;
        ``"best"`` only the order the one-time-point search picks; ``"auto"`` is ``all`` up to
        :data:`JOIN_ORDER_LIMIT` logical expressions and ``best`` beyond, which keeps planning
                within seconds for five- to eight-way joins. ``copy=True`` (the default) copies version
        2's memo structure to the later versions instead of expanding them by rules
        (:mod:`tempura.rules.tvr.expansion`); ``copy=False`` expands every version by rules.

        ``output="snapshot"`` delivers ``SS[v]`` at each delivery ``v``; ``output="delta"``
        delivers the change since the previous time point, ``SD[v-1,v]`` (a Z-set with the
        multiplicity column ``__m``).

        ``mqo`` says how the kept states are chosen (:mod:`tempura.mqo`): by default the greedy,
        or the ILP when the instance is small enough; ``selector="off"`` keeps the search's own
        plan, which shares nothing between consumers.

        ``resume`` re-plans a cycle whose first time points are committed (:class:`Resume`): the
        plan runs from ``resume.floor`` on, delivers only from there, and may read the committed
        states at the cost of a read."""
        with gc_paused():
            return self._plan_standing(query, sql, time_points, objective, method, disabled, output, join_orders, copy,
                                       mqo or MqoOptions(), resume or Resume(1))

    def _search(self, query: Query, time_points: TimePoints, objective: Objective, method: str, disabled: Iterable[str],
                output: str, join_orders: str, copy: bool, resume: Resume | None = None) -> _Searched:
        """Steps 1–3: the template, its expansion over time, and the memo search per delivery."""
        if output not in ("snapshot", "delta"):
            raise TempuraError(f"unknown output mode '{output}' (known: snapshot, delta)")
        if objective.k != time_points.k:
            raise TempuraError(f"the objective has {objective.k} weights for {time_points.k} time points")
        off = set(disabled)
        unknown = off - set(RULE_NAMES) - set(rule_names())
        if unknown:
            raise TempuraError(f"unknown rule(s): {', '.join(sorted(unknown))} "
                               f"(known: {', '.join([*rule_names(), *RULE_NAMES])})")
        tvr_off = off & set(RULE_NAMES)
        off_classic = self.check_rules(off - tvr_off)
        started = time.perf_counter()
        if join_orders not in ("auto", "all", "best"):
            raise TempuraError(f"unknown join-order mode '{join_orders}' (known: auto, all, best)")
        memo, root, _ = self.explore(query, off_classic, None, [])
        if join_orders == "best" or (join_orders == "auto" and memo.size()[1] > JOIN_ORDER_LIMIT):
            memo, root = self._best_order(memo, root, off_classic)
        template = memo.size()
        self._prover = Prover(memo, self.arrival.bounds) if self.arrival.bounds else None
        signatures = template_signatures(memo, template[0])
        templated = time.perf_counter()
        expansion = Expansion(memo, time_points.k, rules_for(method, tvr_off), lambda scan: self.arrival.insert_only(scan.table), root,
                              forced=None if method in ("auto", "batch") else method, copy=copy,
                              prover=self._prover)
        roots: dict[int, int] = {}
        floor = resume.floor if resume is not None else 1
        for v in time_points.deliver:
            if v < floor:
                continue
            ref = expansion.ss(root, v) if output == "snapshot" else expansion.sd(root, v)
            if ref is None:
                raise TempuraError(f"no rule of method {method} computes the query's {output} at t{v}")
            roots[v] = ref.group
        if self._prover is not None:
            self._prover.forget()  # rules asked about groups that have grown since
        expansion.finish()  # rules that ask about whole expanded groups
        expanded = time.perf_counter()
        _collapse(memo, expansion, off_classic)  # timed with the search: expansion alone is compared
        roots = {v: memo.find(g) for v, g in roots.items()}
        if self._prover is not None:
            self._prover.forget()
        committed = _committed_groups(memo, expansion, signatures, resume)
        implementer = TimedImplementer(memo, self.costs, objective, SparkImplementer(memo, self.costs, off_classic),
                                       floor, {g: t for g, (t, _) in committed.items()}, self._prover,
                                       lambda table: not self.arrival.insert_only(table))
        search = Search(memo, implementer)
        for v, group in roots.items():
            if search.optimize(group, Props(time=v)) is None:
                raise TempuraError(f"no plan delivers the result at t{v} with method {method} and the rules disabled")
        searched = time.perf_counter()
        return _Searched(memo, expansion, implementer, search, roots, template[0], signatures, committed,
                         {"template_seconds": templated - started, "expand_seconds": expanded - templated,
                          "search_seconds": searched - expanded}, started)

    def state_instance(self, query: Query, time_points: TimePoints, objective: Objective, method: str = "auto",
                       budget: float | None = None) -> tuple[Instance, set[int]]:
        """The state selection's instance for ``query`` (pruned), and the kept set of the memo
        search's own plan: what :func:`~tempura.mqo.select` is given (for the MQO benchmark)."""
        with gc_paused():
            found = self._search(query, time_points, objective, method, (), "snapshot", "auto", True)
            _built, pruned, start = self._instance(found, objective, budget)
        return pruned.instance, start

    def _plan_standing(
        self,
        query: Query,
        sql: str,
        time_points: TimePoints,
        objective: Objective,
        method: str,
        disabled: Iterable[str],
        output: str,
        join_orders: str,
        copy: bool,
        mqo: MqoOptions,
        resume: Resume,
    ) -> MultiTimePlan:
        found = self._search(query, time_points, objective, method, disabled, output, join_orders, copy, resume)
        memo, expansion, roots, search = found.memo, found.expansion, found.roots, found.search
        if not roots:
            raise TempuraError(f"nothing to plan: every delivery is before t{resume.floor}")
        searched = time.perf_counter()
        chooser, selection = self._choose_states(found, objective, mqo)
        extractor = Extractor(memo, chooser, expansion, self.costs.state_write, self.costs.state_read, objective,
                              found.signatures, {(g, t): i for g, (t, i) in found.committed.items()}, method)
        columns = list(query.plan.schema.names) + ([MULT] if output == "delta" else [])
        delivered = {v: extractor.deliver(group, v, columns).id for v, group in roots.items()}
        extractor.explain_fallbacks()
        fragments = extractor.ordered()
        groups, exprs = memo.size()
        notes = [f"{op}: {why}" for op, why in sorted(expansion.notes(extractor.used).items())]
        notes += fallback_notes(method, fragments)
        return MultiTimePlan(
            query=query,
            sql=sql,
            time_points=time_points,
            objective=objective,
            method=method,
            fragments=fragments,
            states=list(extractor.states.values()),
            cost=sum((f.cost for f in fragments), CostVector.zero(objective)),
            deliveries=delivered,
            notes=notes,
            output=output,
            selector=selection.selector if selection is not None else "off",
            state_budget=mqo.budget,
            floor=resume.floor,
            inputs=sorted(extractor.inputs),
            constants=self.costs.k,
            search={
                "template_groups": found.template_groups,
                "groups": groups,
                "expressions": exprs,
                "forms": expansion.report.forms,
                "copied": expansion.report.copied,
                "tvr_rule_firings": dict(sorted(expansion.report.firings.items())),
                "alternatives": search.stats.alternatives,
                "winners": search.winner_count,
                **found.seconds,
                "mqo_seconds": time.perf_counter() - searched,
                "seconds": time.perf_counter() - found.started,
                **({"mqo": selection.report(selection.table.instance)} if selection is not None else {}),
            },
        )

    def _choose_states(self, found: _Searched, objective: Objective, options: MqoOptions) -> tuple[Chooser, Selection | None]:
        """The kept states: the selection over the memo's instance, or the search's own plan."""
        if options.selector == "off":
            return WinnerChooser(found.memo, found.search), None
        built, pruned, start = self._instance(found, objective, options.budget)
        selection = select(pruned.instance, start, options)
        return MqoChooser(built, pruned, selection), selection

    @staticmethod
    def _instance(found: _Searched, objective: Objective, budget: float | None) -> tuple[MemoInstance, Pruned, set[int]]:
        """The memo's instance (every time point a candidate under a budget), pruned, and the
        search plan's kept set in it."""
        built = MemoInstance(found.memo, found.search, found.implementer, objective, all_times=budget is not None)
        built.build([(g, v) for v, g in found.roots.items()])
        pruned = prune(built.instance)
        index = {old: new for new, old in enumerate(pruned.candidates)}
        return built, pruned, {index[c] for c in built.start() if c in index}


    def _best_order(self, memo: Memo, root: int, off: set[str]) -> tuple[Memo, int]:
        """A template holding only the join order the one-time-point search picks."""
        search = Search(memo, SparkImplementer(memo, self.costs, off))
        if search.optimize(root) is None:
            return memo, root
        plan = _to_logical(search.extract(memo.find(root)), {})
        best = Memo(self._derive)
        best.root = best.insert(plan)
        return best, best.root


JOIN_ORDER_LIMIT = 32
"""Above this many logical expressions, the time expansion keeps only the best join order."""


@dataclass
class _Searched:
    """What the search steps leave for state selection and extraction."""

    memo: Memo
    expansion: Expansion
    implementer: TimedImplementer
    search: Search
    roots: dict[int, int]  # delivery time point -> root group
    template_groups: int
    signatures: dict[int, str]  # template group -> signature
    committed: dict[int, tuple[int, str]]  # group -> (time point, id) of a committed state
    seconds: dict[str, float]
    started: float


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


class Chooser(Protocol):
    """What the extractor asks of a plan choice (:mod:`tempura.mqo.memo`): handles of nodes, the
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

    def walk(node: LogicalPlan) -> None:
        if isinstance(node, GroupRef):
            if node.group not in seen:
                seen.add(node.group)
                walk(memo.group(node.group).exprs[0])
            return
        if isinstance(node, Scan):
            tables.add(node.table)
        elif isinstance(node, SourceRead):
            tables.add(node.scan.table)
        for child in node.inputs:
            walk(child)

    walk(first)
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
                 method: str = "auto") -> None:
        self.memo = memo
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
        fragment.plan = _in_order(fragment.plan, columns)
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
        plan = _in_order(plan, list(self.memo.group(group).schema.names))
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
        )
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
            return StateRead(state_id, tuple(self.memo.group(pick.group).schema.fields)).lower([])
        if pick.alternative is None:
            producer = self._producer(pick.group, pick.kept_at)
            state = self._keep(producer, pick.group)
            state.read_by.append(into.id)
            state.read_at.append(into.time)
            into.states.add(state.id)
            into.cost = into.cost + CostVector.at(into.time, self.load(stats), self.objective)  # type: ignore[arg-type]
            lines.append(f"{'  ' * depth}LoadState {state.id} (saved by {producer.id} at t{producer.time}) rows={stats.rows:.4g}")
            return StateRead(state.id, tuple(self.memo.group(pick.group).schema.fields)).lower([])
        alt = pick.alternative
        own = alt.own
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
            into.sources.add(alt.logical)
            return alt.logical.lower([])
        plan = fill_template(alt.logical, children)
        if alt.hint is not None:
            strategy, side = alt.hint.split(":")
            hints[plan] = (strategy, side)
        return plan

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


def _collapse(memo: Memo, expansion: Expansion, off: set[str]) -> None:
    """Collapse stacked filters and projections over the expanded memo; a collapsed expression
    is credited to the rule, among those that made the parts it replaces, of the most
    incremental method (what its fragment is labelled with)."""
    for rule in collapse(memo, off):
        for plan, parts in rule.made:
            origins = [o for o in (expansion.origin.get(memo.canonical(p)) for p in parts) if o is not None]
            if origins:
                made = memo.canonical(plan)
                expansion.origin.setdefault(made, max(origins, key=lambda o: METHOD_ORDER.index(RULE_METHOD[o])))


def _committed_groups(memo: Memo, expansion: Expansion, signatures: dict[int, str], resume: Resume | None) -> dict[int, tuple[int, str]]:
    """The groups of the committed states this planning can read: group -> (time point, id)."""
    if resume is None or not resume.states:
        return {}
    groups: dict[str, int] = {}
    for group, key in state_keys(memo, expansion._forms, signatures).items():
        groups.setdefault(key, group)
    out: dict[int, tuple[int, str]] = {}
    for state in sorted(resume.states, key=lambda s: s.produced_at):
        found = groups.get(state.key)
        if found is not None and state.produced_at < resume.floor:
            out[found] = (state.produced_at, state.id)
    return out


FORCED = tuple(m for m in METHODS if m != "auto")
# The share of recomputation's objective an incremental plan must save for ``auto`` to take it.
AUTO_MARGIN = 0.1


def plan_methods(
    planner: IncrementalPlanner,
    query: Query,
    sql: str,
    time_points: TimePoints,
    objective: Objective,
    methods: Iterable[str] = METHODS,
    disabled: Iterable[str] = (),
    output: str = "snapshot",
    mqo: MqoOptions | None = None,
    errors: dict[str, TempuraError] | None = None,
    resume: Resume | None = None,
    margin: float = AUTO_MARGIN,
) -> dict[str, MultiTimePlan]:
    """Plans of ``query`` under each of ``methods``, side by side, their states chosen by ``mqo``.
    ``auto``'s is the best of its own search and every forced method's plan (:func:`best_of`), so
    its objective is never above theirs, unless it is recomputation's and the cheaper plans save
    less than ``margin`` of it; a forced method with no plan for the query (none within the state
    budget, say) is left out, its error put in ``errors``."""
    wanted = list(methods)
    plans: dict[str, MultiTimePlan] = {}
    errors = {} if errors is None else errors
    for method in dict.fromkeys([*(m for m in FORCED if m in wanted or "auto" in wanted), *wanted]):
        try:
            plans[method] = planner.plan_standing(query, sql, time_points, objective, method, disabled, output, mqo=mqo,
                                                  resume=resume)
        except TempuraError as error:
            errors[method] = error
    if "auto" in plans:
        cheapest = best_of(plans)
        chosen = best_of(plans, margin)
        if chosen is not cheapest:
            saving = 1 - cheapest.cost.weighted / chosen.cost.weighted
            note = (f"auto: recomputation, as the cheapest plan ({cheapest.method}) saves {saving:.1%} of its objective, "
                    f"less than the margin of {margin:.0%}")
        else:
            note = f"auto: the {chosen.method} plan is the cheapest"
        if chosen is not plans["auto"]:
            # auto was forced to nothing: the forced plan's fallbacks are no fallbacks of its
            forced = FALLS_BACK.format(method=chosen.method)
            fragments = [dataclasses.replace(f, fallback="") for f in chosen.fragments]
            chosen = dataclasses.replace(chosen, method="auto", fragments=fragments,
                                         notes=[*(n for n in chosen.notes if not n.startswith(forced)), note])
        plans["auto"] = chosen
    if not plans and errors:
        raise next(iter(errors.values()))
    return {m: plans[m] for m in wanted if m in plans}


def best_of(plans: dict[str, MultiTimePlan], margin: float = 0.0) -> MultiTimePlan:
    """``auto``'s plan: the lowest objective among ``plans`` (ties: less total work, then the
    order of the methods); but the ``batch`` plan, if there is one, when the lowest saves less
    than ``margin`` of its objective."""
    order = list(METHODS)
    best = min(plans.values(), key=lambda p: (round(p.cost.weighted, 3), round(p.cost.work, 3), order.index(p.method) if p.method in order else 0))
    batch = plans.get("batch")
    if batch is not None and best is not batch and best.cost.weighted > (1 - margin) * batch.cost.weighted:
        return batch
    return best


__all__ = ["AUTO_MARGIN", "FORCED", "Arrival", "CommittedState", "Extractor", "Resume", "IncrementalPlanner", "best_of", "plan_methods", "rule_names"]
