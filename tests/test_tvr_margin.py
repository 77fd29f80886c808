"""``auto`` against recomputation: an incremental plan is taken only when it saves the margin of
recomputation's objective (``plan_methods(margin=…)``, the spec's ``objective.margin``)."""

from __future__ import annotations

import dataclasses

import pytest

from statsfile import StatsFile
from tempura.cost.vector import Objective
from tempura.optimizer import AUTO_MARGIN, Arrival, Optimizer, plan_methods
from tempura.sql import parse_query
from tempura.stats.estimate import Estimator
from tempura.tvr import TimePoints
from tempura.tvr.plan import MultiTimePlan

SQL = "SELECT category, SUM(price) AS gross FROM sales GROUP BY category"
SCHEMAS = {"sales": {"o_id": "string", "category": "string", "price": "bigint"}}


def plans(margin: float) -> dict[str, MultiTimePlan]:
    """Ten million sales in 20 categories, 90% of them by the first of two time points: keeping the
    first point's partial aggregate is estimated far cheaper than recomputing at the deadline."""
    stats = StatsFile(SCHEMAS)
    default = stats.lookup("sales")
    columns = dict(default.columns)
    columns["category"] = dataclasses.replace(columns["category"], ndv=20.0)
    stats.tables["sales"] = dataclasses.replace(default, rows=1e7, bytes=default.bytes / default.rows * 1e7, columns=columns)
    arrival = Arrival(fraction=lambda _t, start, end: sum((0.9, 0.1)[start:end]), insert_only=lambda _t: True)
    planner = Optimizer(Estimator(stats.lookup), arrival)
    return plan_methods(planner, parse_query(SQL, SCHEMAS), SQL, TimePoints((1, 2), (2,)), Objective.deadline(2),
                        margin=margin)


@pytest.fixture(scope="module")
def saving() -> float:
    """The share of batch's objective the cheapest plan saves."""
    found = plans(0.0)
    return 1 - min(p.cost.weighted for p in found.values()) / found["batch"].cost.weighted


def test_the_cheapest_saves_more_than_the_default_margin(saving: float) -> None:
    assert saving > AUTO_MARGIN


def test_without_a_margin_auto_is_the_cheapest() -> None:
    found = plans(0.0)
    assert found["auto"].cost.weighted == min(p.cost.weighted for p in found.values())
    assert found["auto"].cost.weighted < found["batch"].cost.weighted
    assert found["auto"].methods != ["batch"]


def test_a_saving_below_the_margin_keeps_recomputation(saving: float) -> None:
    found = plans(min(0.99, saving + 0.01))
    assert found["auto"].cost.weighted == found["batch"].cost.weighted
    assert found["auto"].methods == ["batch"]
    assert [n for n in found["auto"].notes if "less than the margin" in n], found["auto"].notes


def test_a_saving_above_the_margin_takes_the_cheapest(saving: float) -> None:
    found = plans(saving - 0.01)
    assert found["auto"].cost.weighted == min(p.cost.weighted for p in found.values())
    assert not [n for n in found["auto"].notes if "less than the margin" in n]
