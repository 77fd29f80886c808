"""EXPLAIN with statistics: every operator with its estimated rows, size and cost.

The text form prints the plan tree with ``rows``, ``size`` and ``cost`` (the subtree's
cumulative cost, and the algorithm it was costed as), then the estimator's notes. The JSON form
gives, for every node, its id, operator, estimates and the Spark SQL of the subplan rooted
there, so that anyone can measure the true cardinality of any node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tempura.algebra import LogicalPlan, Query, format_plan
from tempura.memo import PhysicalPlan
from tempura.optimizer.plans import PlannedQuery
from tempura.cost import PlanCost
from tempura.cost.model import format_bytes, format_time
from tempura.sql import to_spark_sql
from tempura.stats import Estimator


def format_count(value: float) -> str:
    """A row count with three significant digits and a K/M/B suffix."""
    for suffix, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}" if value < 100 and not float(value).is_integer() else f"{value:.0f}"


def subplan_sql(plan: LogicalPlan) -> str:
    """Spark SQL computing exactly ``plan``'s rows (its columns under their plan names)."""
    return to_spark_sql(Query(plan, plan.schema.names))


@dataclass(frozen=True)
class ExplainNode:
    id: int
    operator: str
    details: str
    children: tuple[int, ...]
    rows: float
    bytes: float
    algorithm: str
    own_cost: float
    cost: float
    plan: LogicalPlan

    def to_json(self, with_sql: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "operator": self.operator,
            "details": self.details,
            "children": list(self.children),
            "rows": self.rows,
            "bytes": self.bytes,
            "algorithm": self.algorithm,
            "own_cost_ns": self.own_cost,
            "cost_ns": self.cost,
        }
        if with_sql:
            out["sql"] = subplan_sql(self.plan)
        return out


class StatsExplainer:
    """Annotates plans with estimates and costs."""

    def __init__(self, estimator: Estimator, coster: PlanCost) -> None:
        self.estimator = estimator
        self.coster = coster

    def nodes(self, plan: LogicalPlan) -> list[ExplainNode]:
        """Every node, numbered in pre-order from 0 (the root)."""
        out: list[ExplainNode] = []

        def visit(node: LogicalPlan) -> int:
            index = len(out)
            out.append(None)  # type: ignore[arg-type]  # reserve the pre-order slot
            children = tuple(visit(child) for child in node.inputs)
            stats = self.estimator.of(node)
            cost = self.coster.of(node)
            out[index] = ExplainNode(
                index,
                node.operator,
                node.details(),
                children,
                stats.rows,
                stats.bytes,
                cost.algorithm,
                cost.own.total,
                cost.cumulative.total,
                node,
            )
            return index

        visit(plan)
        return out

    def text(self, query: Query) -> str:
        def annotate(node: LogicalPlan) -> str:
            stats = self.estimator.of(node)
            cost = self.coster.of(node)
            return (
                f"(rows={format_count(stats.rows)} size={format_bytes(stats.bytes)} "
                f"cost={format_time(cost.cumulative.total)} {cost.algorithm})"
            )

        lines = [format_plan(query.plan, annotate)]
        notes = self.notes(query.plan)
        if notes:
            lines.append("notes:")
            lines.extend(f"  - {note}" for note in notes)
        return "\n".join(lines)

    def notes(self, plan: LogicalPlan) -> list[str]:
        """Every node's estimation notes, each once, the root's first."""
        return list(dict.fromkeys(n for node in _walk(plan) for n in self.estimator.of(node).notes))

    def json(self, query: Query, with_sql: bool = True) -> dict[str, Any]:
        nodes = self.nodes(query.plan)
        root = self.estimator.of(query.plan)
        notes = self.notes(query.plan)
        return {
            "columns": list(query.names),
            "rows": root.rows,
            "bytes": root.bytes,
            "cost_ns": self.coster.of(query.plan).cumulative.total,
            "notes": notes,
            "nodes": [n.to_json(with_sql) for n in nodes],
        }


def _walk(plan: LogicalPlan) -> list[LogicalPlan]:
    out = [plan]
    for child in plan.inputs:
        out.extend(_walk(child))
    return out


def format_physical(plan: PhysicalPlan) -> str:
    """A physical plan as an indented tree: each operator with its estimated rows and size, the
    cost of its subtree and its own share of it."""
    lines: list[str] = []

    def visit(node: PhysicalPlan, depth: int) -> None:
        details = f" {node.details}" if node.details else ""
        lines.append(
            f"{'  ' * depth}{node.operator}{details}  (rows={format_count(node.stats.rows)} "
            f"size={format_bytes(node.stats.bytes)} cost={format_time(node.cumulative.total)} "
            f"own={format_time(node.own.total)})"
        )
        for child in node.children:
            visit(child, depth + 1)

    visit(plan, 0)
    return "\n".join(lines)


def physical_json(plan: PhysicalPlan) -> dict[str, object]:
    return {
        "operator": plan.operator,
        "details": plan.details,
        "rows": plan.stats.rows,
        "bytes": plan.stats.bytes,
        "cost": plan.cumulative.to_json(),
        "own_cost": plan.own.to_json(),
        "delivered": str(plan.delivered),
        "group": plan.group,
        "children": [physical_json(c) for c in plan.children],
    }


def format_trace(planned: PlannedQuery) -> str:
    """The phases with what each did and its time, the rules that fired, and what the search did."""
    lines = ["phases:"]
    lines.extend(f"  {record}" for record in planned.phases)
    lines.append("normalization: " + (", ".join(planned.normalization) if planned.normalization else "no rule fired"))
    if planned.trace is not None:
        lines.append("exploration:")
        lines.extend(f"  {firing}" for firing in planned.trace.firings)
    r = planned.report
    lines.append(
        f"search: {r.groups} groups, {r.expressions} logical expressions, {r.alternatives} physical "
        f"alternatives ({r.pruned} pruned by cost bound), {r.winners} winners, {r.seconds * 1000:.0f} ms"
    )
    return "\n".join(lines)
