"""Golden optimizer tests: every file in testdata/optimizer, with the directives

- ``load-stats file=NAME`` / ``inject-stats``: statistics, as in the EXPLAIN STATS goldens;
- ``plan``: the physical plan tempura picks (algorithms, rows, cost);
- ``join-order``: only its joins, as nested ``ALGORITHM(left, right)`` over the scanned tables;
- ``memo``: the memo after exploration (groups, rows, logical expressions);
- ``trace``: the exploration rules' firings (refusals of cross products included).

Every directive takes ``no-rule=A,B`` (rules to disable) and ``cost=NAME:VALUE,…`` (cost
constants, e.g. ``cost=broadcast_limit:20000``). Regenerate with
``pytest tests/test_datadriven_optimizer.py --rewrite`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datadriven import Case, run_file
from statsfile import StatsFile
from tempura import tpch
from tempura.cost import CostConstants
from tempura.errors import TempuraError
from tempura.optimizer.explain import format_physical
from tempura.memo import PhysicalPlan
from tempura.optimizer import Optimizer
from tempura.sql import parse_query
from tempura.stats import Estimator

TESTDATA = Path(__file__).parent / "testdata" / "optimizer"

SCHEMAS = {
    **tpch.SCHEMA,
    "fact": {"f_id": "bigint", "f_a": "bigint", "f_b": "bigint", "f_c": "bigint", "f_val": "double"},
    "dim_a": {"a_id": "bigint", "a_x": "int", "a_name": "string"},
    "dim_b": {"b_id": "bigint", "b_y": "int", "b_name": "string"},
    "dim_c": {"c_id": "bigint", "c_z": "int"},
}

SHORT = {
    "BroadcastHashJoin": "BHJ",
    "ShuffledHashJoin": "SHJ",
    "SortMergeJoin": "SMJ",
    "BroadcastNestedLoopJoin": "BNLJ",
}


def join_order(node: PhysicalPlan) -> str:
    """The joins of a physical plan as nested ``BHJ[build=left](a, b)`` over table names."""
    if node.operator in SHORT:
        build = node.details.rsplit("build=", 1)[1] if "build=" in node.details else ""
        head = SHORT[node.operator] + (f"[{build}]" if build else "")
        return f"{head}({join_order(node.children[0])}, {join_order(node.children[1])})"
    if node.operator == "Scan":
        return node.details.split(" [", 1)[0].split(" AS ")[-1]
    inner = ", ".join(join_order(c) for c in node.children)
    if node.operator in ("HashAggregate", "Union", "Intersect", "Except") and node.logical is not None:
        return f"{node.operator}({inner})"
    return inner


class OptimizerFile(StatsFile):
    def run(self, case: Case) -> str:
        handled = self.set(case)
        if handled is not None:
            return handled
        disabled = [r for r in case.args.get("no-rule", "").split(",") if r]
        costs = dict(item.split(":", 1) for item in case.args.get("cost", "").split(",") if item)
        try:
            query = parse_query(case.input, SCHEMAS)
            planner = Optimizer(Estimator(self.lookup), constants=CostConstants.from_mapping(costs))
            planned = planner.plan(query, disabled, trace=case.directive == "trace")
        except TempuraError as error:
            return f"{type(error).__name__}: {error}"
        if case.directive == "plan":
            return format_physical(planned.physical)
        if case.directive == "join-order":
            return join_order(planned.physical)
        if case.directive == "memo":
            return planned.memo.format()
        if case.directive == "trace":
            assert planned.trace is not None
            return "\n".join(str(f) for f in planned.trace.firings) or "no rule fired"
        raise ValueError(f"unknown directive {case.directive}")


@pytest.mark.parametrize("path", sorted(TESTDATA.glob("*.txt")), ids=lambda p: p.stem)
def test_optimizer(path: Path, rewrite: bool) -> None:
    failures = run_file(path, OptimizerFile(SCHEMAS).run, rewrite)
    assert not failures, "\n\n".join(failures)
