"""Predicate pushdown: named rewrites that move filters toward the scans.

Each rule takes one operator and returns its replacement, or ``None`` when it does not apply.
They are always-beneficial normalizations (as CockroachDB's ``norm`` rules and Calcite's
``FilterIntoJoinRule`` family): :func:`tempura.rules.logical.normalize` applies them bottom-up
to a fixpoint before cost-based search.

Legality, operator by operator:

- **Inner and cross joins**: a conjunct on one side's columns filters that side; one on both
  sides becomes part of the join condition (a cross join with a condition is an inner join).
- **Left (right) joins**: a filter above may move only into the preserved side. Inside the ON
  condition, a conjunct on the null-padded side's columns filters that side first.
- **Semi joins**: filters above move into the left side; ON conjuncts on either side alone
  filter that side. **Anti joins**: filters above move left; ON conjuncts on the right alone
  filter the right (a left-only ON conjunct may not move: failing it keeps the row).
- **Full joins**: nothing moves.
- **Project**: a conjunct is rewritten over the projection's expressions.
- **Aggregate**: conjuncts on group keys only (never below a scalar aggregate).
- **Union**: into both sides, columns matched by position; **Intersect** both sides;
  **Except** the left side. **Sort** and **Distinct**: below them. **Window**: conjuncts on its partition columns
  (they keep or drop whole partitions). **Limit**: never.

Conjuncts that reference no column, or call a non-deterministic function, never move.
"""

from __future__ import annotations

from typing import Callable, cast

from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    Distinct,
    Except,
    Filter,
    Generate,
    Intersect,
    Join,
    JoinKind,
    LogicalPlan,
    Project,
    SetOperation,
    Sort,
    Union,
    Window,
    col,
    columns_in,
    conjoin,
    conjuncts,
    substitute,
)
from tempura.rules.base import Rewrite

NONDETERMINISTIC = (exp.Rand, exp.Randn, exp.Uuid)


def movable(conjunct: exp.Expr) -> bool:
    """A conjunct that may be evaluated somewhere else: it reads columns and is deterministic."""
    return bool(columns_in(conjunct)) and conjunct.find(*NONDETERMINISTIC) is None


def filtered(plan: LogicalPlan, predicates: list[exp.Expr]) -> LogicalPlan:
    """``plan`` under a filter of the predicates (itself when there are none)."""
    condition = conjoin(predicates)
    return plan if condition is None else Filter(plan, condition)


def merge_filters(plan: LogicalPlan) -> LogicalPlan | None:
    """Filter(Filter(x, a), b) → Filter(x, a AND b)."""
    if isinstance(plan, Filter) and isinstance(plan.input, Filter):
        inner = plan.input
        return Filter(inner.input, conjoin(conjuncts(inner.condition) + conjuncts(plan.condition)))  # type: ignore[arg-type]
    return None


def _sides(join: Join) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(join.left.schema.names), frozenset(join.right.schema.names)


def push_filter_into_join(plan: LogicalPlan) -> LogicalPlan | None:
    """A filter above a join: into a side, or into the join condition."""
    if not isinstance(plan, Filter) or not isinstance(plan.input, Join):
        return None
    join = plan.input
    kind = join.kind
    if kind is JoinKind.FULL:
        return None
    left_names, right_names = _sides(join)
    to_left: list[exp.Expr] = []
    to_right: list[exp.Expr] = []
    to_condition: list[exp.Expr] = []
    stay: list[exp.Expr] = []
    for conjunct in conjuncts(plan.condition):
        refs = columns_in(conjunct)
        if not movable(conjunct):
            stay.append(conjunct)
        elif refs <= left_names and kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI):
            to_left.append(conjunct)
        elif refs <= right_names and kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.RIGHT):
            to_right.append(conjunct)
        elif kind in (JoinKind.INNER, JoinKind.CROSS) and refs <= left_names | right_names:
            to_condition.append(conjunct)
        else:
            stay.append(conjunct)
    if not (to_left or to_right or to_condition):
        return None
    condition = conjoin(conjuncts(join.condition) + to_condition)
    new_kind = JoinKind.INNER if kind is JoinKind.CROSS and condition is not None else kind
    moved = Join(new_kind, filtered(join.left, to_left), filtered(join.right, to_right), condition)
    return filtered(moved, stay)


def push_join_condition(plan: LogicalPlan) -> LogicalPlan | None:
    """Conjuncts of a join condition that read one side only filter that side first."""
    if not isinstance(plan, Join) or plan.condition is None or plan.kind is JoinKind.FULL:
        return None
    left_names, right_names = _sides(plan)
    kind = plan.kind
    can_left = kind in (JoinKind.INNER, JoinKind.RIGHT, JoinKind.SEMI)
    can_right = kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI)
    to_left: list[exp.Expr] = []
    to_right: list[exp.Expr] = []
    keep: list[exp.Expr] = []
    for conjunct in conjuncts(plan.condition):
        refs = columns_in(conjunct)
        if movable(conjunct) and can_left and refs <= left_names:
            to_left.append(conjunct)
        elif movable(conjunct) and can_right and refs <= right_names:
            to_right.append(conjunct)
        else:
            keep.append(conjunct)
    if not (to_left or to_right):
        return None
    condition = conjoin(keep)
    new_kind = JoinKind.CROSS if condition is None and kind is JoinKind.INNER else kind
    return Join(new_kind, filtered(plan.left, to_left), filtered(plan.right, to_right), condition)


def push_filter_through_project(plan: LogicalPlan) -> LogicalPlan | None:
    """Filter(Project(x)) → Project(Filter(x)) with the conjuncts rewritten over x."""
    if not isinstance(plan, Filter) or not isinstance(plan.input, Project):
        return None
    project = plan.input
    mapping = {p.field.name: p.expression for p in project.projections}
    below: list[exp.Expr] = []
    stay: list[exp.Expr] = []
    for conjunct in conjuncts(plan.condition):
        rewritten = substitute(conjunct, mapping)
        if movable(conjunct) and movable(rewritten):
            below.append(rewritten)
        else:
            stay.append(conjunct)
    if not below:
        return None
    return filtered(Project(filtered(project.input, below), project.projections), stay)


def push_filter_through_aggregate(plan: LogicalPlan) -> LogicalPlan | None:
    """Conjuncts on group keys only are evaluated before grouping."""
    if not isinstance(plan, Filter) or not isinstance(plan.input, Aggregate) or not plan.input.keys:
        return None
    aggregate = plan.input
    keys = frozenset(aggregate.keys)
    below = [c for c in conjuncts(plan.condition) if movable(c) and columns_in(c) <= keys]
    if not below:
        return None
    stay = [c for c in conjuncts(plan.condition) if not any(c is b for b in below)]
    return filtered(Aggregate(filtered(aggregate.input, below), aggregate.keys, aggregate.calls), stay)


def push_filter_through_set_operation(plan: LogicalPlan) -> LogicalPlan | None:
    """Into both sides of a union or intersect, into the left side of an except."""
    if not isinstance(plan, Filter) or not isinstance(plan.input, SetOperation):
        return None
    setop = plan.input
    below = [c for c in conjuncts(plan.condition) if movable(c)]
    if not below:
        return None
    stay = [c for c in conjuncts(plan.condition) if not movable(c)]

    def renamed(side: LogicalPlan) -> list[exp.Expr]:
        mapping: dict[str, exp.Expr] = {f.name: col(s.name) for f, s in zip(setop.fields, side.schema.fields)}
        return [substitute(c, mapping) for c in below]

    left = filtered(setop.left, renamed(setop.left))
    right = setop.right if isinstance(setop, Except) else filtered(setop.right, renamed(setop.right))
    assert isinstance(setop, (Union, Intersect, Except))
    return filtered(setop.with_inputs(left, right), stay)


def push_filter_through_sort_and_distinct(plan: LogicalPlan) -> LogicalPlan | None:
    """Filter(Sort(x)) → Sort(Filter(x)); Filter(Distinct(x)) → Distinct(Filter(x))."""
    if not isinstance(plan, Filter) or not isinstance(plan.input, (Sort, Distinct)):
        return None
    below = [c for c in conjuncts(plan.condition) if movable(c)]
    if not below:
        return None
    stay = [c for c in conjuncts(plan.condition) if not movable(c)]
    inner = plan.input
    return filtered(inner.with_inputs(filtered(inner.input, below)), stay)


def _push_on_columns(plan: LogicalPlan, kind: type, columns: Callable[[LogicalPlan], frozenset[str]]) -> LogicalPlan | None:
    """Filter(op(x)) → op(Filter(x)) for the conjuncts over ``columns(op)`` alone, where ``op`` is
    of ``kind``."""
    if not isinstance(plan, Filter) or not isinstance(plan.input, kind):
        return None
    inner = plan.input
    allowed = columns(inner)
    below = [c for c in conjuncts(plan.condition) if movable(c) and columns_in(c) <= allowed]
    if not below:
        return None
    stay = [c for c in conjuncts(plan.condition) if not (movable(c) and columns_in(c) <= allowed)]
    return filtered(inner.with_inputs(filtered(inner.inputs[0], below)), stay)


def push_filter_through_window(plan: LogicalPlan) -> LogicalPlan | None:
    """Filter(Window(x)) → Window(Filter(x)) for the conjuncts on the window's partition columns:
    such a conjunct keeps or drops whole partitions, so no call's window changes."""
    return _push_on_columns(plan, Window, lambda w: frozenset(cast(Window, w).partition_keys))


def push_filter_through_generate(plan: LogicalPlan) -> LogicalPlan | None:
    """Filter(Generate(x)) → Generate(Filter(x)) for the conjuncts on the input's columns: each
    generated row carries its input row's values, so such a conjunct keeps or drops all the rows
    of one input row together."""
    return _push_on_columns(plan, Generate, lambda g: frozenset(g.inputs[0].schema.names))


RULES: tuple[Rewrite, ...] = (
    Rewrite("merge-filters", (Filter,), "Filter(Filter)", merge_filters),
    Rewrite("push-filter-into-join", (Filter,), "Filter(Join)", push_filter_into_join),
    Rewrite("push-join-condition", (Join,), "Join", push_join_condition),
    Rewrite("push-filter-through-project", (Filter,), "Filter(Project)", push_filter_through_project),
    Rewrite("push-filter-through-aggregate", (Filter,), "Filter(Aggregate)", push_filter_through_aggregate),
    Rewrite("push-filter-through-set-operation", (Filter,), "Filter(Union | Intersect | Except)", push_filter_through_set_operation),
    Rewrite("push-filter-through-sort-and-distinct", (Filter,), "Filter(Sort | Distinct)", push_filter_through_sort_and_distinct),
    Rewrite("push-filter-through-window", (Filter,), "Filter(Window)", push_filter_through_window),
    Rewrite("push-filter-through-generate", (Filter,), "Filter(Generate)", push_filter_through_generate),
)
