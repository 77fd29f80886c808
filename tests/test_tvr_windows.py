"""Window functions in standing queries, on Spark: a window's delta recomputes only the
partitions its input's delta touches (``tvr-window-partitions``), and every method's result
equals ``spark.sql`` on the snapshot at every time point. Deletions empty a partition and bring
it back, the NULL partition changes, ties change ranks, and a ranking filter (top N per
partition) and a window over an aggregate's output sit above it."""

from __future__ import annotations

from typing import Any

import pytest

from statsfile import StatsFile
from tvrtesting import assert_methods_match_reference
from tempura.cost.vector import Objective
from tempura.optimizer import METHODS, Arrival, Optimizer, plan_methods
from tempura.sql import parse_query
from tempura.stats import Estimator
from tempura.tvr import TimePoints

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(fast_spark: Any) -> Any:
    """The shared session with the tiny-data settings."""
    return fast_spark


# (g, v, w, at, op): partition "b" empties at t3 and comes back at t4; the NULL partition
# changes at t2 and t3; partition "d" never changes after t1
ROWS = [
    ("a", 1, 10, 1, "I"), ("a", 5, 10, 1, "I"), ("b", 3, 20, 1, "I"), (None, 7, 30, 1, "I"), ("d", 4, 1, 1, "I"),
    ("d", 6, 2, 1, "I"),
    ("a", 1, 10, 2, "D"), ("a", 9, 11, 2, "I"), ("c", 2, 12, 2, "I"), (None, 0, 30, 2, "I"),
    ("b", 3, 20, 3, "D"), ("a", 9, 11, 3, "D"), (None, 7, 30, 3, "D"), ("c", 4, 12, 3, "I"),
    ("b", 8, 21, 4, "I"), ("a", 5, 10, 4, "D"), ("a", 6, None, 4, "I"), ("c", 4, 13, 4, "I"),
]
SCHEMAS = {"t": {"g": "string", "v": "int", "w": "int"}}
TIMES = (1, 2, 3, 4)
QUERIES = [
    "SELECT g, v, RANK() OVER (PARTITION BY g ORDER BY v) AS r, SUM(w) OVER (PARTITION BY g) AS s FROM t",
    "SELECT g, v, w, LAG(w) OVER (PARTITION BY g ORDER BY v, w) AS prev, "
    "COUNT(*) OVER (PARTITION BY g ORDER BY v) AS upto FROM t",
    "SELECT * FROM (SELECT g, v, w, DENSE_RANK() OVER (PARTITION BY g ORDER BY v DESC) AS r FROM t) AS x WHERE r <= 1",
    "SELECT g, SUM(v) AS s, RANK() OVER (PARTITION BY g IS NULL ORDER BY SUM(v)) AS r FROM t GROUP BY g",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_windows_are_maintained_by_partition(sql: str, spark: Any) -> None:
    from tempura.runtime.sources import SourceData

    sources = {"t": SourceData("t", spark.createDataFrame(ROWS, "g string, v int, w int, at int, op string"), "at", "op",
                               time_values=TIMES)}
    planner = Optimizer(Estimator(StatsFile(SCHEMAS).lookup), Arrival(lambda _t, a, b: (b - a) / 4, lambda _t: False))
    plans = plan_methods(planner, parse_query(sql, SCHEMAS), sql, TimePoints(TIMES, TIMES), Objective.deadline(4), METHODS)
    assert plans["ivm"].search["tvr_rule_firings"].get("tvr-window-partitions", 0) > 0
    assert_methods_match_reference(spark, sql, sources, plans, TIMES)


def test_a_window_without_partition_is_recomputed_and_says_why() -> None:
    sql = "SELECT g, v, RANK() OVER (ORDER BY v) AS r FROM t"
    planner = Optimizer(Estimator(StatsFile(SCHEMAS).lookup), Arrival(lambda _t, a, b: (b - a) / 4, lambda _t: False))
    plan = planner.plan_standing(parse_query(sql, SCHEMAS), sql, TimePoints(TIMES, TIMES), Objective.deadline(4), "ivm")
    assert plan.search["tvr_rule_firings"].get("tvr-window-partitions", 0) == 0
    assert any("Window" in note and "recomputed" in note for note in plan.notes), plan.notes
