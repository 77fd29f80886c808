"""Memo rules that collapse stacked filters and stacked projections.

Plans assembled from parts stack operators that one would do: a finalized aggregate filters
the groups that are gone (``__rows <> 0``) over the merge of its partial states, which filters
them too; a query's own projection sits over the one that computes the aggregate's outputs; the
delta of a projection projects again what the delta below it projected. The parts are in
different memo groups, so normalization, which runs on whole plans before the memo, never sees
them together. These rules do, by matching a parent and the expressions of its input group:

- ``collapse-filters``: ``σ_b(σ_a(x)) → σ_{a ∧ b}(x)``, each conjunct once. When ``b``'s
  conjuncts are all ``a``'s, the result is the inner filter itself, so the two groups are
  one: the memo merges them, and the redundant filter is gone from every plan.
- ``collapse-projects``: ``π_Q(π_P(x)) → π_{Q∘P}(x)``, the outer expressions rewritten over
  ``x``. Refused when an inner expression that is more than a column or a literal would be
  computed more than once, or is not deterministic and would be computed a different number of
  times.

A filter with a non-deterministic conjunct is never collapsed (it would be evaluated on other
rows). Both rules only add alternatives: the search takes the collapsed one because it is
cheaper (one operator's per-row work instead of two). :func:`collapse` runs them over a whole
memo once it is otherwise complete.
"""

from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from tempura.algebra import Filter, LogicalPlan, Project, Projection, by_sql, conjoin, conjuncts, substitute
from tempura.memo import Memo, Operand, Rule, RuleCall, RuleEngine, Trace
from tempura.rules.logical.pushdown import NONDETERMINISTIC


def _deterministic(expression: exp.Expr) -> bool:
    return expression.find(*NONDETERMINISTIC) is None


class CollapseRule(Rule):
    """A collapse rule; ``made`` records each plan it returned with the expressions it matched
    (so that a caller can say which rule made the parts it replaces)."""

    def __init__(self) -> None:
        self.made: list[tuple[LogicalPlan, tuple[LogicalPlan, ...]]] = []

    def apply(self, call: RuleCall) -> Sequence[LogicalPlan]:
        plan = self.collapse(call.exprs[0], call.exprs[1])
        if plan is None:
            return []
        self.made.append((plan, call.exprs))
        return [plan]

    def collapse(self, outer: LogicalPlan, inner: LogicalPlan) -> LogicalPlan | None:
        raise NotImplementedError


class CollapseFilters(CollapseRule):
    """``σ_b(σ_a(x)) → σ_{a ∧ b}(x)``."""

    name = "collapse-filters"
    pattern = Operand(Filter, (Operand(Filter),))

    def collapse(self, outer: LogicalPlan, inner: LogicalPlan) -> LogicalPlan | None:
        assert isinstance(outer, Filter) and isinstance(inner, Filter)
        parts = conjuncts(inner.condition) + conjuncts(outer.condition)
        if not all(_deterministic(p) for p in parts):
            return None
        condition = conjoin(by_sql(parts).values())
        assert condition is not None
        return Filter(inner.input, condition)


class CollapseProjects(CollapseRule):
    """``π_Q(π_P(x)) → π_{Q∘P}(x)``."""

    name = "collapse-projects"
    pattern = Operand(Project, (Operand(Project),))

    def collapse(self, outer: LogicalPlan, inner: LogicalPlan) -> LogicalPlan | None:
        assert isinstance(outer, Project) and isinstance(inner, Project)
        mapping = {p.field.name: p.expression for p in inner.projections}
        uses: dict[str, int] = {}
        for projection in outer.projections:
            for column in projection.expression.find_all(exp.Column):
                if not column.table and column.name in mapping:
                    uses[column.name] = uses.get(column.name, 0) + 1
        for name, expression in mapping.items():
            simple = isinstance(expression, (exp.Column, exp.Literal))
            if (not simple and uses.get(name, 0) > 1) or (not _deterministic(expression) and uses.get(name, 0) != 1):
                return None
        projections = tuple(Projection(p.field, substitute(p.expression, mapping)) for p in outer.projections)
        return Project(inner.input, projections)


RULE_CLASSES: tuple[type[CollapseRule], ...] = (CollapseFilters, CollapseProjects)
NAMES = tuple(r.name for r in RULE_CLASSES)


def collapse(memo: Memo, disabled: set[str] | frozenset[str] = frozenset(), trace: Trace | None = None) -> list[CollapseRule]:
    """Run the enabled collapse rules over every expression of ``memo`` to a fixpoint; returns
    the rules (with what they made)."""
    rules = [cls() for cls in RULE_CLASSES if cls.name not in disabled]
    if rules:
        engine = RuleEngine(memo, rules, trace)
        try:
            engine.seed()
            engine.run()
        finally:
            engine.detach()
    return rules


__all__ = ["NAMES", "CollapseFilters", "CollapseProjects", "CollapseRule", "collapse"]
