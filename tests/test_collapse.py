"""Collapsing stacked filters and projections in the memo: the rules on hand-made memos, and what
they leave of multi-time-point plans (without Spark; the differential tests run the plans)."""

from __future__ import annotations

from typing import Iterator

import pytest
from sqlglot import exp

from statsfile import StatsFile
from tempura.algebra import Filter, LogicalPlan, Project, Projection, Scan, ScanColumn, col
from tempura.algebra.schema import Field
from tempura.cost.vector import Objective
from tempura.optimizer import Arrival, Optimizer
from tempura.memo import Memo
from tempura.rules.logical.collapse import collapse
from tempura.sql import parse_query
from tempura.stats import Estimator
from tempura.stats.relation import RelStats
from tempura.tvr import TimePoints


def scan(table: str, *names: str) -> Scan:
    return Scan(table, tuple(ScanColumn(n, Field(n, "bigint")) for n in names), table)


def fresh_memo() -> Memo:
    return Memo(lambda expr, inputs: RelStats(10.0, 8.0, {}))


def gt(name: str, n: int) -> exp.Expr:
    return exp.GT(this=col(name), expression=exp.Literal.number(n))


def sqls(memo: Memo, group: int) -> set[str]:
    return {f"{e.operator} {e.details()}" for e in memo.group(group).exprs}


def test_filters_collapse_into_one_conjunction() -> None:
    memo = fresh_memo()
    base = memo.insert(scan("t", "a", "b"))
    inner = memo.insert(Filter(memo.ref(base), gt("a", 1)))
    outer = memo.insert(Filter(memo.ref(inner), gt("b", 2)))
    collapse(memo)
    assert memo.find(outer) != memo.find(inner)
    assert any(isinstance(e, Filter) and e.input == memo.ref(base) and e.details() == "a > 1 AND b > 2"
               for e in memo.group(outer).exprs), sqls(memo, outer)


def test_a_filter_repeating_the_one_below_is_the_same_group() -> None:
    memo = fresh_memo()
    base = memo.insert(scan("t", "a"))
    inner = memo.insert(Filter(memo.ref(base), gt("a", 1)))
    outer = memo.insert(Filter(memo.ref(inner), gt("a", 1)))
    above = memo.insert(Project(memo.ref(outer), (Projection(Field("a", "bigint"), col("a")),)))
    collapse(memo)
    assert memo.find(outer) == memo.find(inner)
    (project,) = memo.group(above).exprs
    assert project.inputs[0] == memo.ref(inner)


def test_a_non_deterministic_filter_is_not_collapsed() -> None:
    memo = fresh_memo()
    base = memo.insert(scan("t", "a"))
    inner = memo.insert(Filter(memo.ref(base), exp.GT(this=exp.Rand(), expression=exp.Literal.number("0.5"))))
    outer = memo.insert(Filter(memo.ref(inner), gt("a", 1)))
    collapse(memo)
    assert len(memo.group(outer).exprs) == 1


def project(input_: LogicalPlan, **columns: exp.Expr) -> Project:
    return Project(input_, tuple(Projection(Field(name, "bigint"), e) for name, e in columns.items()))


def plus(a: exp.Expr, n: int) -> exp.Expr:
    return exp.Add(this=a, expression=exp.Literal.number(n))


def test_projections_collapse_by_substitution() -> None:
    memo = fresh_memo()
    base = memo.insert(scan("t", "a", "b"))
    inner = memo.insert(project(memo.ref(base), x=plus(col("a"), 1), b=col("b")))
    outer = memo.insert(project(memo.ref(inner), y=plus(col("x"), 2), b=col("b")))
    collapse(memo)
    made = [e for e in memo.group(outer).exprs if e.inputs[0] == memo.ref(base)]
    assert [e.details() for e in made] == ["[y := a + 1 + 2, b]"]


@pytest.mark.parametrize("inner_expr, outer_cols", [
    (plus(col("a"), 1), {"y": col("x"), "z": col("x")}),  # a computed column would be computed twice
    (exp.Rand(), {"b": col("b")}),  # a random column dropped: not the same draws
    (exp.Rand(), {"y": col("x"), "z": col("x")}),  # or drawn twice
])
def test_projections_that_would_change_work_or_draws_are_not_collapsed(inner_expr: exp.Expr, outer_cols: dict[str, exp.Expr]) -> None:
    memo = fresh_memo()
    base = memo.insert(scan("t", "a", "b"))
    inner = memo.insert(project(memo.ref(base), x=inner_expr, b=col("b")))
    outer = memo.insert(project(memo.ref(inner), **outer_cols))
    collapse(memo)
    assert len(memo.group(outer).exprs) == 1


def test_disabled_collapse_rules_add_nothing() -> None:
    memo = fresh_memo()
    base = memo.insert(scan("t", "a", "b"))
    inner = memo.insert(Filter(memo.ref(base), gt("a", 1)))
    memo.insert(Filter(memo.ref(inner), gt("b", 2)))
    size = memo.size()
    collapse(memo, {"collapse-filters", "collapse-projects"})
    assert memo.size() == size


# -- multi-time-point plans ------------------------------------------------------------------

SCHEMAS = {"fact": {"f_a": "bigint", "f_b": "bigint", "f_val": "bigint", "arrives": "int"}}
QUERIES = [
    "SELECT f_a, SUM(f_val) AS s, COUNT(*) AS n FROM fact GROUP BY f_a",
    "SELECT f_a, f_b, AVG(f_val) AS a FROM fact WHERE f_val > 10 GROUP BY f_a, f_b",
    "SELECT f_a + 1 AS k, COUNT(*) AS n FROM (SELECT f_a, f_val * 2 AS v FROM fact) AS t WHERE v > 4 GROUP BY f_a + 1",
]


def nodes(plan: LogicalPlan) -> Iterator[LogicalPlan]:
    yield plan
    for child in plan.inputs:
        yield from nodes(child)


def stacked_filters(plan: LogicalPlan) -> list[str]:
    return [f"{n.details()} over {n.inputs[0].details()}" for n in nodes(plan)
            if isinstance(n, Filter) and isinstance(n.inputs[0], Filter)]


def plan_fragments(sql: str, method: str, disabled: tuple[str, ...] = ()) -> list[LogicalPlan]:
    planner = Optimizer(Estimator(StatsFile(SCHEMAS).lookup), Arrival.uniform(3))
    plan = planner.plan_standing(parse_query(sql, SCHEMAS), sql, TimePoints((1, 2, 3), (1, 2, 3)),
                                 Objective.preset("deadline", 3), method, disabled)
    return [f.plan for f in plan.fragments]


@pytest.mark.parametrize("method", ["ivm", "auto"])
@pytest.mark.parametrize("sql", QUERIES)
def test_finalized_merges_filter_the_gone_groups_once(sql: str, method: str) -> None:
    fragments = plan_fragments(sql, method)
    assert all(not stacked_filters(f) for f in fragments), [stacked_filters(f) for f in fragments]
    # the same plans without the rule stack the finalize's filter on the merge's
    uncollapsed = plan_fragments(sql, "ivm", ("collapse-filters",))
    assert any(stacked_filters(f) for f in uncollapsed)
