"""Projection pruning: every operator keeps only the columns something above it reads.

A top-down pass over the operators (each subplan once, however many operators read it) carries
the set of required columns: a scan reads only those (at least one,
so that it still counts rows), a projection or aggregate drops outputs nobody reads, and each
operator adds what it reads itself (conditions, keys, sort keys). ``Distinct`` and the set
operations need every input column (duplicates and positions depend on all of them). The root
keeps its whole schema.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from tempura.algebra import (
    Generate,
    Opaque,
    Aggregate,
    AggregateCall,
    Distinct,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Projection,
    Scan,
    SetOperation,
    Sort,
    Values,
    Window,
    columns_in,
)


def _refs(*expressions: exp.Expr | None) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for expression in expressions:
        if expression is not None:
            out |= columns_in(expression)
    return out


def prune_columns(plan: LogicalPlan) -> LogicalPlan:
    """``plan`` with unread columns removed below its root (the root's schema is unchanged). A
    subplan that several operators read (the one input of a grouping-set query's aggregates,
    bound once; any subplan equal to another) is pruned once, to every column any of its
    readers needs, so that it stays one relation: the memo sees one group, and the state
    selection can share its work."""
    order: list[LogicalPlan] = []
    seen: set[LogicalPlan] = set()

    def visit(node: LogicalPlan) -> None:
        if node in seen:
            return
        seen.add(node)
        for child in node.inputs:
            visit(child)
        order.append(node)  # after its inputs

    visit(plan)
    required: dict[LogicalPlan, frozenset[str]] = {plan: frozenset(plan.schema.names)}
    for node in reversed(order):  # each operator before its inputs: all its readers are done
        for child, needs in zip(node.inputs, _needs(node, required[node])):
            required[child] = required.get(child, frozenset()) | needs
    built: dict[LogicalPlan, LogicalPlan] = {}
    for node in order:
        built[node] = _rebuild(node, required[node], [built[c] for c in node.inputs])
    return built[plan]


def _kept_projections(plan: Project, required: frozenset[str]) -> tuple[Projection, ...]:
    return tuple(p for p in plan.projections if p.field.name in required) or plan.projections[:1]


def _kept_calls(plan: Aggregate, required: frozenset[str]) -> tuple[AggregateCall, ...]:
    calls = tuple(c for c in plan.calls if c.field.name in required)
    return calls if calls or plan.keys else plan.calls[:1]  # a scalar aggregate still yields its one row


def _needs(plan: LogicalPlan, required: frozenset[str]) -> list[frozenset[str]]:
    """The columns each input of ``plan`` must keep when ``required`` of its own are read."""
    if isinstance(plan, (Scan, Values)):
        return []
    if isinstance(plan, Filter):
        return [required | _refs(plan.condition)]
    if isinstance(plan, Project):
        return [_refs(*(p.expression for p in _kept_projections(plan, required)))]
    if isinstance(plan, Aggregate):
        return [frozenset(plan.keys) | _refs(*(c.call for c in _kept_calls(plan, required)))]
    if isinstance(plan, Join):
        needed = required | _refs(plan.condition)
        return [needed & frozenset(plan.left.schema.names), needed & frozenset(plan.right.schema.names)]
    if isinstance(plan, Sort):
        return [required | _refs(*(k.expression for k in plan.keys))]
    if isinstance(plan, Window):
        windows = tuple(c for c in plan.calls if c.field.name in required)
        return [(required & frozenset(plan.input.schema.names)) | _refs(*(c.call for c in windows))]
    if isinstance(plan, Limit):
        return [required]
    if isinstance(plan, (Distinct, SetOperation)):
        return [frozenset(child.schema.names) for child in plan.inputs]
    if isinstance(plan, Generate):
        return [(required & frozenset(plan.input.schema.names)) | _refs(plan.call)]
    if isinstance(plan, Opaque):  # its text reads the tables' columns by their names: all of them
        return [frozenset(child.schema.names) for child in plan.inputs]
    raise TypeError(f"no pruning for {plan.operator}")


def _rebuild(plan: LogicalPlan, required: frozenset[str], inputs: list[LogicalPlan]) -> LogicalPlan:
    """``plan`` over its pruned ``inputs``, keeping of its own outputs what ``required`` names."""
    if isinstance(plan, Scan):
        kept = tuple(c for c in plan.columns if c.field.name in required) or plan.columns[:1]
        return plan if len(kept) == len(plan.columns) else Scan(plan.table, kept, plan.alias)
    if isinstance(plan, Values):
        return plan
    if isinstance(plan, Generate):
        return Generate(inputs[0], plan.call, plan.fields, plan.outer)
    if isinstance(plan, Opaque):
        kept = tuple(c for c in plan.columns if c.field.name in required) or plan.columns[:1]
        return dataclasses.replace(plan, reads=tuple(inputs), columns=kept)
    if isinstance(plan, Filter):
        return Filter(inputs[0], plan.condition)
    if isinstance(plan, Project):
        return Project(inputs[0], _kept_projections(plan, required))
    if isinstance(plan, Aggregate):
        return Aggregate(inputs[0], plan.keys, _kept_calls(plan, required))
    if isinstance(plan, Sort):
        return Sort(inputs[0], plan.keys)
    if isinstance(plan, Window):
        windows = tuple(c for c in plan.calls if c.field.name in required)
        return Window(inputs[0], windows) if windows else inputs[0]
    return plan.with_inputs(*inputs)  # a join, a limit, a distinct or a set operation
