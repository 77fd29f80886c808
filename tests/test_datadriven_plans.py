"""Golden plan tests: every file in testdata/plans, with the directives

- ``plan``: the printed logical plan of the query;
- ``sql``: the Spark SQL the back end prints for it;
- ``error``: the error class and message a bad query gets;
- ``normalize``: the plan after predicate pushdown, and the rules that fired (``no-rule=A,B``
  disables rules).

Regenerate with ``pytest tests/test_datadriven_plans.py --rewrite`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datadriven import Case, run_file
from tempura import tpch
from tempura.algebra import validate_plan
from tempura.errors import TempuraError
from tempura.rules.logical import normalize
from tempura.sql import parse_query, to_spark_sql

TESTDATA = Path(__file__).parent / "testdata" / "plans"

SCHEMAS = {
    **tpch.SCHEMA,
    "t": {"a": "int", "b": "bigint", "c": "string", "d": "double"},
    "u": {"a": "int", "e": "bigint", "f": "string"},
    "sales": {"o_id": "string", "category": "string", "price": "bigint"},
    "returns": {"o_id": "string", "cost": "bigint"},
}


def run_case(case: Case) -> str:
    dialect = case.args.get("dialect", "spark")
    try:
        query = parse_query(case.input, SCHEMAS, dialect)
    except TempuraError as error:
        if case.directive == "error":
            return f"{type(error).__name__}: {error}"
        return f"unexpected {type(error).__name__}: {error}"
    if case.directive == "error":
        return "no error"
    validate_plan(query.plan)
    if case.directive == "plan":
        return str(query.plan)
    if case.directive == "sql":
        return to_spark_sql(query, pretty=True)
    if case.directive == "normalize":
        trace: list[str] = []
        disabled = [r for r in case.args.get("no-rule", "").split(",") if r]
        plan = normalize(query.plan, disabled, trace)
        validate_plan(plan)
        return f"{plan}\nrules: {', '.join(trace) or 'none'}"
    raise ValueError(f"unknown directive {case.directive}")


@pytest.mark.parametrize("path", sorted(TESTDATA.glob("*.txt")), ids=lambda p: p.stem)
def test_plans(path: Path, rewrite: bool) -> None:
    failures = run_file(path, run_case, rewrite)
    assert not failures, "\n\n".join(failures)
