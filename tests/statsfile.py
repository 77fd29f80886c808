"""Statistics set by golden files: ``load-stats file=NAME`` and ``inject-stats`` (YAML)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import yaml

from datadriven import Case
from tempura.catalog import TableSource
from tempura.stats import TableStats
from tempura.stats.defaults import default_table_stats

STATS_DATA = Path(__file__).parent / "testdata" / "stats"


class StatsFile:
    """The statistics a golden file has set so far; tables with none get defaults."""

    def __init__(self, schemas: Mapping[str, Mapping[str, str]]) -> None:
        self.schemas = schemas
        self.tables: dict[str, TableStats] = {}

    def lookup(self, table: str) -> TableStats:
        if table in self.tables:
            return self.tables[table]
        return default_table_stats(TableSource(table, f"/{table}"), dict(self.schemas[table]), None)

    def set(self, case: Case) -> str | None:
        """Handles the statistics directives; ``None`` for any other directive."""
        if case.directive == "load-stats":
            data = json.loads((STATS_DATA / f"{case.args['file']}.json").read_text(encoding="utf-8"))
            self.tables.update({name: TableStats.from_json(stats) for name, stats in data.items()})
            return "ok"
        if case.directive == "inject-stats":
            data = yaml.safe_load(case.input)
            self.tables.update({name: TableStats.from_json(stats) for name, stats in data.items()})
            return "ok"
        return None
