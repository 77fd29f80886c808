"""Semi- and anti-join deltas on Spark: rows enter and leave as their match status changes,
with deletions on both sides and NULL keys, for every method and time point."""

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

S = [(1, "x", 1, "I"), (2, "y", 1, "I"), (2, "y", 1, "I"), (3, "z", 2, "I"), (1, "x", 2, "D"), (4, "w", 3, "I"), (None, "n", 1, "I")]
R = [(1, 1, "I"), (2, 2, "I"), (2, 3, "D"), (3, 3, "I"), (4, 2, "I"), (4, 3, "D"), (None, 1, "I")]
SCHEMAS = {"s": {"a": "int", "t": "string"}, "r": {"b": "int"}}
TIMES = (1, 2, 3)


@pytest.mark.parametrize("sql", [
    "SELECT a, t FROM s WHERE EXISTS (SELECT * FROM r WHERE r.b = s.a)",
    "SELECT a, t FROM s WHERE NOT EXISTS (SELECT * FROM r WHERE r.b = s.a)",
    "SELECT t, COUNT(*) AS n FROM s WHERE a IN (SELECT b FROM r) GROUP BY t",
])
def test_semi_and_anti_join_deltas(sql: str, spark: Any) -> None:
    from tempura.runtime.sources import SourceData

    sources = {
        "s": SourceData("s", spark.createDataFrame(S, "a int, t string, at int, op string"), "at", "op", time_values=TIMES),
        "r": SourceData("r", spark.createDataFrame(R, "b int, at int, op string"), "at", "op", time_values=TIMES),
    }
    planner = Optimizer(Estimator(StatsFile(SCHEMAS).lookup), Arrival(lambda _t, a, b: (b - a) / 3, lambda _t: False))
    plans = plan_methods(planner, parse_query(sql, SCHEMAS), sql, TimePoints(TIMES, TIMES), Objective.deadline(3), METHODS)
    assert "ivm" in plans["ivm"].methods
    assert not any("semi" in n or "anti" in n for n in plans["ivm"].notes), plans["ivm"].notes
    assert_methods_match_reference(spark, sql, sources, plans, TIMES)
