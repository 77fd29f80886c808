"""Spark fidelity on random queries: a fixed-seed sample of the generator of ``tempura bench
fidelity`` (random schemas with NULLs, duplicates, extremes and empty tables; joins of every kind,
subqueries, grouping sets, windows, set operations, built-in functions), each query's result from
tempura compared with ``spark.sql``'s on names, types and rows. A failure it finds becomes a named
case in ``tests/fidelity/cases.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import fidelity

pytestmark = pytest.mark.spark


def test_the_generator_writes_every_construct_it_claims() -> None:
    import random

    rng = random.Random(7)
    tables = fidelity.random_tables(rng)
    generator = fidelity.QueryGenerator(rng, tables)
    constructs: set[str] = set()
    for _ in range(300):
        constructs |= generator.query().constructs
    for expected in ("join", "left join", "full join", "left anti join", "using", "group by", "rollup", "window",
                     "union all", "except", "cte", "derived table", "exists subquery (correlated)", "distinct",
                     "order by", "limit", "having", "lateral view explode", "lateral view posexplode", "range()",
                     "percentile_cont"):
        assert expected in constructs, expected


@pytest.mark.parametrize("seed", [11, 12])
def test_random_queries_equal_spark(spark: Any, tmp_path: Path, seed: int) -> None:
    outcomes = fidelity.run(100, seed, spark, tmp_path)
    summary = fidelity.summarize(outcomes)
    bad = [f for f in summary["failures"] if f["outcome"] in ("wrong", "crash", "refused")]
    assert not bad, "\n".join(f"{f['outcome']}: {f['sql']}\n    {f['detail']}" for f in bad)
    counts = summary["outcomes"]
    assert counts["equal"] >= 80, counts  # the sample compares answers, not Spark's errors


def test_a_random_standing_query_is_delivered_right_under_every_method(spark: Any, tmp_path: Path) -> None:
    outcomes = fidelity.run_standing(1, 5, spark, tmp_path)
    assert len(outcomes) == len(fidelity.STANDING_METHODS)
    bad = [o for o in outcomes if o.outcome in ("wrong", "crash")]
    assert not bad, "\n".join(f"{o.outcome}: {o.sql}\n    {o.detail}" for o in bad)
    assert any(o.outcome == "equal" for o in outcomes), [(o.outcome, o.detail) for o in outcomes]
