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
import yaml

from datadriven import Case, run_file
from tempura import tpch
from tempura.catalog import TableSource
from tempura.cost import CostConstants, PlanCost
from tempura.errors import TempuraError
from tempura.explain import StatsExplainer
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.stats.defaults import default_table_stats

TESTDATA = Path(__file__).parent / "testdata" / "stats"

SCHEMAS = {
    **tpch.SCHEMA,
    "t": {"a": "int", "b": "bigint", "c": "string", "d": "double", "e": "date"},
    "u": {"a": "int", "f": "bigint", "g": "string"},
}


class StatsFile:
    """The statistics a golden file has set so far."""

    def __init__(self) -> None:
        self.tables: dict[str, TableStats] = {}

    def lookup(self, table: str) -> TableStats:
        if table in self.tables:
            return self.tables[table]
        return default_table_stats(TableSource(table, f"/{table}"), SCHEMAS[table], None)

    def run(self, case: Case) -> str:
        if case.directive == "load-stats":
            data = json.loads((TESTDATA / f"{case.args['file']}.json").read_text(encoding="utf-8"))
            self.tables.update({name: TableStats.from_json(stats) for name, stats in data.items()})
            return "ok"
        if case.directive == "inject-stats":
            data = yaml.safe_load(case.input)
            self.tables.update({name: TableStats.from_json(stats) for name, stats in data.items()})
            return "ok"
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
    state = StatsFile()
    failures = run_file(path, state.run, rewrite)
    assert not failures, "\n\n".join(failures)
