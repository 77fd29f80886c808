"""Golden multi-time-point plans: every file in testdata/tvr, with the directives

- ``load-stats file=NAME`` / ``inject-stats``: statistics, as in the optimizer goldens;
- ``tvr-plan``: the plan ``tempura plan`` prints (fragments per time point, states, notes);
- ``tvr-methods``: every method's cost vector and objective side by side.

Arguments: ``points=K`` (time points, default 2), ``weights=deadline|total|W1,W2,…`` (default
deadline), ``method=M`` (default auto), ``output=snapshot|delta``, ``deliver=last|every``
(default last), ``deletes=T1,T2`` (sources with deletions), ``arrival=T:F1/F2/…;…`` (fractions
per interval; default even), ``no-rule=A,B``. Regenerate with
``pytest tests/test_datadriven_tvr.py --rewrite`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datadriven import Case, run_file
from statsfile import StatsFile
from tempura import tpch
from tempura.cost.vector import Objective
from tempura.errors import TempuraError
from tempura.optimizer import METHODS, Arrival, Optimizer, plan_methods
from tempura.sql import parse_query
from tempura.stats import Estimator
from tempura.tvr import TimePoints
from tempura.tvr.render import alternatives_text, plan_text

TESTDATA = Path(__file__).parent / "testdata" / "tvr"

SCHEMAS = {
    **tpch.SCHEMA,
    "sales": {"o_id": "string", "category": "string", "price": "bigint"},
    "returns": {"o_id": "string", "cost": "bigint"},
    "fact": {"f_id": "bigint", "f_a": "bigint", "f_b": "bigint", "f_val": "double"},
    "dim_a": {"a_id": "bigint", "a_x": "int", "a_name": "string"},
    "dim_b": {"b_id": "bigint", "b_y": "int", "b_name": "string"},
}


def arrival_for(case: Case, k: int) -> Arrival:
    deletes = {t for t in case.args.get("deletes", "").split(",") if t}
    declared: dict[str, list[float]] = {}
    for item in (i for i in case.args.get("arrival", "").split(";") if i):
        table, fractions = item.split(":", 1)
        declared[table] = [float(f) for f in fractions.split("/")]

    def fraction(table: str, start: int, end: int) -> float:
        shares = declared.get(table, [1.0 / k] * k)
        return sum(shares[start:end])

    return Arrival(fraction, lambda table: table not in deletes)


class TvrFile(StatsFile):
    def run(self, case: Case) -> str:
        handled = self.set(case)
        if handled is not None:
            return handled
        k = int(case.args.get("points", "2"))
        weights = case.args.get("weights", "deadline")
        objective = Objective.preset(weights, k) if weights in ("deadline", "total") else Objective(tuple(float(w) for w in weights.split(",")))
        deliver = tuple(range(1, k + 1)) if case.args.get("deliver") == "every" else (k,)
        time_points = TimePoints(tuple(range(1, k + 1)), deliver)
        method = case.args.get("method", "auto")
        disabled = [r for r in case.args.get("no-rule", "").split(",") if r]
        try:
            query = parse_query(case.input, SCHEMAS)
            planner = Optimizer(Estimator(self.lookup), arrival_for(case, k))
            plans = plan_methods(planner, query, case.input, time_points, objective, METHODS, disabled,
                                 case.args.get("output", "snapshot"))
        except TempuraError as error:
            return f"{type(error).__name__}: {error}"
        if case.directive == "tvr-plan":
            if method not in plans:
                return f"no {method} plan"
            return plan_text(plans[method], verbose=True)
        if case.directive == "tvr-methods":
            return alternatives_text(plans, method)
        raise ValueError(f"unknown directive {case.directive}")


@pytest.mark.parametrize("path", sorted(TESTDATA.glob("*.txt")), ids=lambda p: p.stem)
def test_tvr_plans(path: Path, rewrite: bool) -> None:
    failures = run_file(path, TvrFile(SCHEMAS).run, rewrite)
    assert not failures, "\n\n".join(failures)
