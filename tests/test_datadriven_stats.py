"""Golden EXPLAIN STATS tests: every file in testdata/stats, with the directives

- ``load-stats file=NAME``: use the statistics in ``NAME.json`` (tables by name);
- ``inject-stats``: a YAML mapping of table name to statistics (the stats file format);
- ``explain-stats``: the plan with estimated rows, size and cost on every operator;
- ``explain-json``: the ``--json`` form, without the per-node SQL.

Statistics set by a directive hold for the rest of the file. Tables with none get defaults.
Regenerate with ``pytest tests/test_datadriven_stats.py --rewrite`` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datadriven import Case, run_file
from statsfile import StatsFile
from tempura import tpch
from tempura.cost import CostConstants, PlanCost
from tempura.errors import TempuraError
from tempura.optimizer.explain import StatsExplainer
from tempura.sql import parse_query
from tempura.stats import Estimator

TESTDATA = Path(__file__).parent / "testdata" / "stats"

SCHEMAS = {
    **tpch.SCHEMA,
    "t": {"a": "int", "b": "bigint", "c": "string", "d": "double", "e": "date"},
    "u": {"a": "int", "f": "bigint", "g": "string"},
    "sales": {"id": "bigint", "country": "string", "ts": "timestamp", "day": "date"},
}


class ExplainFile(StatsFile):
    def run(self, case: Case) -> str:
        handled = self.set(case)
        if handled is not None:
            return handled
        try:
            query = parse_query(case.input, SCHEMAS, case.args.get("dialect", "spark"))
        except TempuraError as error:
            return f"{type(error).__name__}: {error}"
        estimator = Estimator(self.lookup)
        explainer = StatsExplainer(estimator, PlanCost(estimator, CostConstants()))
        if case.directive == "explain-stats":
            return explainer.text(query)
        if case.directive == "explain-json":
            return json.dumps(explainer.json(query, with_sql=False), indent=1, sort_keys=True)
        raise ValueError(f"unknown directive {case.directive}")


@pytest.mark.parametrize("path", sorted(TESTDATA.glob("*.txt")), ids=lambda p: p.stem)
def test_explain_stats(path: Path, rewrite: bool) -> None:
    state = ExplainFile(SCHEMAS)
    failures = run_file(path, state.run, rewrite)
    assert not failures, "\n\n".join(failures)
