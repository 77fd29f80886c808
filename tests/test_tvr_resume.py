"""Re-planning from committed states: every state a plan keeps has a key a later planning of the
query finds it by, so re-planning the rest of a cycle can continue the plan it replaces (reading
the states instead of recomputing them) and never does worse than it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statsfile import StatsFile
from tempura import tpch
from tempura.cost.vector import Objective
from tempura.optimizer import Arrival, CommittedState, Optimizer, Resume
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.tvr import TimePoints
from tempura.tvr.plan import MultiTimePlan

QUERIES = Path(tpch.__file__).parent / "data" / "tpch" / "queries"
STATS = Path(__file__).parent / "testdata" / "stats" / "tpch-sf0.01.json"
STOCK = """SELECT n_regionkey, COUNT(*) AS lines, SUM(s.ps_availqty) AS units
FROM partsupp s JOIN supplier ON s.ps_suppkey = s_suppkey JOIN nation ON s_nationkey = n_nationkey
WHERE s.ps_availqty > 0 GROUP BY n_regionkey"""


def planner(deletions: tuple[str, ...]) -> Optimizer:
    stats = StatsFile(tpch.SCHEMA)
    stats.tables.update({n: TableStats.from_json(s) for n, s in json.loads(STATS.read_text()).items()})
    return Optimizer(Estimator(stats.lookup), Arrival.uniform(4, deletions=deletions))


def plan(sql: str, method: str, deletions: tuple[str, ...], resume: Resume | None = None) -> MultiTimePlan:
    time_points = TimePoints((1, 2, 3, 4), (4,))
    return planner(deletions).plan_standing(parse_query(sql, tpch.SCHEMA), sql, time_points, Objective.deadline(4), method,
                                            resume=resume)


CASES = [
    ("q01", None, ()), ("q03", None, ()), ("q05", None, ()), ("q10", None, ()), ("q18", None, ()),
    ("stock", STOCK, ("partsupp",)), ("q03-deletions", None, ("orders", "lineitem")),
]


@pytest.mark.parametrize("method", ["auto", "ivm", "higher-order"])
@pytest.mark.parametrize(("name", "sql", "deletions"), CASES, ids=[c[0] for c in CASES])
def test_replanning_at_the_last_point_continues_the_plan(name: str, sql: str | None, deletions: tuple[str, ...], method: str) -> None:
    text = sql if sql is not None else (QUERIES / f"{name.split('-')[0]}.sql").read_text()
    first = plan(text, method, deletions)
    saved = [s for s in first.states if s.produced_at < 4]
    assert all(s.key for s in first.states), [(s.id, s.form) for s in first.states if not s.key]
    committed = tuple(CommittedState(s.id, s.produced_at, s.key, s.layout) for s in saved)
    # the intervals landed before t4 keep the layouts the plan chose for them, as a run records them
    landed = tuple((source, i, layout) for source, by in first.layouts.items() for i, layout in by.items() if i < 4)
    again = plan(text, method, deletions, Resume(4, committed, landed))
    read_at_4 = {s.id for s in saved if 4 in s.read_at}
    # the plan it replaces is still open to it: reading the same states costs what it did
    assert again.cost.times[3] <= first.cost.times[3] * (1 + 1e-6) + 1e-3, (first.cost.times, again.cost.times)
    if read_at_4 and again.cost.times[3] < first.cost.times[3] * (1 - 1e-6):
        return  # a cheaper way than the states: nothing more to check
    assert read_at_4 <= set(again.inputs), (read_at_4, again.inputs)
