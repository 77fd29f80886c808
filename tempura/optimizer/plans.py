"""A one-off query's plan as tempura runs it, and the helpers that turn a memo's physical choice
back into a logical plan: templates filled with their inputs, columns put in order, join hints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from tempura.algebra import LogicalPlan, Project, Projection, Query, SetOperation, col
from tempura.memo import GroupRef, Memo, PhysicalPlan, SearchReport, Trace
from tempura.optimizer.pipeline import PhaseRecord

JoinHint = tuple[str, str]  # (strategy, side): ("BROADCAST", "right"); a single-task sort's ("COALESCE", "1")


@dataclass
class PlannedQuery:
    """A query as tempura will run it, with how it was found: the phases' records, the search's
    report, the rule firings when traced, the normalization rules that fired."""

    query: Query
    physical: PhysicalPlan
    hints: dict[LogicalPlan, JoinHint]
    memo: Memo
    report: SearchReport
    trace: Trace | None = None
    normalization: list[str] = field(default_factory=list)
    phases: list[PhaseRecord] = field(default_factory=list)


def in_order(plan: LogicalPlan, names: list[str]) -> LogicalPlan:
    """``plan`` with its columns in the order ``names`` (a project when they differ)."""
    if list(plan.schema.names) == names:
        return plan
    return Project(plan, tuple(Projection(plan.schema.field(n), col(n)) for n in names))


def fill_template(template: LogicalPlan, children: Iterable[LogicalPlan]) -> LogicalPlan:
    """``template`` (a memo expression, perhaps nesting operators) with its group references
    replaced, in order, by ``children``."""
    it = iter(children)

    def fill(node: LogicalPlan) -> LogicalPlan:
        if isinstance(node, GroupRef):
            return next(it)
        if not node.inputs:
            return node
        filled = [fill(c) for c in node.inputs]
        if isinstance(node, SetOperation):  # positional: keep each input's column order
            filled = [in_order(f, list(c.schema.names)) for f, c in zip(filled, node.inputs)]
        return node.with_inputs(*filled)

    return fill(template)


def to_logical(node: PhysicalPlan, hints: dict[LogicalPlan, JoinHint]) -> LogicalPlan:
    """The logical plan a physical plan computes, in its join order, collecting join hints."""
    if node.logical is None:  # an enforcer or a partial aggregate: look through it
        return to_logical(node.children[0], hints)
    plan = fill_template(node.logical, [to_logical(child, hints) for child in node.children])
    if node.hint is not None:
        strategy, side = node.hint.split(":")
        hints[plan] = (strategy, side)
    return plan


__all__ = ["JoinHint", "PlannedQuery", "fill_template", "in_order", "to_logical"]
