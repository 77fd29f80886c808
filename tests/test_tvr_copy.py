"""Memo copy by translational symmetry gives the same plans as expanding every version by
rules, and copies most of the middle versions' structure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statsfile import StatsFile
from tempura import tpch
from tempura.cost.vector import Objective
from tempura.optimizer import Arrival, Optimizer
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.tvr import TimePoints

QUERIES = Path(tpch.__file__).parent / "data" / "tpch" / "queries"
STATS = Path(__file__).parent / "testdata" / "stats" / "tpch-sf0.01.json"


def planner() -> Optimizer:
    stats = StatsFile(tpch.SCHEMA)
    stats.tables.update({n: TableStats.from_json(s) for n, s in json.loads(STATS.read_text()).items()})
    return Optimizer(Estimator(stats.lookup), Arrival.uniform(5, deletions=("orders",)))


@pytest.mark.parametrize("name", ["q01", "q03", "q04", "q13", "q18"])
@pytest.mark.parametrize("method", ["auto", "streaming", "higher-order"])
def test_copy_equals_full_expansion(name: str, method: str) -> None:
    sql = (QUERIES / f"{name}.sql").read_text()
    query = parse_query(sql, tpch.SCHEMA)
    time_points = TimePoints((1, 2, 3, 4, 5), (1, 3, 5))
    plans = {
        copy: planner().plan_standing(query, sql, time_points, Objective.deadline(5), method, disabled=() if copy else ("copy",))
        for copy in (True, False)
    }
    copied, full = plans[True], plans[False]
    assert copied.search["copied"] > 0
    assert full.search["copied"] == 0
    assert copied.cost.times == pytest.approx(full.cost.times)
    assert [(f.time, f.sql()) for f in copied.fragments] == [(f.time, f.sql()) for f in full.fragments]
