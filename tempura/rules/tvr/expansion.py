"""TVR expansion: the memo groups for the forms a plan needs, built by the TVR rules.

The logical memo (after join exploration) is the *template*: each of its groups is a relation
over all the data. A TVR meta-set per template group links the groups that compute its forms —
``SS[v]``, ``SD[v-1,v]``, ``PS[v]``, ``VD[v-1,v]`` (:mod:`tempura.tvr.forms`). A form's group is
made on first request: every enabled rule for that form kind is tried on every logical
expression of the template group, and what the rules return (operators over the groups of other
forms, which are requested in turn) is inserted into one memo group.

Rules come in two phases, as the Tempura seed's families do:

- *generating* rules derive a form from the forms of the operator's **inputs** (the snapshot of a
  join is the join of the inputs' snapshots; its delta is ``ΔS ⋈ R_i + S_j ⋈ ΔR``);
- *intra-TVR* rules relate forms of the **same** TVR (``SS[v] = SS[v-1] +# SD[v-1,v]``) and run
  once the form's group exists, so that the cycles they describe (a snapshot from a delta that is
  itself the difference of two snapshots) are edges in the memo, never infinite recursion. A form
  requested while its own group is still being made yields nothing for that rule.

Forms of different versions have the same structure shifted in time. With ``copy=True`` (what
the planner does by default) versions 1 and 2 — a first snapshot, and a delta with an old
snapshot before it — are expanded by rules, and every later version is a copy of version 2's
memo groups, expression by expression, with versions substituted (:meth:`Expansion._copy`): the
translational symmetry of the Tempura seed. Rules that fire at particular versions only (the
streaming split at the last one, an update that holds while an input does not change) run on top
of the copy, and what they made is never copied. Both ways give the same plans
(``tests/test_tvr_copy.py``); the memos may differ by a few groups, since which alternative the
cycle guard above withholds depends on the order in which forms are requested. ``tempura bench
tvr-planning`` measures the speed-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from tempura.algebra import Aggregate, Distinct, LogicalPlan, Scan
from tempura.memo import GroupRef, Memo, TvrMetaSet
from tempura.tvr.forms import Delta, Form, FormKind, PartialSnapshot, Snapshot, ValueDelta
from tempura.tvr.operators import SourceRead, TvrOperator, lower_plan
from tempura.tvr.partials import has_partial_states

if TYPE_CHECKING:
    from tempura.rules.tvr import TvrRule
    from tempura.infer.prover import Prover


@dataclass
class ExpansionReport:
    """What the expansion did: forms made, rules fired, constructs that forced a recompute."""

    forms: int = 0
    copied: int = 0  # plans inserted by copying a version's structure instead of by rules
    firings: dict[str, int] = field(default_factory=dict)
    recompute: dict[str, str] = field(default_factory=dict)  # operator description -> why

    def fired(self, rule: str) -> None:
        self.firings[rule] = self.firings.get(rule, 0) + 1


class Expansion:
    """Makes and remembers the groups of TVR forms of template groups."""

    def __init__(
        self,
        memo: Memo,
        k: int,
        rules: Sequence[TvrRule],
        insert_only: Callable[[Scan], bool],
        root: int,
        forced: str | None = None,
        copy: bool = True,
        prover: Prover | None = None,
    ) -> None:
        self.memo = memo
        self.k = k
        self.rules = list(rules)
        self.enabled = {r.name for r in rules}
        self._version_specific = {r.name for r in rules if r.version_specific}  # run at each version, never copied
        self.source_insert_only = insert_only
        self.prover = prover  # proven facts of the groups: key spans, columns never NULL, emptiness
        self.root = memo.find(root)
        self.report = ExpansionReport()
        self.origin: dict[LogicalPlan, str] = {}  # memo expression -> the rule that made it
        self._forms: dict[tuple[int, Form], int] = {}
        self._building: set[tuple[int, Form]] = set()
        self._meta: dict[int, TvrMetaSet] = {}
        self._template: set[int] = {g.id for g in memo.groups}
        for rule in rules:  # rewrites of the template itself, before any form is made
            if rule.phase == "template":
                for group_id in sorted(self._template):
                    for expr in self.template_exprs(group_id):
                        if not rule.matches(expr):
                            continue
                        for plan in rule.rewrite(self, group_id, expr):
                            before = memo.additions
                            memo.insert(plan, into=group_id)
                            if memo.additions != before:
                                self.report.fired(rule.name)
        self._unit: dict[int, bool] = {}
        self._spine = self._root_spine()
        self.forced = forced
        self.qp_groups: set[int] = set()  # template groups that are the QP part of a streaming split
        self.copy = copy
        self._copies: dict[tuple[int, int], int] = {}  # (group, by) -> its copy, for groups not forms
        self._copying: set[tuple[int, int]] = set()
        self._fell_back: set[tuple[int, Form]] = set()  # forms a forced method had to recompute
        self._copied_from: dict[tuple[int, Form], tuple[int, Form]] = {}
        self._stack: list[tuple[int, Form]] = []  # the forms being made, innermost last
        self._notes: list[tuple[str, str, tuple[tuple[int, Form], ...]]] = []
        self._form_of: dict[int, tuple[int, Form]] = {}  # form group -> (template group, form)
        self._top = self._top_of_spine()

    # -- queries rules ask ---------------------------------------------------------------------

    def template_exprs(self, group: int) -> list[LogicalPlan]:
        """The logical expressions of a template group (what rules rewrite)."""
        return [e for e in self.memo.group(group).exprs if not isinstance(e, (GroupRef, TvrOperator))]

    def _offered(self, rule: TvrRule, group: int) -> list[LogicalPlan | None]:
        """What ``rule`` is applied to in ``group``: the template expressions of its pattern, or
        the whole group (``None``) for a rule that is not ``per_expression``."""
        if not rule.per_expression:
            return [None]
        return [e for e in self.template_exprs(group) if rule.matches(e)]

    def child(self, ref: LogicalPlan) -> int:
        assert isinstance(ref, GroupRef)
        return self.memo.find(ref.group)

    def unit_delta(self, group: int) -> bool:
        """Whether the deltas of ``group`` are insert-only with every multiplicity exactly +1
        (so that ``+#`` is a union): sources without deletions, through filters, projections,
        inner joins and unions all."""
        from tempura.algebra import Filter, Join, JoinKind, Project, Union

        group = self.memo.find(group)
        known = self._unit.get(group)
        if known is not None:
            return known
        self._unit[group] = False  # cycles: assume not until proven
        result = True
        for expr in self.template_exprs(group):
            if isinstance(expr, Scan):
                ok = self.source_insert_only(expr)
            elif isinstance(expr, (Filter, Project)):
                ok = self.unit_delta(self.child(expr.inputs[0]))
            elif isinstance(expr, Join) and expr.kind in (JoinKind.INNER, JoinKind.CROSS):
                ok = all(self.unit_delta(self.child(c)) for c in expr.inputs)
            elif isinstance(expr, Union) and expr.all:
                ok = all(self.unit_delta(self.child(c)) for c in expr.inputs)
            else:
                ok = False
            result = result and ok
        self._unit[group] = result
        return result

    def on_spine(self, group: int) -> bool:
        """Whether ``group`` is the root or reached from it through unary operators only: where
        classic IVM keeps and maintains the view."""
        return self.memo.find(group) in self._spine

    def _root_spine(self) -> set[int]:
        from tempura.algebra import Filter, Limit, Project, Sort

        spine = {self.root}
        frontier = [self.root]
        while frontier:
            g = frontier.pop()
            for e in self.template_exprs(g):
                if isinstance(e, (Project, Filter, Sort, Limit)):
                    c = self.child(e.inputs[0])
                    if c not in spine:
                        spine.add(c)
                        frontier.append(c)
        return spine

    def _top_of_spine(self) -> int | None:
        """The highest group of the spine that is not a unary pass-through: where a forced
        incremental method must not fall back to recompute."""
        from tempura.algebra import Filter, Limit, Project, Sort

        group: int | None = self.root
        while group is not None:
            exprs = self.template_exprs(group)
            step = next((e for e in exprs if isinstance(e, (Project, Filter, Sort, Limit))), None)
            if step is None:
                return group
            group = self.child(step.inputs[0])
        return None

    def recompute_allowed(self, group: int, form: Form) -> bool:
        """Under a forced incremental method, the view's snapshots (and an aggregate view's
        partial states) after the first come from its incremental rules, and so do the kept join
        states of higher-order deltas; recompute stays the fallback when there are none."""
        if self.forced is None or form.kind not in (FormKind.SNAPSHOT, FormKind.PARTIAL) or form.end < 2:
            return True
        group = self.memo.find(group)
        if group == self._top:
            return False
        if self.forced == "streaming" and group in {self.memo.find(g) for g in self.qp_groups}:
            return False  # QP is what streaming emits early: it is never recomputed
        if self.forced == "higher-order" and not self.on_spine(group):
            from tempura.algebra import Join

            return not any(isinstance(e, Join) for e in self.template_exprs(group))
        return True

    def fell_back(self, group: int, form: Form) -> bool:
        """Whether a forced method had to recompute ``form`` of ``group`` for want of a rule."""
        return (self.memo.find(group), form) in self._fell_back

    def has_form(self, group: int, form: Form) -> bool:
        """Whether ``form`` of ``group`` already has a group (made by some rule)."""
        return (self.memo.find(group), form) in self._forms

    def aggregate_of(self, group: int) -> Aggregate | Distinct | None:
        """The group's aggregate whose partial states the group's ``PS`` forms hold: the last
        one with partial states if there is one. Template rewrites come after the written
        aggregate, and are made to be maintained: a ``COUNT(DISTINCT)`` split in two levels has
        partial states, an aggregate below an outer join has cheaper deltas."""

        found = [e for e in self.template_exprs(group) if isinstance(e, (Aggregate, Distinct))]
        return next((e for e in reversed(found) if has_partial_states(e)), found[0] if found else None)

    def finish(self) -> None:
        """Run the ``expanded`` rules over every expression of the groups the expansion made,
        once the forms the deliveries need are all there (rules that ask about whole groups)."""
        rules = [r for r in self.rules if r.phase == "expanded"]
        if not rules:
            return
        for group in [g.id for g in self.memo.groups if g.id not in self._template]:
            for expr in list(self.memo.group(group).exprs):
                if isinstance(expr, GroupRef):
                    continue
                for rule in rules:
                    if not rule.matches(expr):
                        continue
                    for plan in rule.rewrite(self, group, expr):
                        before = self.memo.additions
                        self.memo.insert(plan, into=group)
                        if self.memo.additions != before:
                            self.report.fired(rule.name)
                            self.origin.setdefault(self.memo.canonical(self._registered(plan)), rule.name)

    # -- forms ---------------------------------------------------------------------------------

    def ss(self, group: int, version: int) -> GroupRef | None:
        return self.form(group, Snapshot(version))

    def sd(self, group: int, version: int) -> GroupRef | None:
        """``SD[version-1, version]``."""
        return self.form(group, Delta(version - 1, version))

    def ps(self, group: int, version: int) -> GroupRef | None:
        return self.form(group, PartialSnapshot(version))

    def vd(self, group: int, version: int) -> GroupRef | None:
        return self.form(group, ValueDelta(version - 1, version))

    def meta(self, group: int) -> TvrMetaSet:
        group = self.memo.find(group)
        meta = self._meta.get(group)
        if meta is None:
            meta = self._meta[group] = self.memo.new_tvr_set()
        return meta

    def form(self, group: int, form: Form) -> GroupRef | None:
        """The group computing ``form`` of template ``group`` (made on first request); ``None``
        when no enabled rule can compute it, or when it is being made right now."""
        group = self.memo.find(group)
        key = (group, form)
        made = self._forms.get(key)
        if made is not None:
            return self.memo.ref(made)
        if key in self._building:
            return None
        self._building.add(key)
        self._stack.append(key)
        try:
            if self.copy and form.end > COPY_FROM and self._copy(key):
                return self.memo.ref(self._forms[key])
            skip_batch = not self.recompute_allowed(group, form)
            for phase in ("generating", "intra"):
                for rule in self.rules:
                    if rule.produces is not form.kind or rule.phase != phase:
                        continue
                    if skip_batch and rule.method == "batch":
                        continue
                    for expr in self._offered(rule, group):
                        for plan in rule.apply(self, group, expr, form):
                            self._insert(key, plan, rule.name)
            if skip_batch and key not in self._forms:
                for rule in self.rules:
                    if rule.produces is form.kind and rule.method == "batch":
                        for expr in self.template_exprs(group):
                            if not rule.matches(expr):
                                continue
                            for plan in rule.apply(self, group, expr, form):
                                self._insert(key, plan, rule.name)
                if key in self._forms:
                    self._fell_back.add(key)
                    self.note_recompute(self.template_exprs(group)[0], "no incremental rule applies: the view is recomputed")
        finally:
            self._building.discard(key)
            self._stack.pop()
        made = self._forms.get(key)
        return None if made is None else self.memo.ref(made)

    # -- translational symmetry -----------------------------------------------------------------

    def _copy(self, key: tuple[int, Form]) -> bool:
        """Make ``key``'s form by copying the same form at version ``COPY_FROM`` memo expression by
        memo expression, with versions shifted: no rule is matched and no plan is lowered. Rules
        that fire at particular versions only then run on top. ``False`` when there is nothing
        to copy — no rule makes the form at ``COPY_FROM``, or a forced method recomputed it for
        want of an incremental rule, which may exist at a later version — and the form is then
        expanded by rules."""
        group, form = key
        by = form.end - COPY_FROM
        source = (group, form.shifted(-by))
        if source not in self._forms:
            self.form(*source)
        if source not in self._forms or source in self._fell_back:
            return False  # the recompute fallback is no template: a later version may have rules
        made = self._copy_group(self.memo.find(self._forms[source]), by, key)
        if made is None:
            return False
        self._copied_from[key] = source
        for rule in self.rules:
            if rule.version_specific and rule.produces is form.kind:
                for expr in self._offered(rule, group):
                    for extra in rule.apply(self, group, expr, form):
                        self._insert(key, extra, rule.name)
        return key in self._forms

    def _copy_group(self, group: int, by: int, key: tuple[int, Form] | None = None) -> int | None:
        """The group ``by`` versions after ``group``: a form's group is that form at the later
        version (made on request, so by copy or by rules); any other group is copied expression by
        expression into a new group — or into the group of ``key``, the form being copied."""
        if key is None:
            done = self._copies.get((group, by))
            if done is not None:
                return self.memo.find(done)
            owner = self._form_of.get(group)
            if owner is not None:
                template, form = owner
                ref = self.form(template, form.shifted(by))
                if ref is None:
                    return None
                self._copies[(group, by)] = ref.group
                return ref.group
            if (group, by) in self._copying:
                return None
        self._copying.add((group, by))
        target: int | None = None
        try:
            for expr in list(self.memo.group(group).exprs):
                if self.origin.get(expr) in self._version_specific:
                    continue  # valid at its own version: the rule runs again on top of the copy
                shifted = self._shift(expr, by)
                if shifted is None:
                    continue
                if key is not None:
                    self._insert(key, shifted, self.origin.get(expr), copied=True)
                    target = self._forms[key]
                else:
                    target = self.memo.add(shifted, into=target)
                    rule = self.origin.get(expr)
                    if rule is not None:
                        self.origin.setdefault(self.memo.canonical(shifted), rule)
                self.report.copied += 1
        finally:
            self._copying.discard((group, by))
        if key is None and target is not None:
            self._copies[(group, by)] = self.memo.find(target)
        return target

    def _shift(self, expr: LogicalPlan, by: int) -> LogicalPlan | None:
        """One memo expression reading every form ``by`` versions later."""
        if isinstance(expr, SourceRead):
            if not expr.delta and expr.start:
                return None  # a narrowed snapshot: which intervals may match depends on the version
            start = expr.start + by if expr.delta else 0
            return SourceRead(expr.scan, start, expr.end + by, expr.delta)
        if not expr.inputs:
            return expr
        children: list[LogicalPlan] = []
        for child in expr.inputs:
            assert isinstance(child, GroupRef)
            moved = self._copy_group(self.memo.find(child.group), by)
            if moved is None:
                return None
            children.append(self.memo.ref(moved))
        shifted = expr.with_inputs(*children)
        if "schema" in expr.__dict__:  # the same columns at every version: no need to derive them
            shifted.__dict__.setdefault("schema", expr.__dict__["schema"])
        return shifted

    def _insert(self, key: tuple[int, Form], plan: LogicalPlan, rule: str | None, copied: bool = False) -> None:
        group, form = key
        target = self._forms.get(key)
        before = self.memo.additions
        # TVR operators enter the memo as the ordinary operators they lower to, so that the
        # ordinary physical rules implement and cost them as Spark runs them
        if not copied:
            plan = lower_plan(plan, keep_reads=True)
        made = self.memo.insert(plan, into=target)
        if target is None:
            made = self.memo.link_tvr(self.meta(group), form, made)
            self._forms[key] = made
            self._form_of[self.memo.find(made)] = key
            self.report.forms += 1
        else:
            self._forms[key] = self.memo.find(made)
            self._form_of[self._forms[key]] = key
        if self.memo.additions != before:
            if not copied and rule is not None:
                self.report.fired(rule)
            if rule is not None:
                root = plan if isinstance(plan, GroupRef) else self.memo.canonical(self._registered(plan))
                self.origin.setdefault(root, rule)

    def _registered(self, plan: LogicalPlan) -> LogicalPlan:
        """``plan``'s root as the memo holds it (inputs as group references)."""
        if all(isinstance(c, GroupRef) for c in plan.inputs):
            return plan
        refs = [self.memo.ref(self.memo.insert(c)) for c in plan.inputs]
        return plan.with_inputs(*refs) if refs else plan

    def note_recompute(self, expr: LogicalPlan, why: str) -> None:
        """Record why ``expr`` is recomputed, for the forms being made right now."""
        self._notes.append((f"{expr.operator} {expr.details()}".strip(), why, tuple(self._stack)))

    def notes(self, used: set[int]) -> dict[str, str]:
        """Why constructs are recomputed, for those the chosen plan recomputes: a note belongs to
        the innermost form being made when it was taken that has a group (a form no rule could
        make belongs to the form that asked for it), and counts when that group — or a copy of
        it at a later version — is among the ``used`` groups."""
        copies: dict[tuple[int, Form], list[tuple[int, Form]]] = {}
        for copy, source in self._copied_from.items():
            copies.setdefault(source, []).append(copy)
        used = {self.memo.find(g) for g in used}

        def in_plan(key: tuple[int, Form]) -> bool:
            keys, seen = [key], set()
            while keys:
                k = keys.pop()
                if k in seen:
                    continue
                seen.add(k)
                made = self._forms.get(k)
                if made is not None and self.memo.find(made) in used:
                    return True
                keys.extend(copies.get(k, ()))
            return False

        shown: dict[str, str] = {}
        for what, why, stack in self._notes:
            owner = next((k for k in reversed(stack) if k in self._forms), None)
            if owner is not None and in_plan(owner):
                shown.setdefault(what, why)
        self.report.recompute = shown
        return shown

    def available(self, group: int) -> int:
        """The first time point at which ``group`` can be computed: the newest version it reads."""
        return available(self.memo, group)


COPY_FROM = 2
"""Versions up to this one are expanded by rules; later ones are copies of this one."""


def available(memo: Memo, group: int, cache: dict[int, int] | None = None) -> int:
    """The newest source version any expression of ``group`` reads (1 for constants)."""
    cache = {} if cache is None else cache
    group = memo.find(group)
    known = cache.get(group)
    if known is not None:
        return known
    expr = memo.group(group).exprs[0]
    if isinstance(expr, SourceRead):
        result = max(expr.end, 1)
    else:
        result = max((available(memo, c.group, cache) for c in expr.inputs if isinstance(c, GroupRef)), default=1)
    cache[group] = result
    return result
