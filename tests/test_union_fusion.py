"""Which unions Spark compiles into their stage, as the cost model sees it and as Spark runs it.

Spark (adaptive execution off, as tempura runs its plans) compiles a union all only where no other
union and no shuffled join lies anywhere beneath it; otherwise the union is interpreted and its
rows are copied out of its inputs. The physical search tracks this as a delivered property
(``Props.union``) and charges the copy to a compiled operator reading the rows in their stage
(``SparkCosts.union_copy``). Each case plans a query with tempura, checks what the model says
against the plan Spark executes (a union outside every ``*(n)`` compiled stage), and the result
against ``spark.sql``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import pytest

from tempura.cost import CostConstants
from tempura.cost.vector import Objective
from tempura.memo import PhysicalPlan
from tempura.memo.properties import UNION_INTERPRETED
from tempura.optimizer import METHODS, Arrival, Optimizer, PlannedQuery, plan_methods
from tempura.runtime import compare_results, execute
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.stats.model import ColumnStats
from tempura.tvr import TimePoints
from tempura.tvr.bounds import ArrivalBounds
from tempura.tvr.render import plan_text

SCHEMAS = {
    "a": {"a_k": "bigint", "a_v": "bigint"},
    "b": {"b_k": "bigint", "b_v": "bigint"},
    "c": {"c_k": "bigint", "c_v": "bigint"},
    "item": {"i_k": "bigint", "i_cat": "bigint"},
}


def number(ndv: float, unique: bool = False) -> ColumnStats:
    return ColumnStats(kind="number", ndv=ndv, nulls=0.0, min=0.0, max=ndv, step=1.0, unique=unique)


def big(prefix: str) -> TableStats:
    return TableStats(rows=1e7, bytes=1.6e8, columns={f"{prefix}_k": number(1000), f"{prefix}_v": number(1e6)}, source="injected")


TABLES = {
    "a": big("a"),
    "b": big("b"),
    "c": big("c"),
    "item": TableStats(rows=1000, bytes=16_000, columns={"i_k": number(1000, unique=True), "i_cat": number(30)}, source="injected"),
}

# the deltas of a join with item: b's and c's rows joined to item, under one more union
JOINED = "SELECT i_cat AS cat, v FROM (SELECT b_k AS k, b_v AS v FROM b UNION ALL SELECT c_k, c_v FROM c) AS d JOIN item ON k = i_k"

CASES = {
    # an aggregate over a union with another beneath a join: interpreted, and its rows copied
    "aggregate over a union over a joined union": (
        f"SELECT cat, SUM(v) AS s FROM (SELECT a_k AS cat, a_v AS v FROM a UNION ALL {JOINED}) AS u GROUP BY cat", True, True),
    # the same union written out: interpreted, but nothing compiled reads its rows
    "a union over a joined union, delivered": (f"SELECT a_k AS cat, a_v AS v FROM a UNION ALL {JOINED}", True, False),
    # unions nested directly merge into one, which Spark compiles
    "aggregate over nested unions": (
        "SELECT k, SUM(v) AS s FROM (SELECT a_k AS k, a_v AS v FROM a UNION ALL "
        "SELECT k, v FROM (SELECT b_k AS k, b_v AS v FROM b UNION ALL SELECT c_k, c_v FROM c) AS bc) AS u GROUP BY k", False, False),
    # the joined rows aggregated first: the inner union is still beneath, across the exchange
    "aggregate over a union over an aggregated joined union": (
        f"SELECT cat, SUM(v) AS s FROM (SELECT a_k AS cat, a_v AS v FROM a UNION ALL "
        f"SELECT cat, SUM(v) AS v FROM ({JOINED}) AS j GROUP BY cat) AS u GROUP BY cat", True, True),
    # a shuffled join beneath (both sides too big to broadcast) keeps the union from compiling too
    "aggregate over a union over a shuffled join": (
        "SELECT k, SUM(v) AS s FROM (SELECT a_k AS k, a_v AS v FROM a UNION ALL "
        "SELECT b_k, c_v FROM b JOIN c ON b_v = c_v) AS u GROUP BY k", True, True),
    # a union of plain scans under an aggregate: compiled
    "aggregate over a union of scans": (
        "SELECT k, SUM(v) AS s FROM (SELECT a_k AS k, a_v AS v FROM a UNION ALL SELECT b_k, b_v FROM b) AS u GROUP BY k", False, False),
}

def plan(sql: str, constants: CostConstants | None = None) -> PlannedQuery:
    return Optimizer(Estimator(TABLES.__getitem__), constants=constants).plan(parse_query(sql, SCHEMAS))


def interpreted(node: PhysicalPlan) -> list[PhysicalPlan]:
    return [n for n in node.walk() if n.operator == "Union" and n.delivered.union == UNION_INTERPRETED]


@pytest.fixture(scope="module")
def views(spark: Any) -> Iterator[Any]:
    """Small tables under the names planned for (the plans are the big tables' statistics')."""
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
    for name, prefix in (("a", "a"), ("b", "b"), ("c", "c")):
        spark.createDataFrame([(i % 40, i) for i in range(200)], f"{prefix}_k bigint, {prefix}_v bigint").createOrReplaceTempView(name)
    spark.createDataFrame([(i, i % 7) for i in range(40)], "i_k bigint, i_cat bigint").createOrReplaceTempView("item")
    yield spark
    for name in SCHEMAS:
        spark.catalog.dropTempView(name)


def spark_interprets_a_union(frame: Any) -> bool:
    """Whether Spark's executed plan has a union outside every compiled stage."""
    text = frame._jdf.queryExecution().executedPlan().toString()
    final = text.split("== Initial Plan ==")[0]
    return any(line.lstrip(" :+-").startswith("Union") for line in final.splitlines())


@pytest.mark.parametrize("case", list(CASES))
def test_the_model_knows_which_unions_spark_compiles(views: Any, case: str) -> None:
    sql, spark_interprets, copied = CASES[case]
    planned = plan(sql)
    assert bool(interpreted(planned.physical)) == spark_interprets
    frame = execute(planned.query, views, planned.hints)
    actual = [tuple(r) for r in frame.collect()]
    assert spark_interprets_a_union(frame) == spark_interprets
    expected = [tuple(r) for r in views.sql(sql).collect()]
    assert len(expected) > 0
    assert compare_results(expected, actual, False, ()).equal
    # the copy is priced where a compiled operator reads the interpreted union's rows, and only there
    free = plan(sql, dataclasses.replace(CostConstants(), row_copy=0.0))
    assert free.query == planned.query or not copied
    gained = planned.physical.cumulative.total - free.physical.cumulative.total
    if copied:
        (union,) = interpreted(planned.physical)
        assert gained == pytest.approx(CostConstants().row_copy * union.stats.bytes)
    else:
        assert gained == 0.0



# -- the merge of a big delta into kept aggregates ----------------------------------------------

SALES = {"sales": {"o_id": "string", "category": "string", "price": "bigint"}, "returns": {"o_id": "string", "cost": "bigint"},
         "categories": {"c_name": "string", "c_group": "string"}}
SALES_STATS = {
    "sales": TableStats(rows=1e7, bytes=3e8, source="injected", columns={
        "o_id": ColumnStats(kind="string", ndv=1e7, nulls=0.0, avg_len=8.0, max_len=8.0, unique=True),
        "category": ColumnStats(kind="string", ndv=20, nulls=0.0, avg_len=4.0, max_len=4.0),
        "price": number(1000)}),
    "returns": TableStats(rows=1e5, bytes=2e6, source="injected", columns={
        "o_id": ColumnStats(kind="string", ndv=1e5, nulls=0.0, avg_len=8.0, max_len=8.0, unique=True),
        "cost": number(100)}),
    "categories": TableStats(rows=20, bytes=400, source="injected", columns={
        "c_name": ColumnStats(kind="string", ndv=20, nulls=0.0, avg_len=4.0, max_len=4.0, unique=True),
        "c_group": ColumnStats(kind="string", ndv=5, nulls=0.0, avg_len=4.0, max_len=4.0)}),
}
# the seed's gross per category, by group of categories: the outer join's delta meets a join
GROSS = ("SELECT c_group, SUM(price - COALESCE(cost, 0)) AS gross FROM sales LEFT OUTER JOIN returns "
         "ON sales.o_id = returns.o_id JOIN categories ON category = c_name GROUP BY c_group")


def merge_at_the_deadline(constants: CostConstants) -> list[str]:
    """The lines of the ``ojv`` plan's fragment at the last of two time points, under the union
    that merges the delta into the partial aggregates kept at the first."""
    def fraction(table: str, start: int, end: int) -> float:
        return (1.0 if start == 0 else 0.0) if table == "categories" else (end - start) / 2

    # the categories land at t1 only: the join's delta is the outer join's, joined to them
    arrival = Arrival(fraction, lambda _t: False, ArrivalBounds({}, expected_empty={"categories": [2]}))
    planner = Optimizer(Estimator(SALES_STATS.__getitem__), arrival, constants=constants)
    plans = plan_methods(planner, parse_query(GROSS, SALES), GROSS, TimePoints((1, 2), (2,)), Objective.preset("deadline", 2),
                         METHODS)
    text = plan_text(plans["ojv"], verbose=True).splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("t2 "))
    union = next(i for i in range(start, len(text)) if "Union ALL" in text[i] and "LoadState" in text[i + 1])
    depth = len(text[union]) - len(text[union].lstrip())
    under = []
    for line in text[union + 1:]:
        indent = len(line) - len(line.lstrip())
        if indent <= depth:
            break
        if indent == depth + 2:
            under.append(line.strip())
    return under


def test_the_merge_of_a_big_delta_aggregates_it_first_because_of_the_copy() -> None:
    """The delta of an outer join is a union of its branches, so the union of the kept partial
    aggregates with the delta's rows is interpreted, and the aggregation over it pays for a copy
    of every delta row: priced, the merge aggregates the delta first; unpriced, it does not."""
    priced = merge_at_the_deadline(CostConstants())
    assert priced[0].startswith("LoadState") and priced[1].startswith("HashAggregate final"), priced
    unpriced = merge_at_the_deadline(dataclasses.replace(CostConstants(), row_copy=0.0))
    assert unpriced[0].startswith("LoadState") and not unpriced[1].startswith("HashAggregate"), unpriced
