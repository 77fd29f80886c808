"""The optimizer's phases, and the two pipelines made of them.

A one-off query runs :data:`ONE_OFF`: ``normalize`` → ``explore`` → ``collapse`` → ``implement``
→ ``extract``. A standing query runs :data:`STANDING`: ``normalize`` → ``explore`` →
``implement`` → ``expand`` → ``copy`` → ``rewrite-expanded`` → ``collapse`` → ``search`` →
``select-states`` → ``extract`` → ``layouts``. Each phase works on one :class:`Planning`:

- ``normalize``: predicate pushdown and projection pruning to a fixpoint
  (:func:`tempura.rules.logical.normalize`);
- ``explore``: the plan goes into a memo (inner joins in canonical form), and the join rules
  explore it until no rule adds anything — disabled, the memo holds the written join order;
- ``collapse``: stacked filters and projections collapse (:mod:`tempura.rules.logical.collapse`),
  over the explored memo, or the expanded one for a standing query (crediting each collapsed
  expression to the TVR rule of the most incremental method among the parts it replaces);
- ``implement``: the cheapest physical plan at one time point (:class:`~tempura.memo.Search`
  with :class:`~tempura.rules.physical.SparkImplementer`). It is a one-off query's plan; a
  standing query runs it only when its template has more than :data:`JOIN_ORDER_LIMIT` logical
  expressions, and then expands only the join order it picks — disabled, every join order is
  expanded;
- ``expand``: the TVR expansion (:mod:`tempura.rules.tvr`) of the forms the deliveries need, by
  the rules of the method; with ``copy`` on, only the deliveries up to version 2;
- ``copy``: the later deliveries' forms, copied from version 2's memo groups with versions
  shifted (the rules that fire at particular versions run on top) — disabled, ``expand`` makes
  every version by rules;
- ``rewrite-expanded``: the TVR rules that ask about whole expanded groups
  (``tvr-narrow-keyed-read``);
- ``search``: the memo search with :class:`~tempura.rules.physical.tvr.TimedImplementer`: every
  group optimized for the time point its consumer runs at, choosing for each input whether to
  compute it then or earlier and keep it, by the weighted objective ``Σ w_i·c_i``;
- ``select-states``: which results to keep, and when (:mod:`tempura.mqo`), by the greedy or the
  ILP over an instance built from the memo — disabled, the search's own winners are kept, which
  share nothing between consumers;
- ``extract``: the winner back to a logical plan with join hints (one-off), or to fragments and
  kept states (:class:`~tempura.optimizer.extract.Extractor`);
- ``layouts``: how each probed source lands and each probed state is written, over the whole
  plan (:mod:`tempura.optimizer.layouts`) — disabled, nothing is laid out and the search offers
  no keyed reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

from tempura.algebra import LogicalPlan, Query
from tempura.cost.operators import SparkCosts
from tempura.cost.vector import CostVector, Objective
from tempura.errors import TempuraError
from tempura.infer import Prover
from tempura.memo import Memo, PhysicalPlan, Rule, RuleEngine, Search, Trace
from tempura.memo.properties import Props
from tempura.mqo import MqoOptions, Selection, select
from tempura.mqo.instance import Pruned, prune
from tempura.optimizer.choosers import MemoInstance, MqoChooser, WinnerChooser
from tempura.optimizer.extract import RULE_METHOD, Chooser, Extractor, fallback_notes
from tempura.optimizer.keys import Resume, committed_groups, template_signatures
from tempura.optimizer.slices import choose_slices, one_layout_each, price_since
from tempura.optimizer.layouts import (choose_layouts, choose_merge_layouts, choose_state_layouts, price, price_merges,
                                       price_states, versions_of_one_relation)
from tempura.optimizer.pipeline import Phase, Pipeline
from tempura.optimizer.plans import JoinHint, in_order, to_logical
from tempura.rules.logical import normalize
from tempura.rules.logical.collapse import collapse
from tempura.rules.logical.joins import JoinAssociate, JoinPushThroughJoin, canonical_joins
from tempura.rules.logical.reorder import JoinReorder
from tempura.rules.physical import SparkImplementer
from tempura.rules.physical.tvr import KEYED_READ, TimedImplementer
from tempura.rules.registry import REGISTRY, exploration_rules
from tempura.rules.tvr import Expansion, rules_for
from tempura.rules.tvr.expansion import COPY_FROM
from tempura.stats.relation import RelStats
from tempura.tvr.bounds import ArrivalBounds
from tempura.tvr.layout import Layout, pruned
from tempura.tvr.operators import SourceRead
from tempura.tvr.plan import METHOD_ORDER, MultiTimePlan
from tempura.tvr.time import TimePoints
from tempura.tvr.zset import MULT

JOIN_ORDER_LIMIT = 32
"""Above this many logical expressions, a standing query's expansion keeps only the join order
the ``implement`` phase picks."""


@dataclass
class Standing:
    """What a standing query's planning is asked: its time points, objective, method, output
    mode (``snapshot``: ``SS[v]`` at each delivery; ``delta``: ``SD[v-1,v]``, a Z-set with the
    multiplicity column ``__m``), state selection and the committed part of its cycle."""

    sql: str
    time_points: TimePoints
    objective: Objective
    method: str
    output: str
    mqo: MqoOptions
    resume: Resume
    insert_only: Callable[[str], bool]
    bounds: ArrivalBounds
    fraction: Callable[[str, int, int], float] = lambda _table, start, end: 0.0  # a source's share of rows in (start, end]


@dataclass
class Planning:
    """One planning, as the phases build it up."""

    query: Query
    off: frozenset[str]  # disabled rules and phases
    costs: SparkCosts
    derive: Callable[[LogicalPlan, list[RelStats]], RelStats]
    dp_limit: int
    standing: Standing | None = None
    tracer: Trace | None = None
    fired: list[str] = field(default_factory=list)  # normalization rules, in order
    plan: LogicalPlan | None = None  # normalized
    memo: Memo | None = None
    root: int = 0
    firings: int = 0  # exploration rule firings
    template_groups: int = 0
    prover: Prover | None = None
    signatures: dict[int, str] = field(default_factory=dict)
    expansion: Expansion | None = None
    roots: dict[int, int] = field(default_factory=dict)  # delivery time point -> root group
    committed: dict[int, tuple[int, str]] = field(default_factory=dict)  # group -> (time point, state id)
    implementer: TimedImplementer | None = None
    search: Search | None = None
    physical: PhysicalPlan | None = None
    hints: dict[LogicalPlan, JoinHint] = field(default_factory=dict)
    chooser: Chooser | None = None
    selection: Selection | None = None
    result: LogicalPlan | MultiTimePlan | None = None

    @property
    def classic_off(self) -> set[str]:
        """The disabled rules that are not TVR rules (what the one-time-point engines are given)."""
        return set(self.off) - set(REGISTRY.names("tvr"))

    def the_memo(self) -> Memo:
        assert self.memo is not None, "the explore phase makes the memo"
        return self.memo

    def asked(self) -> Standing:
        assert self.standing is not None, "a standing query's phase"
        return self.standing

    def the_expansion(self) -> Expansion:
        assert self.expansion is not None, "the expand phase makes the expansion"
        return self.expansion


# -- the phases --------------------------------------------------------------------------------

def _normalize(p: Planning) -> str:
    p.plan = normalize(p.query.plan, p.off, p.fired)
    return f"{len(p.fired)} rewrites" + (f" ({', '.join(dict.fromkeys(p.fired))})" if p.fired else "")


def _unnormalized(p: Planning) -> str:
    p.plan = p.query.plan
    return "the plan as bound"


def _memo_of(p: Planning, rules: list[Rule]) -> Memo:
    memo = Memo(p.derive)
    engine = RuleEngine(memo, rules, p.tracer)
    assert p.plan is not None
    p.root = memo.root = memo.insert(canonical_joins(p.plan))
    engine.seed()
    engine.run()
    memo.listeners.clear()
    p.firings = engine.firings
    p.memo = memo
    p.template_groups = memo.size()[0]
    return memo


def _explore(p: Planning) -> str:
    rules = [r for r in exploration_rules(p.dp_limit) if r.name not in p.off]
    if JoinReorder.name not in p.off:
        # The enumerator covers every region of three or more joined relations completely;
        # associate and push-through would only rediscover what it added.
        rules = [r for r in rules if r.name not in (JoinAssociate.name, JoinPushThroughJoin.name)]
    groups, exprs = _memo_of(p, rules).size()
    return f"{groups} groups, {exprs} logical expressions, {p.firings} rule firings"


def _unexplored(p: Planning) -> str:
    groups, exprs = _memo_of(p, []).size()
    return f"the written join order only: {groups} groups, {exprs} logical expressions"


def _collapse(p: Planning) -> str:
    memo = p.the_memo()
    before = memo.size()[1]
    made = collapse(memo, p.off, p.tracer)
    if p.expansion is not None:
        # a collapsed expression is credited to the rule, among those that made the parts it
        # replaces, of the most incremental method (what its fragment is labelled with)
        for rule in made:
            for plan, parts in rule.made:
                origins = [o for o in (p.expansion.origin.get(memo.canonical(q)) for q in parts) if o is not None]
                if origins:
                    p.expansion.origin.setdefault(memo.canonical(plan),
                                                  max(origins, key=lambda o: METHOD_ORDER.index(RULE_METHOD[o])))
    p.root = memo.find(p.root)
    p.roots = {v: memo.find(g) for v, g in p.roots.items()}
    if p.prover is not None:
        p.prover.forget()
    return f"{memo.size()[1] - before} collapsed expressions"


def _implement(p: Planning) -> str:
    memo = p.the_memo()
    if p.standing is not None and memo.size()[1] <= JOIN_ORDER_LIMIT:
        return f"not needed: every join order is expanded ({memo.size()[1]} logical expressions)"
    search = Search(memo, SparkImplementer(memo, p.costs, p.classic_off))
    if search.optimize(memo.find(p.root)) is None:
        if p.standing is not None:
            return "no plan at one time point: every join order is expanded"
        raise TempuraError(f"no physical plan for the query with rules disabled: {', '.join(sorted(p.off))}")
    p.physical = search.extract(memo.find(p.root))
    p.search = search
    if p.standing is None:
        return f"{search.stats.alternatives} alternatives ({search.stats.pruned} pruned by cost bound), {search.winner_count} winners"
    best = Memo(p.derive)  # a template of the one join order the search picked
    best.root = best.insert(to_logical(p.physical, {}))
    p.memo, p.root = best, best.root
    p.template_groups = best.size()[0]
    p.physical, p.search = None, None
    return f"{memo.size()[1]} logical expressions: kept the best join order ({best.size()[1]})"


def _every_order(p: Planning) -> str:
    return "every join order is expanded"


def _deliver(p: Planning, versions: list[int]) -> None:
    asked, expansion = p.asked(), p.the_expansion()
    for v in versions:
        ref = expansion.ss(p.root, v) if asked.output == "snapshot" else expansion.sd(p.root, v)
        if ref is None:
            raise TempuraError(f"no rule of method {asked.method} computes the query's {asked.output} at t{v}")
        p.roots[v] = ref.group


def _due(p: Planning) -> list[int]:
    asked = p.asked()
    return [v for v in asked.time_points.deliver if v >= asked.resume.floor]


def _expand(p: Planning) -> str:
    asked, memo = p.asked(), p.the_memo()
    p.prover = Prover(memo, asked.bounds) if asked.bounds else None
    p.signatures = template_signatures(memo, p.template_groups)
    tvr_off = set(p.off) & set(REGISTRY.names("tvr"))
    copying = "copy" not in p.off
    p.expansion = Expansion(memo, asked.time_points.k, rules_for(asked.method, tvr_off),
                            lambda scan: asked.insert_only(scan.table), p.root,
                            forced=None if asked.method in ("auto", "batch") else asked.method, copy=copying,
                            prover=p.prover)
    due = [v for v in _due(p) if not copying or v <= COPY_FROM]
    _deliver(p, due)
    if copying and any(v > COPY_FROM for v in _due(p)):
        # what the copy phase copies the later deliveries from: the delivered form at version 2
        source = p.expansion.ss(p.root, COPY_FROM) if p.asked().output == "snapshot" else p.expansion.sd(p.root, COPY_FROM)
        due = sorted({*due, COPY_FROM}) if source is not None else due
    return f"{p.expansion.report.forms} forms for {', '.join(f't{v}' for v in due) or 'no time point'}"


def _copy(p: Planning) -> str:
    expansion = p.the_expansion()
    before = expansion.report.copied
    later = [v for v in _due(p) if v > COPY_FROM]
    _deliver(p, later)
    return f"{expansion.report.copied - before} plans copied for {', '.join(f't{v}' for v in later) or 'no later time point'}"


def _by_rules(p: Planning) -> str:
    return "the expand phase made every version by rules"


def _rewrite_expanded(p: Planning) -> str:
    expansion = p.the_expansion()
    if p.prover is not None:
        p.prover.forget()  # rules asked about groups that have grown since
    before = sum(expansion.report.firings.values())
    expansion.finish()
    return f"{sum(expansion.report.firings.values()) - before} rule firings"


def _search(p: Planning) -> str:
    asked, memo, expansion = p.asked(), p.the_memo(), p.the_expansion()
    if not p.roots:
        raise TempuraError(f"nothing to plan: every delivery is before t{asked.resume.floor}")
    p.committed = committed_groups(memo, expansion, p.signatures, asked.resume)
    counted = {c.id: c.rows for c in asked.resume.states if c.rows is not None}
    memo.measured({g: counted[i] for g, (_, i) in p.committed.items() if i in counted})  # a saved state's size is known
    laid = {c.id: c.layout for c in asked.resume.states if c.layout is not None}
    p.implementer = TimedImplementer(memo, p.costs, asked.objective, SparkImplementer(memo, p.costs, p.classic_off),
                                     asked.resume.floor, {g: t for g, (t, _) in p.committed.items()}, p.prover,
                                     lambda table: not asked.insert_only(table), asked.fraction,
                                     probing=not {"layouts", KEYED_READ.name} & p.off,
                                     committed_layouts={g: laid[i] for g, (_, i) in p.committed.items() if i in laid},
                                     landed=asked.resume.landed_layout)
    p.search = Search(memo, p.implementer)
    for v, group in p.roots.items():
        if p.search.optimize(group, Props(time=v)) is None:
            raise TempuraError(f"no plan delivers the result at t{v} with method {asked.method} and the rules disabled")
    return f"{p.search.stats.alternatives} alternatives, {p.search.winner_count} winners"


def instance(p: Planning, budget: float | None) -> tuple[MemoInstance, Pruned, set[int]]:
    """The memo's state-selection instance (every time point a candidate under a budget),
    pruned, and the search plan's kept set in it."""
    assert p.search is not None and p.implementer is not None
    built = MemoInstance(p.the_memo(), p.search, p.implementer, p.asked().objective, all_times=budget is not None)
    built.build([(g, v) for v, g in p.roots.items()])
    pruned = prune(built.instance)
    index = {old: new for new, old in enumerate(pruned.candidates)}
    return built, pruned, {index[c] for c in built.start() if c in index}


def _select_states(p: Planning) -> str:
    options = p.asked().mqo
    built, pruned, start = instance(p, options.budget)
    p.selection = select(pruned.instance, start, options)
    p.chooser = MqoChooser(built, pruned, p.selection)
    return f"{p.selection.selector}: {len(pruned.candidates)} candidate states"


def _winners(p: Planning) -> str:
    assert p.search is not None
    p.chooser = WinnerChooser(p.the_memo(), p.search)
    return "the search's own winners are kept"


def _extract_one_off(p: Planning) -> str:
    assert p.physical is not None
    p.result = in_order(to_logical(p.physical, p.hints), list(p.query.plan.schema.names))
    return f"{len(p.hints)} join hints"


def _extract_standing(p: Planning) -> str:
    asked, memo, expansion = p.asked(), p.the_memo(), p.the_expansion()
    assert p.chooser is not None
    extractor = Extractor(memo, p.chooser, expansion, p.costs.state_write, p.costs.state_read, asked.objective,
                          p.signatures, {(g, t): i for g, (t, i) in p.committed.items()}, asked.method, asked.bounds)
    columns = list(p.query.plan.schema.names) + ([MULT] if asked.output == "delta" else [])
    delivered = {v: extractor.deliver(group, v, columns).id for v, group in p.roots.items()}
    extractor.explain_fallbacks()
    fragments = extractor.ordered()
    notes = [f"{op}: {why}" for op, why in sorted(expansion.notes(extractor.used).items())]
    notes += fallback_notes(asked.method, fragments)
    p.result = MultiTimePlan(
        query=p.query,
        sql=asked.sql,
        time_points=asked.time_points,
        objective=asked.objective,
        method=asked.method,
        fragments=fragments,
        states=list(extractor.states.values()),
        cost=sum((f.cost for f in fragments), CostVector.zero(asked.objective)),
        deliveries=delivered,
        notes=notes,
        output=asked.output,
        selector=p.selection.selector if p.selection is not None else "off",
        state_budget=asked.mqo.budget,
        floor=asked.resume.floor,
        inputs=sorted(extractor.inputs),
        constants=p.costs.k,
    )
    return f"{len(fragments)} fragments, {len(extractor.states)} kept states"


def _layouts(p: Planning) -> str:
    plan = p.result
    assert isinstance(plan, MultiTimePlan)
    asked = p.asked()
    factor = p.costs.k.probe_keys  # the key estimates, as the run history has calibrated them
    if factor != 1.0:
        for f in plan.fragments:
            f.probes = tuple(dataclasses.replace(probe, distinct=probe.distinct * factor) for probe in f.probes)
            f.merges = tuple(dataclasses.replace(merge, distinct=merge.distinct * factor) for merge in f.merges)
    reads = {read.view: read for f in plan.fragments for read in f.sources if not f.streamed(read, plan.method)}
    sizes = _interval_sizes(asked, [(reads.get(view), probe.bytes) for f in plan.fragments
                                    for view, probe in pruned(f.probes, f.plan).items()])
    landed = asked.resume.landed_layout
    choices = choose_layouts(plan, reads, sizes, p.costs.k, landed)
    sliced = _interval_sizes(asked, [(reads.get(since.view), since.bytes) for f in plan.fragments for since in f.since])
    # a source lands one way: by hash or in time slices, as its first laid-out interval did, else
    # as saves more
    kinds = {(name, layout.sliced) for name, _, layout in asked.resume.landed if layout is not None}
    choices = [c for c in choices if (c.source, True) not in kinds]
    slicing = choose_slices(plan, sliced, p.costs.k, asked.bounds, landed, {name for name, s in kinds if not s})
    choices, slicing = one_layout_each(choices, slicing)
    probed = choose_state_layouts(plan, p.costs.k)
    merged = choose_merge_layouts(plan, p.costs.k)
    kept = {state_id: max(found, key=lambda c: c[1])[0]
            for state_id in set(probed) | set(merged) if (found := [c for c in (probed.get(state_id), merged.get(state_id)) if c])}
    states = {s.id: s for s in plan.states}
    committed = {c.id: c for c in asked.resume.states if c.layout is not None and c.id in plan.inputs}
    for f in plan.fragments:  # a merge from a laid-out committed state keeps its layout going
        for merge in f.merges:
            before = committed.get(merge.state)
            after = states.get(f.keeps or "")
            if (before is not None and after is not None and after.id not in kept and before.layout is not None
                    and merge.column == before.layout.column and versions_of_one_relation(after.key, before.key)):
                kept[after.id] = before.layout
    laid = {**{c.id: c.layout for c in committed.values() if c.layout is not None}, **kept}
    plan.layouts = {c.source: {i: c.layout for i in c.intervals} for c in choices}
    plan.layouts.update({source: {i: layout for i in intervals} for source, (layout, intervals, _) in slicing.items()})
    for f in plan.fragments:
        price(f, choices, reads, sizes, p.costs.k, asked.objective, landed)
        price_states(f, laid, p.costs.k, asked.objective)
        price_merges(f, laid, states, p.costs.k, asked.objective)
        price_since(f, _with_landed(plan, asked.resume.landed), sliced, asked.bounds, p.costs.k, asked.objective)
    plan.states = [dataclasses.replace(s, layout=kept.get(s.id)) for s in plan.states]
    plan.cost = sum((f.cost for f in plan.fragments), CostVector.zero(asked.objective))
    said = [f"{c.source}: intervals {', '.join(map(str, c.intervals))} {c.layout.describe()}" for c in choices]
    said += [f"{source}: intervals {', '.join(map(str, intervals))} {layout.describe()}"
             for source, (layout, intervals, _) in sorted(slicing.items())]
    said += [f"state {state_id}: {layout.describe()}" for state_id, layout in sorted(kept.items())]
    return "; ".join(said) or "nothing laid out"


def _interval_sizes(asked: Standing, found: Iterable[tuple[SourceRead | None, float]]) -> dict[str, list[float]]:
    """Per source of the reads ``found`` (each with its estimated bytes), each interval's bytes:
    the cycle's as the largest of its reads' estimates scales up, split by the arrival model."""
    whole: dict[str, float] = {}
    for read, size in found:
        share = asked.fraction(read.scan.table, read.start, read.end) if read is not None else 0.0
        if read is not None and share > 0:
            whole[read.scan.table] = max(whole.get(read.scan.table, 0.0), size / share)
    k = asked.time_points.k
    return {name: [b * asked.fraction(name, i - 1, i) for i in range(1, k + 1)] for name, b in whole.items()}


def _with_landed(plan: MultiTimePlan, landed: Iterable[tuple[str, int, Layout | None]]) -> dict[str, dict[int, Layout]]:
    """Per source and interval, the layout it lands in: as it landed, else as the plan chose."""
    out = {name: dict(by_index) for name, by_index in plan.layouts.items()}
    for name, index, layout in landed:
        out.setdefault(name, {}).pop(index, None)
        if layout is not None:
            out[name][index] = layout
    return out


NORMALIZE = Phase("normalize", _normalize, "predicate pushdown and projection pruning to a fixpoint", _unnormalized)
EXPLORE = Phase("explore", _explore, "the memo, and the join rules to a fixpoint", _unexplored)
COLLAPSE = Phase("collapse", _collapse, "stacked filters and projections collapse")
IMPLEMENT = Phase("implement", _implement, "the cheapest physical plan at one time point")
IMPLEMENT_STANDING = Phase("implement", _implement,
                           "the cheapest physical plan at one time point; a large template keeps only its join order",
                           _every_order)
EXPAND = Phase("expand", _expand, "the TVR forms the deliveries need, by the method's rules", required=True)
COPY = Phase("copy", _copy, "the later versions' forms, copied from version 2's", _by_rules)
REWRITE_EXPANDED = Phase("rewrite-expanded", _rewrite_expanded, "TVR rules over whole expanded groups")
SEARCH = Phase("search", _search, "the memo search at each delivery's time point, by the weighted objective", required=True)
SELECT_STATES = Phase("select-states", _select_states, "which results to keep, and when (greedy or ILP)", _winners)
EXTRACT = Phase("extract", _extract_one_off, "the winner as a logical plan with join hints", required=True)
EXTRACT_STANDING = Phase("extract", _extract_standing, "the choice as fragments and kept states", required=True)
LAYOUTS = Phase("layouts", _layouts, "how each probed source lands: hash-bucketed by the key its probes read, priced by the buckets "
                "they touch, or in time slices where a declared arrival lag bounds its reads")

ONE_OFF: Pipeline[Planning] = Pipeline((NORMALIZE, EXPLORE, COLLAPSE, dataclasses.replace(IMPLEMENT, required=True), EXTRACT))
STANDING: Pipeline[Planning] = Pipeline((NORMALIZE, EXPLORE, IMPLEMENT_STANDING, EXPAND, COPY, REWRITE_EXPANDED, COLLAPSE,
                                         SEARCH, SELECT_STATES, EXTRACT_STANDING, LAYOUTS))
PHASES = list(dict.fromkeys([*ONE_OFF.names, *STANDING.names]))

__all__ = ["JOIN_ORDER_LIMIT", "ONE_OFF", "PHASES", "Planning", "STANDING", "Standing", "instance"]
