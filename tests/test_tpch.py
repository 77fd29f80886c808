"""TPC-H at scale 0.01: each query bound to algebra, printed back as Spark SQL, run on Spark, and
compared with ``spark.sql`` of the original text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tempura import tpch
from tempura.algebra import Query, validate_plan
from tempura.api import Session
from tempura.rules.logical import normalize
from tempura.runtime import compare_results, execute

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(spark: object, tpch_catalog: Path) -> Session:
    return Session(tpch_catalog, spark=spark)  # type: ignore[arg-type]


def test_declared_schema_matches_generated_files(session: Session) -> None:
    for name in tpch.TABLES:
        frame = session.catalog.table(name).reader(session.spark)
        actual = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        assert actual == tpch.SCHEMA[name], name


@pytest.mark.parametrize("name", tpch.query_names())
def test_query_equals_spark(session: Session, name: str) -> None:
    text = tpch.query_text(name)
    query = session.plan(text)
    generated = session.spark_sql(text)
    assert generated.strip() != text.strip()
    expected = [tuple(r) for r in session.spark.sql(text).collect()]
    actual = [tuple(r) for r in execute(query, session.spark).collect()]
    assert expected, f"{name} returns no rows at scale 0.01, so the comparison would prove little"
    outcome = compare_results(expected, actual, query.ordered, query.order_keys)
    assert outcome.equal, f"{name}: {outcome.reason}\n{generated}"


@pytest.mark.parametrize("name", tpch.query_names())
def test_normalized_query_equals_spark(session: Session, name: str) -> None:
    """With predicates pushed down (and comma joins turned into inner joins), still Spark's result."""
    text = tpch.query_text(name)
    query = session.plan(text)
    plan = normalize(query.plan)
    validate_plan(plan)
    expected = [tuple(r) for r in session.spark.sql(text).collect()]
    actual = [tuple(r) for r in execute(Query(plan, query.names, query.ordered, query.order_keys), session.spark).collect()]
    outcome = compare_results(expected, actual, query.ordered, query.order_keys)
    assert outcome.equal, f"{name}: {outcome.reason}\n{plan}"
