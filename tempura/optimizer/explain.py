"""EXPLAIN with statistics: every operator with its estimated rows, size and cost.

The text form prints the plan tree with ``rows``, ``size`` and ``cost`` (the subtree's
cumulative cost, and the algorithm it was costed as), then the estimator's notes. The JSON form
gives, for every node, its id, operator, estimates and the Spark SQL of the subplan rooted
there, so that anyone can measure the true cardinality of any node.

An estimate that rests on defaults — a table without statistics, a default selectivity, a join
key without distinct counts — is marked ``rows≈`` instead of ``rows=`` on its node, in both
the statistics and the physical EXPLAIN, and one summary line says how many operators that is
and which defaults they rest on (:func:`defaults_summary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from tempura.algebra import LogicalPlan, Query, format_plan
from tempura.memo import PhysicalPlan
from tempura.optimizer.plans import PlannedQuery
from tempura.cost import PlanCost
from tempura.cost.model import format_bytes, format_time
from tempura.sql import to_spark_sql
from tempura.stats import Estimator
from tempura.stats.relation import RelStats


def format_count(value: float) -> str:
    """A row count with three significant digits and a K/M/B suffix."""
    for suffix, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.3g}" if value < 100 and not float(value).is_integer() else f"{value:.0f}"


DEFAULTS_MARK = "≈"


def rows_text(stats: RelStats) -> str:
    """``rows=N``, or ``rows≈N`` when the estimate rests on defaults."""
    return f"rows{DEFAULTS_MARK if stats.assumptions else '='}{format_count(stats.rows)}"


def defaults_summary(estimates: Sequence[RelStats]) -> str | None:
    """One line on the estimates (one per operator) that rest on defaults: how many, and which
    defaults (tables without statistics, default selectivities, join keys without distinct
    counts); None when none does."""
    marked = [e for e in estimates if e.assumptions]
    if not marked:
        return None
    notes = list(dict.fromkeys(n for e in marked for n in e.assumptions))
    tables = [n.split("no statistics for table ", 1)[1].split(":", 1)[0] for n in notes if n.startswith("no statistics for table ")]
    selectivities = sum("default selectivity" in n for n in notes)
    joins = sum(n.startswith("no distinct counts for join keys") for n in notes)
    parts = []
    if tables:
        parts.append(f"no statistics for {', '.join(tables)} (run tempura analyze)")
    if selectivities:
        parts.append(f"{selectivities} default selectivit{'y' if selectivities == 1 else 'ies'}")
    if joins:
        parts.append(f"{joins} join{'s' if joins != 1 else ''} without distinct counts of the keys")
    other = len(notes) - len(tables) - selectivities - joins
    if other > 0:
        parts.append(f"{other} other assumption{'s' if other != 1 else ''}")
    return (f"{DEFAULTS_MARK} {len(marked)} of {len(estimates)} operators estimated on defaults: "
            + "; ".join(parts))


def _summary_lines(estimates: Iterable[RelStats]) -> list[str]:
    line = defaults_summary(list(estimates))
    return [] if line is None else [line]


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
                f"({rows_text(stats)} size={format_bytes(stats.bytes)} "
                f"cost={format_time(cost.cumulative.total)} {cost.algorithm})"
            )

        lines = [format_plan(query.plan, annotate)]
        lines.extend(_summary_lines(self.estimator.of(node) for node in _walk(query.plan)))
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
            "defaults": defaults_summary([self.estimator.of(n.plan) for n in nodes]),
            "nodes": [{**n.to_json(with_sql), "on_defaults": bool(self.estimator.of(n.plan).assumptions),
                       "max_rows": _finite(self.estimator.of(n.plan).max_rows)} for n in nodes],
        }


def _finite(value: float) -> float | None:
    return None if value == float("inf") else value


def _walk(plan: LogicalPlan) -> list[LogicalPlan]:
    out = [plan]
    for child in plan.inputs:
        out.extend(_walk(child))
    return out


def format_physical(plan: PhysicalPlan) -> str:
    """A physical plan as an indented tree: each operator with its estimated rows (``≈`` when
    they rest on defaults) and size, the cost of its subtree and its own share of it; then the
    line on defaults, if any estimate rests on them."""
    lines: list[str] = []
    estimates: list[RelStats] = []

    def visit(node: PhysicalPlan, depth: int) -> None:
        details = f" {node.details}" if node.details else ""
        estimates.append(node.stats)
        lines.append(
            f"{'  ' * depth}{node.operator}{details}  ({rows_text(node.stats)} "
            f"size={format_bytes(node.stats.bytes)} cost={format_time(node.cumulative.total)} "
            f"own={format_time(node.own.total)})"
        )
        for child in node.children:
            visit(child, depth + 1)

    visit(plan, 0)
    lines.extend(_summary_lines(estimates))
    return "\n".join(lines)


def physical_json(plan: PhysicalPlan) -> dict[str, object]:
    return {
        "operator": plan.operator,
        "details": plan.details,
        "rows": plan.stats.rows,
        "bytes": plan.stats.bytes,
        "on_defaults": bool(plan.stats.assumptions),
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
